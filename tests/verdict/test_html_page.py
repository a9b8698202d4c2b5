"""The HTML page's bounds and escaping, read from its text (tests/cli/test_html_report.py
opens it in chromium)."""
from __future__ import annotations

from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, Completion, RunVerdict
from faultgate_stream.verdict.html.page import MAX_ROWS, render
from faultgate_stream.verdict.redact import builtin
from faultgate_stream.verdict.report import Report
from faultgate_stream.verdict.timeline import TimelineStep


def _report(spans: int, reason: str, agent: str = "shop") -> Report:
    key = RunKey("ab" * 16, "00" * 8)
    steps = tuple(TimelineStep(f"{k:016x}", f"execute_tool t{k}", "tool", f"t{k}", 1, 10**9 + k * 10**6,
                               10**9 + k * 10**6 + 500_000, None, False, (k,)) for k in range(1, spans + 1))
    v = RunVerdict(key=key, scenario="s", agent=agent, agent_version="", completion=Completion.COMPLETE,
                   results=(CheckResult("policy", True, 1.0, reason),), steps=spans, spans=spans)
    return Report(["policy"], [v], timelines={str(key): steps})


def test_a_long_run_draws_its_first_rows_and_every_marked_one_and_counts_the_rest():
    page = render(_report(MAX_ROWS + 100, f"step {MAX_ROWS + 50}: denied"), builtin())
    assert page.count('<tr id="run-0-span-') == MAX_ROWS + 1
    assert f'data-span-id="{MAX_ROWS + 50:016x}" data-fired="policy"' in page
    assert "99 more spans not drawn" in page


def test_text_from_the_run_is_masked_then_escaped():
    page = render(_report(1, "step 1: mailed jane.doe@example.com <script>x</script>",
                          agent='"><img src=x onerror=alert(1)>'), builtin())
    assert "jane.doe" not in page and "mailed &lt;EMAIL&gt; &lt;script&gt;x&lt;/script&gt;" in page
    assert "<img" not in page and "&quot;&gt;&lt;img src=x" in page
