"""Amended verdicts: a late span that changes a check's result sends the run's verdict
again, with a revision; one that changes nothing does not; the store of decided runs is
bounded and says what it evicted."""
from __future__ import annotations

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.checks.registry import select
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.verdict import CheckResult
from faultgate_stream.pipeline import VerdictList, check_spans
from faultgate_stream.testing import agent, tool, trace_id
from faultgate_stream.verdict.amend import DecidedRuns
from faultgate_stream.verdict.config import AmendConfig
from faultgate_stream.verdict.evaluate import Evaluator

DENIED = {"path": "../../etc/passwd"}


class _Live:
    def __init__(self, **amend: object) -> None:
        self.clock = ManualClock(10**18)
        self.telemetry = Telemetry()
        self.sink = VerdictList()
        self.store = DecidedRuns(AmendConfig(**amend), self.clock, self.telemetry)  # type: ignore[arg-type]
        self.evaluator = Evaluator(select(), self.sink, telemetry=self.telemetry, decided=self.store)
        self.asm = Assembler(self.evaluator, self.clock, AssembleConfig(root_grace=0.5))

    def decide(self, spans) -> None:
        self.asm.add(spans)
        self.clock.advance(1)
        self.asm.advance()

    def sample(self, name: str, **labels: str) -> float:
        return self.telemetry.registry.get_sample_value(name, labels) or 0.0


def _run():
    t = trace_id()
    root = agent(t, prompt="read the config", answer="done")
    return t, root, [root, tool(t, root.span_id, "read_file", {"path": "conf.yaml"}, "ok", start_s=1)]


def test_a_late_span_that_makes_a_check_fire_amends_the_verdict_once():
    live = _Live()
    t, root, spans = _run()
    live.decide(spans)
    (first,) = live.sink.verdicts
    assert first.verdict == "clean" and first.revision == 0
    late = tool(t, root.span_id, "read_file", DENIED, "root:x:0:0", start_s=2)
    live.asm.add([late])
    first_, amended = live.sink.verdicts
    assert amended.key == first.key and amended.revision == 1 and amended.previous == "clean"
    assert amended.verdict == "failed" and amended.amended_checks == ("policy",) and amended.amended_by == late.span_id
    assert amended.spans == 3 and amended.steps == 2 and amended.released_span_ids == frozenset()
    # the same span again (an OTLP retry) is a duplicate: nothing is amended twice
    live.asm.add([late])
    assert len(live.sink.verdicts) == 2
    assert live.sample("faultgate_late_spans_unamendable_total") == 0


def test_a_late_span_that_changes_nothing_amends_nothing():
    live = _Live()
    t, root, spans = _run()
    live.decide(spans)
    live.asm.add([tool(t, root.span_id, "read_file", {"path": "other.yaml"}, "ok", start_s=3)])
    assert [v.revision for v in live.sink.verdicts] == [0]
    assert live.asm.stats.late == 1


def test_revisions_count_up_and_name_the_verdict_each_replaces():
    live = _Live()
    t, root, spans = _run()
    live.decide(spans)
    live.asm.add([tool(t, root.span_id, "read_file", DENIED, "x", start_s=2)])
    # a second late span makes another check fire: revision 2, replacing a failed verdict
    live.asm.add([tool(t, root.span_id, "lookup", {"q": 1}, "Error: backend down", start_s=4, status=2)])
    assert [(v.revision, v.previous, v.amended_checks) for v in live.sink.verdicts] == [
        (0, "", ()), (1, "clean", ("policy",)), (2, "failed", ("unrecovered_tool_error",))]


def test_an_amended_verdict_is_the_verdict_the_whole_run_gets_offline():
    live = _Live()
    t, root, spans = _run()
    late = [tool(t, root.span_id, "read_file", DENIED, "x", start_s=2),
            tool(t, root.span_id, "lookup", {"q": 1}, "Error: backend down", start_s=4, status=2)]
    live.decide(spans)
    for s in late:
        live.asm.add([s])
    (whole,) = check_spans([spans + late], select())
    assert live.sink.verdicts[-1].results == whole.results


def test_a_late_span_whose_run_was_evicted_is_counted_unamendable_not_dropped():
    live = _Live(max_runs=1)
    t, root, spans = _run()
    live.decide(spans)
    live.decide(_run()[2])  # a second run takes the only place
    assert live.sample("faultgate_amend_store_evictions_total", reason="max_runs") == 1
    live.asm.add([tool(t, root.span_id, "read_file", DENIED, "x", start_s=2)])
    assert [v.revision for v in live.sink.verdicts] == [0, 0]
    assert live.sample("faultgate_late_spans_unamendable_total") == 1
    assert live.asm.stats.late == 1


def test_runs_leave_the_store_by_age_by_bytes_and_by_their_span_count_each_counted():
    live = _Live(max_age=5.0)
    live.decide(_run()[2])
    live.clock.advance(10)
    live.decide(_run()[2])
    assert live.sample("faultgate_amend_store_evictions_total", reason="max_age") == 1
    assert len(live.store) == 1

    live = _Live(max_bytes=1)  # no run fits
    live.decide(_run()[2])
    assert live.sample("faultgate_amend_store_evictions_total", reason="max_bytes") == 1
    assert len(live.store) == 0 and live.store.bytes == 0

    live = _Live(max_run_spans=2)
    t, root, spans = _run()
    live.decide(spans)
    assert len(live.store) == 1
    live.asm.add([tool(t, root.span_id, "read_file", DENIED, "x", start_s=2)])  # a third span: too many to keep
    assert live.sample("faultgate_amend_store_evictions_total", reason="max_run_spans") == 1
    assert live.sample("faultgate_late_spans_unamendable_total") == 1
    assert [v.revision for v in live.sink.verdicts] == [0]


def test_a_judge_result_amends_a_kept_run_and_a_repeated_answer_does_not():
    live = _Live()
    t, root, spans = _run()
    live.decide(spans)
    (first,) = live.sink.verdicts
    judged = (CheckResult("wrong_direction", True, 0.8, "openai:m: backwards", kind="judge"),)
    assert live.evaluator.amend_judged(first.key, judged, "judge:openai:m") is True
    amended = live.sink.verdicts[-1]
    assert (amended.revision, amended.previous, amended.verdict) == (1, "clean", "failed")
    assert amended.results[-1] == judged[0] and len(amended.rule_digests) == len(amended.results)
    assert live.evaluator.amend_judged(first.key, judged, "judge:openai:m") is False
    # a later late span re-evaluates the rules and keeps the judge's answer
    live.asm.add([tool(t, root.span_id, "read_file", DENIED, "x", start_s=2)])
    last = live.sink.verdicts[-1]
    assert last.revision == 2 and last.amended_checks == ("policy",) and judged[0] in last.results
    gone = first.key._replace(root_span_id="0" * 16)
    assert live.evaluator.amend_judged(gone, judged, "judge:openai:m") is None


# -- property: whatever arrives late, the last revision is the verdict of the whole run ----

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from faultgate_stream.read.files import read_file  # noqa: E402
from tests.conftest import CORPUS  # noqa: E402

_FILES = ("examples/traces.json", "tests/fixtures/retail_gaps.json")
_SPANS = [s for f in _FILES for s in read_file(CORPUS / "faultgate-0.4.1" / f)[1]]
_WHOLE = {v.key: v.results for v in check_spans([_SPANS], select())}


def _leaves(spans):
    parents = {s.parent_id for s in spans}
    return [s for s in spans if s.parent_id and s.span_id not in parents and not s.is_agent]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_whatever_arrives_late_the_last_revision_is_the_verdict_of_the_whole_run(rnd):
    """Leaves of the corpus' runs held back at random and sent after the verdict, re-batched
    at random: each run's revisions count up from 0, and its last one says what the whole
    run decided at once (offline) says."""
    leaves = _leaves(_SPANS)
    late = [s for s in leaves if rnd.random() < 0.3]
    held = {s.span_id for s in late}
    rnd.shuffle(late)
    live = _Live()
    live.decide([s for s in _SPANS if s.span_id not in held])
    while late:
        n = rnd.randint(1, 4)
        live.asm.add(late[:n])
        late = late[n:]
    last = {}
    for v in live.sink.verdicts:
        assert v.revision == last[v.key].revision + 1 if v.key in last else v.revision == 0
        last[v.key] = v
    # outcomes, not wording: a late span that only moves a reason (one step more) amends nothing
    assert {k: _outcomes(v.results) for k, v in last.items()} == {k: _outcomes(r) for k, r in _WHOLE.items()}


def _outcomes(results):
    return [(r.check, r.agent, r.fired, r.undecided, r.severity) for r in results]


def test_a_run_evaluated_again_for_a_late_span_counts_once_in_its_session_budget():
    """Windowed budgets keep other runs' counts: re-evaluating a run replaces its own
    events in the window store instead of adding them a second time."""
    from faultgate_stream.checks.policy import Policy, PolicyCheck
    from faultgate_stream.checks.window_store import WindowStore

    budget = Policy.from_mapping({"max_calls": {"max": 3, "within": "10m", "per": "session"}})
    live = _Live()
    live.evaluator = Evaluator([PolicyCheck(budget, store=WindowStore(max_keys=100, max_events_per_key=100))],
                               live.sink, telemetry=live.telemetry, decided=live.store)
    live.asm = Assembler(live.evaluator, live.clock, AssembleConfig(root_grace=0.5))
    t = trace_id()
    root = agent(t, prompt="help", answer="done", session__id="S-1")
    live.decide([root, tool(t, root.span_id, "lookup", {"q": 1}, "{}", start_s=1)])
    # two harmless stragglers: 2 and then 3 calls in the session, never 4 or 6
    live.asm.add([tool(t, root.span_id, "lookup", {"q": 2}, "{}", start_s=2)])
    live.asm.add([tool(t, root.span_id, "lookup", {"q": 3}, "{}", start_s=3)])
    assert [v.revision for v in live.sink.verdicts] == [0]
    # a fourth call is over the budget: the run is amended once
    live.asm.add([tool(t, root.span_id, "lookup", {"q": 4}, "{}", start_s=4)])
    assert [(v.revision, v.verdict) for v in live.sink.verdicts] == [(0, "clean"), (1, "failed")]
    assert "4 tool calls > max 3" in live.sink.verdicts[-1].results[0].reason


def test_kept_spans_leave_the_collectors_reach_and_come_back_equal():
    """A kept run's records are the ones it was decided from, out of the collector's lists
    even when built in Python (as here, and as content merged from log events is); the run
    they make again equals the one decided, root included, by identity among its spans."""
    import gc

    from faultgate_stream.model.records import ToolCall

    live = _Live()
    t, root, spans = _run()
    model = tool(t, root.span_id, "x", start_s=3)._replace(
        tool=None, operation="chat", calls=(ToolCall("c1", "read_file", "{}"), ToolCall("c2", "ls", "[]")),
        attrs={"gen_ai.response.finish_reasons": ["tool_calls"], "n": 3, "ok": True})
    live.decide([*spans, model])
    entry = live.store.get(RunKey(t, root.span_id))
    assert entry is not None
    assert len(entry.spans) == 3 and not gc.is_tracked(entry.spans) and not any(map(gc.is_tracked, entry.spans))
    assert not any(gc.is_tracked(s.attrs) for s in entry.spans)
    # the verdict it keeps too (``untrack_acyclic``): the collector walks one object a run, the entry
    assert not gc.is_tracked(entry.verdict) and not any(map(gc.is_tracked, entry.verdict.results))
    assert any(s is entry.root for s in entry.spans)  # among the spans, not a copy beside them
    again = entry.run()
    assert sorted(again.spans, key=lambda s: s.span_id) == sorted([*spans, model], key=lambda s: s.span_id)
    assert any(s is again.root for s in again.spans) and again.root == root


def test_a_late_span_amends_a_plugins_and_a_rules_result_through_the_plugins_thread(tmp_path):
    """Checks of one's own are judged again on the grown run, the plug-in on its thread."""
    from faultgate_stream.verdict.ruleset import own_checks

    rules = tmp_path / "rules.yaml"
    rules.write_text('- {name: reads_passwd, tools: [read_file], when: \'span.args.path.endsWith("passwd")\'}\n')
    clock = ManualClock(10**18)
    sink = VerdictList()
    store = DecidedRuns(AmendConfig(), clock, Telemetry())
    checks = own_checks(["tests.checks.hostile_plugins:StepCount"], str(rules))
    evaluator = Evaluator(checks, sink, decided=store)
    asm = Assembler(evaluator, clock, AssembleConfig(root_grace=0.5))
    t, root, spans = _run()
    asm.add(spans + [tool(t, root.span_id, "read_file", {"path": f"f{i}"}, "ok", start_s=2 + i) for i in range(2)])
    clock.advance(1)
    asm.advance()
    evaluator.isolation.drain(10)
    (first,) = sink.verdicts
    assert [r.fired for r in first.results] == [False, False]  # three steps, no passwd
    asm.add([tool(t, root.span_id, "read_file", DENIED, "root:x", start_s=9)])
    evaluator.isolation.drain(10)
    _, amended = sink.verdicts
    assert amended.revision == 1 and set(amended.amended_checks) == {"step_count", "reads_passwd"}
    assert [r.fired for r in amended.results] == [True, True]
    evaluator.close()
