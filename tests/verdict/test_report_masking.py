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


def test_a_run_s_fields_and_the_rounded_confidences_are_those_of_the_verdict_itself():
    """to_dict works a run's verdict, fired and undecided lists out of one walk over its
    results, and rounds each distinct confidence once: what it writes must be what
    RunVerdict's properties and round() give for every mix of results."""
    from faultgate_stream.model.verdict import CheckResult

    spans = [*simple_run([("search", {"q": "a"}, "[]")], answer="x"),
             *simple_run([("search", {"q": "b"}, "[]")], answer="y"),
             *simple_run([("search", {"q": "c"}, "[]")], answer="z")]
    base = check_spans([spans], select())
    confidences = [1, 1.0, 0.0, -0.0, 0.123456, 0.123456, 2 / 3]
    mixes = [
        (CheckResult("a", False, 1.0, "ok"), CheckResult("b", False, 0.0, "?", undecided=True)),
        (CheckResult("a", True, 0.9, "bad"), CheckResult("b", False, 0.0, "?", undecided=True)),
        tuple(CheckResult(f"c{i}", False, c, "ok") for i, c in enumerate(confidences)),
    ]
    verdicts = [v._replace(results=m) for v, m in zip(base, mixes)]
    checks = sorted({r.check for m in mixes for r in m})
    out = Report(checks, verdicts).to_dict(None)
    assert [(r["verdict"], r["clean"], r["fired"], r["undecided"]) for r in out["runs"]] == [
        (v.verdict, v.clean, [r.check for r in v.fired], [r.check for r in v.undecided]) for v in verdicts]
    written = [row["confidence"] for row in out["results"]]
    expected = [round(r.confidence, 4) for v in verdicts for r in v.results]
    assert [(type(x), repr(x)) for x in written] == [(type(x), repr(x)) for x in expected]
    assert out["undecided_runs"] == 1 and out["failed_traces"] == [verdicts[1].key.trace_id]
    assert out["fired"] == {c: sum(r.fired for v in verdicts for r in v.results if r.check == c) for c in checks}
