"""Same spans, any arrival order or batching -> same verdicts (DESIGN.md, Determinism)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.checks.expectations import Golden
from faultgate_stream.checks.registry import select
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.verdict import Completion
from faultgate_stream.pipeline import OFFLINE_LIMITS, VerdictList, check_spans
from faultgate_stream.read.files import read_document_all, read_file
from faultgate_stream.testing import agent, tool, trace_id
from faultgate_stream.verdict.evaluate import Evaluator
from faultgate_stream.verdict.ruleset import own_checks
from tests.conftest import CORPUS, ROOT
from tests.genai_runs import merge, tool_loop

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
    # checks of one's own: a plug-in that fires early and at the verdict, and a rules file
    # with span rules (fired early) and run rules
    own = select() + own_checks(["tests.checks.hostile_plugins:StepCount"],
                                str(ROOT / "examples" / "plugins" / "rules.yaml"))
    _, retail = read_file(CORPUS / "faultgate-0.4.1" / "tests/fixtures/retail_gaps.json")
    out.append((retail, own, _summary(check_spans([retail], own))))
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
    spans, checks, expected = CASES[-2]
    assert len(expected) == 2
    fired = {c for *_, results in expected for c, f, _ in results if f}
    assert {"search_loop", "policy", "unrecovered_tool_error"} <= fired


def test_the_own_checks_case_really_fires_plugin_and_rules_early_and_late():
    spans, checks, expected = CASES[-1]
    fired = {c for *_, results in expected for c, f, _ in results if f}
    assert {"step_count", "cancel_without_reason", "unconfirmed_cancel"} <= fired


def _load_with_logs():
    """Runs whose content is in log events (event_only, and the per-message events), with
    the verdicts of the same runs recorded with content on their spans."""
    out = []
    for kw in ({}, {"repeats": 3}, {"answer": "I could not find it."}, {"city": "../../etc/passwd"},
               {"repeats": 12, "answer": "", "result": "[]"}):
        for mode in ("event_only", "legacy"):
            traces, logs = tool_loop(mode, **kw)
            span_only, _ = tool_loop("span_only", **kw)
            out.append((traces, logs, span_only))
    traces = read_document_all(merge([t for t, _, _ in out], "resourceSpans")).spans
    contents = read_document_all(merge([lg for _, lg, _ in out], "resourceLogs")).contents
    reference = read_document_all(merge([s for _, _, s in out], "resourceSpans")).spans
    checks = select()
    return traces, contents, checks, reference


TRACES, CONTENTS, LOG_CHECKS, REFERENCE = _load_with_logs()


def _without_ids(summary):
    # the event-recorded and span-recorded runs are different traces: compare what was said
    return sorted((c, n, results) for _, c, n, results in summary)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rnd=st.randoms(use_true_random=False), max_batch=st.integers(1, 32))
def test_shuffling_and_rebatching_spans_and_log_records_together_never_changes_a_verdict(rnd, max_batch):
    items = [(True, s) for s in TRACES] + [(False, c) for c in CONTENTS]
    rnd.shuffle(items)
    sink = VerdictList()
    assembler = Assembler(Evaluator(LOG_CHECKS, sink), ManualClock(), OFFLINE_LIMITS)
    i = 0
    while i < len(items):
        n = rnd.randint(1, max_batch)
        chunk = items[i:i + n]
        i += n
        # a batch is one signal, as an OTLP request is: spans and logs go in by their own calls
        spans = [x for is_span, x in chunk if is_span]
        contents = [x for is_span, x in chunk if not is_span]
        for call, batch in rnd.sample([(assembler.add, spans), (assembler.add_contents, contents)], 2):
            call(batch)
    assembler.close_all(Completion.COMPLETE)
    assert assembler.stats.contents_joined == len(CONTENTS)
    expected = _without_ids(_summary(check_spans([REFERENCE], LOG_CHECKS)))
    assert _without_ids(_summary(sink.verdicts)) == expected
    assert {v.verdict for v in sink.verdicts} == {"clean", "failed"}
