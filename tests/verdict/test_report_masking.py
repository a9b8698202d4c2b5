"""The report masks each distinct text once, and writes what masking every row would."""
from __future__ import annotations

from faultgate_stream.checks.registry import select
from faultgate_stream.pipeline import check_spans
from faultgate_stream.testing import simple_run
from faultgate_stream.verdict.redact import builtin, safe_key
from faultgate_stream.verdict.report import Report


def test_each_text_is_masked_once_and_every_row_reads_as_masked_alone():
    spans = [*simple_run([("search", {"q": "a@example.com"}, "[]")], answer="mail a@example.com"),
             *simple_run([("search", {"q": "b"}, "[]")], answer="mail a@example.com")]
    verdicts = check_spans([spans], select())
    asked: list[str] = []

    def counting(text: str) -> str:
        asked.append(text)
        return builtin()(text)

    out = Report([c.name for c in select()], verdicts).to_dict(counting)
    assert len(asked) == len(set(asked))
    rows = [(v, r) for v in verdicts for r in v.results]
    assert [(row["reason"], row["scenario"]) for row in out["results"]] == [
        (builtin()(r.reason), safe_key(v.scenario, builtin())) for v, r in rows]
