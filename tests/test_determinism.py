"""Same spans, any arrival order or batching -> same verdicts (DESIGN.md, Determinism)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgate_stream.checks.expectations import Golden
from faultgate_stream.checks.registry import select
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.testing import agent, tool, trace_id
from tests.conftest import CORPUS

FILES = [
    ("examples/traces.json", "examples/golden.json"),
    ("tests/fixtures/retail_gaps.json", None),
    ("examples/gate/candidate_qwen.json", "examples/gate/golden.json"),
    ("examples/formats/openinference.json", None),
]


def _summary(verdicts):
    return sorted((str(v.key), v.completion.value, v.steps, tuple((r.check, r.fired, r.reason) for r in v.results))
                  for v in verdicts)


def _load():
    out = []
    for f, g in FILES:
        _, spans = read_file(CORPUS / "faultgate-0.4.1" / f)
        checks = select(golden=Golden.load(CORPUS / "faultgate-0.4.1" / g) if g else None)
        out.append((spans, checks, _summary(check_spans([spans], checks))))
    # a hand-made trace with two runs, a sub-agent and a chat-only step, so grouping is exercised too
    t = trace_id()
    a = agent(t, name="a", prompt="q", answer="")
    b = agent(t, name="b", prompt="q2", answer="done", start_s=30)
    sub = agent(t, name="sub", parent=a.span_id, start_s=1)
    spans = [a, b, sub] + [tool(t, sub.span_id, "search", {"q": "x"}, "[]", start_s=2 + i) for i in range(13)]
    spans += [tool(t, a.span_id, "lookup", {"id": 1}, "Error: no", start_s=20 + i) for i in range(2)]
    spans.append(tool(t, b.span_id, "read", {"path": "../../etc/passwd"}, "denied", start_s=31))
    checks = select()
    out.append((spans, checks, _summary(check_spans([spans], checks))))
    return out


CASES = _load()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.integers(0, len(CASES) - 1), rnd=st.randoms(use_true_random=False), max_batch=st.integers(1, 64))
def test_shuffling_and_rebatching_spans_never_changes_a_verdict(case, rnd, max_batch):
    spans, checks, expected = CASES[case]
    shuffled = list(spans)
    rnd.shuffle(shuffled)
    batches, i = [], 0
    while i < len(shuffled):
        n = rnd.randint(1, max_batch)
        batches.append(shuffled[i:i + n])
        i += n
    assert _summary(check_spans(batches, checks)) == expected


def test_the_hand_made_trace_really_has_two_runs_and_fires():
    spans, checks, expected = CASES[-1]
    assert len(expected) == 2
    fired = {c for *_, results in expected for c, f, _ in results if f}
    assert {"search_loop", "policy", "unrecovered_tool_error"} <= fired
