"""Defect 12 of issue 9: work per span grew with the depth of the tree (a 9,999-span
parent chain stalled every client for 10-12 s). These count steps, never time."""
from __future__ import annotations

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.checks.policy.check import PolicyCheck
from faultgate_stream.checks.policy.schema import Policy
from faultgate_stream.model.run import Run
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import Completion
from faultgate_stream.testing import agent, span, tool, trace_id
from faultgate_stream.verdict import agents as agents_module
from faultgate_stream.verdict.evaluate import Evaluator
from faultgate_stream.verdict.ruleset import Binding, Ruleset
from faultgate_stream.checks.search_loop import SearchLoop
from faultgate_stream.pipeline import OFFLINE_LIMITS, RunList, VerdictList
from faultgate_stream.model.clock import ManualClock

N = 9_999


def _chain(n: int, agent_every: int = 0):
    t = trace_id()
    root = agent(t, name="top")
    out, parent = [root], root.span_id
    for i in range(n - 1):
        s = (agent(t, name=f"sub{i}", parent=parent, start_s=i * 1e-6) if agent_every and i % agent_every == 0
             else span(t, "step", parent=parent, start_s=i * 1e-6))
        out.append(s)
        parent = s.span_id
    return out


def test_partitioning_a_9999_span_chain_takes_a_few_steps_per_span():
    spans = _chain(N)
    sink = RunList()
    asm = Assembler(sink, ManualClock(), OFFLINE_LIMITS)
    asm.add(spans)
    asm.close_all()
    assert [len(r.spans) for r in sink.runs] == [N]
    assert asm._table.partition_steps <= 3 * N  # noqa: SLF001 (a walk from every span took N * N / 2)


def test_the_nearest_agent_of_each_arriving_span_of_a_chain_is_found_in_a_few_steps():
    spans = _chain(N)
    check = PolicyCheck(Policy.from_mapping({"identity": {"arg": "user"}}))
    state = check.start()
    for s in spans:  # root first: each span's chain is the whole trace so far
        check.observe(state, s)
    assert state.agents.hops <= 3 * N


def test_per_agent_attribution_of_a_deep_multi_agent_run_is_linear():
    spans = _chain(N, agent_every=100)
    made = []

    class Recording(agents_module.NearestAgent):
        def __init__(self):
            super().__init__()
            made.append(self)

    orig = agents_module.NearestAgent
    agents_module.NearestAgent = Recording
    try:
        views = agents_module.agent_views(Run(RunKey(spans[0].trace_id, spans[0].span_id), spans, spans[0],
                                              Completion.COMPLETE))
    finally:
        agents_module.NearestAgent = orig
    assert sum(len(v.spans) for _, v in views) == N and len(views) == 101
    assert made and made[0].hops <= 3 * N


def test_evaluating_bound_checks_walks_each_span_of_a_chain_once():
    spans = _chain(N)
    sink = VerdictList()
    ruleset = Ruleset((), (Binding(("top",), (SearchLoop(),), "test"),))
    ev = Evaluator(ruleset, sink)
    for s in spans:
        ev.span_arrived(s)
    assert ev._traces[spans[0].trace_id].agents.hops <= 3 * N


def _prerequisite_run(n: int, x_result: str = '{"ok": true}'):
    from faultgate_stream.testing import simple_run
    calls = []
    for i in range(n):
        calls.append(("x", {"id": i % 7}, x_result) if i % 2 == 0 else ("u", {"id": i % 7}, "done"))
    return simple_run(calls)


def test_prerequisite_rules_judge_each_call_of_a_long_run_without_rescanning_the_earlier_ones(monkeypatch):
    from faultgate_stream.checks.policy import requires
    from faultgate_stream.pipeline import assemble_runs
    judged = []
    real = requires.unmet
    monkeypatch.setattr(requires, "unmet", lambda e, req: judged.append(1) or real(e, req))
    policy = Policy.from_mapping({"requires": [
        {"tool": "u", "after": ["x"], "success": True, "invalidated_by": ["u"]},
        {"tool": "u", "after": ["x"], "same_arg": "id", "success": True},
        {"tool": "u", "after": ["x"], "result_contains": "ok"}]})
    n = 4000
    run = assemble_runs(_prerequisite_run(n))[0]
    result = PolicyCheck(policy).finish(None, run)
    assert result.reason.count("step ") == 3  # only the first calls for ids 1, 3 and 5 come before an x
    # every earlier x failed: each u once judged them all again, n * n / 4 in all
    failing = assemble_runs(_prerequisite_run(n, x_result="Error: not found"))[0]
    judged.clear()
    result = PolicyCheck(policy).finish(None, failing)
    assert result.fired and result.reason.count("before a successful x") == n  # two rules, n / 2 calls each
    assert len(judged) <= 3 * n


def test_early_prerequisite_findings_stop_at_a_bound_so_a_long_run_costs_linear_work(monkeypatch):
    from faultgate_stream.checks.policy import check as check_module
    built = []
    real = check_module.PolicyCheck._so_far
    monkeypatch.setattr(check_module.PolicyCheck, "_so_far",
                        lambda self, state, a, call, root: built.append(len(state.history)) or real(self, state, a,
                                                                                                   call, root))
    policy = Policy.from_mapping({"requires": [{"tool": "u", "after": ["x"]}]})
    check = PolicyCheck(policy)
    state = check.start()
    for s in _prerequisite_run(4000):
        check.observe(state, s)
    assert sum(built) <= check_module.EARLY_HISTORY_LIMIT * 4000
    assert max(built) <= check_module.EARLY_HISTORY_LIMIT
