"""Windowed budgets (``max_calls`` / ``limits`` with ``within``, ``per``, ``sum``, ``by``):
when they fire across runs, the look-alikes that must not fire, how they fail closed, the
bounded store behind them, and that per-run ``max_calls`` / ``limits`` are unchanged."""
from __future__ import annotations

import json
from typing import Any

import pytest

from faultgate_stream.checks.policy import Policy, PolicyCheck, PolicyError
from faultgate_stream.checks.window_store import Event, StoreKey, WindowStore, bounded_value
from faultgate_stream.cli.main import main
from faultgate_stream.pipeline import check_spans
from faultgate_stream.testing import agent, tool, trace_id

MINUTE = 60.0
SESSION_BUDGET = {"max_calls": {"max": 3, "within": "10m", "per": "session"}}
REFUNDS = {"limits": [{"tool": "refund", "arg": "amount", "sum": True, "max": 1000, "within": "24h",
                       "per": "session", "by": "customer_id"}]}


def run(at: float, calls: list[tuple[str, Any]] | int, *, results: list[str] | None = None,
        name: str = "support", **root: Any) -> list:
    """One run starting ``at`` seconds in, its calls a second apart: ``calls`` is a list of
    (tool, arguments), or a number of ``lookup`` calls."""
    t = trace_id()
    if isinstance(calls, int):
        calls = [("lookup", {"q": i}) for i in range(calls)]
    r = agent(t, name=name, prompt="help", answer="done", start_s=at, end_s=at + len(calls) + 2, **root)
    res = results or ["{}"] * len(calls)
    return [r] + [tool(t, r.span_id, n, a, res[i], start_s=at + 1 + i) for i, (n, a) in enumerate(calls)]


def verdicts(policy: dict[str, Any], *runs: list, store: WindowStore | None = None) -> list:
    """The policy result of each run, the runs checked in one pass like one file."""
    check = PolicyCheck(Policy.from_mapping(policy), store=store)
    out = check_spans([[s] for r in runs for s in r], [check])
    return [v.results[0] for v in out]


# --- across runs of one session ------------------------------------------------------------


def test_a_session_budget_fires_on_the_run_that_takes_the_session_over_it():
    first, second = verdicts(SESSION_BUDGET, run(0, 2, session__id="S-1"), run(2 * MINUTE, 2, session__id="S-1"))
    assert not first.fired and not first.undecided
    assert second.fired
    assert second.reason == ("step 2: 4 tool calls > max 3 within 10m per session 'S-1' "
                             "(step(s) 1, 2 of this run; 2 in earlier runs)")


def test_two_sessions_each_under_budget_do_not_add_up():
    a, b = verdicts(SESSION_BUDGET, run(0, 2, session__id="S-1"), run(MINUTE, 2, session__id="S-2"))
    assert not a.fired and not b.fired


def test_the_same_counts_spread_over_more_than_the_window_do_not_fire():
    a, b = verdicts(SESSION_BUDGET, run(0, 2, session__id="S-1"), run(20 * MINUTE, 2, session__id="S-1"))
    assert not a.fired and not b.fired


def test_the_conversation_id_keys_a_session_when_there_is_no_session_id():
    _, b = verdicts(SESSION_BUDGET, run(0, 2, gen_ai__conversation__id="C-9"),
                    run(MINUTE, 2, gen_ai__conversation__id="C-9"))
    assert b.fired and "per session 'C-9'" in b.reason


def test_a_run_without_a_session_id_is_judged_alone_undecided_unless_it_alone_is_over():
    (under,) = verdicts(SESSION_BUDGET, run(0, 2))
    assert under.undecided and "no session.id or gen_ai.conversation.id" in under.reason
    (over,) = verdicts(SESSION_BUDGET, run(0, 4))
    assert over.fired and over.reason.endswith("(this run alone: it carries no session.id or gen_ai.conversation.id)")


def test_an_agent_budget_counts_every_session_of_that_agent_and_no_other_agent():
    policy = {"max_calls": {"max": 3, "within": "1h", "per": "agent"}}
    a1, b1, a2 = verdicts(policy, run(0, 2, name="support", session__id="x"),
                          run(MINUTE, 2, name="billing", session__id="y"),
                          run(2 * MINUTE, 2, name="support", session__id="z"))
    assert not a1.fired and not b1.fired
    assert a2.fired and "within 1h per agent 'support'" in a2.reason


def test_a_budget_on_named_tools_counts_only_those_tools():
    policy = {"max_calls": {"max": 1, "within": "10m", "per": "session", "tools": ["refund"]}}
    a, b = verdicts(policy, run(0, [("lookup", {}), ("refund", {})], session__id="S"),
                    run(MINUTE, [("lookup", {}), ("lookup", {})], session__id="S"))
    assert not a.fired and not b.fired
    (_, c) = verdicts(policy, run(0, [("refund", {})], session__id="S"), run(MINUTE, [("refund", {})], session__id="S"))
    assert c.fired and c.reason.startswith("step 1: 2 refund calls > max 1 within 10m per session 'S'")


# --- running totals ------------------------------------------------------------------------


def test_a_running_total_per_customer_fires_across_runs_and_names_window_key_and_total():
    _, second = verdicts(REFUNDS, run(0, [("refund", {"customer_id": "C-1", "amount": 600})], session__id="S"),
                         run(MINUTE, [("refund", {"customer_id": "C-1", "amount": "$450.50"})], session__id="S"))
    assert second.fired
    assert second.reason == ("step 1: refund.amount total 1050.5 > max 1000 within 24h per session 'S' for "
                             "customer_id 'C-1' (step(s) 1 of this run; 600 in 1 call(s) of earlier runs)")


def test_refunds_to_two_customers_each_under_the_total_do_not_add_up():
    a, b = verdicts(REFUNDS, run(0, [("refund", {"customer_id": "C-1", "amount": 600})], session__id="S"),
                    run(MINUTE, [("refund", {"customer_id": "C-2", "amount": 600})], session__id="S"))
    assert not a.fired and not b.fired


def test_a_failed_refund_moved_no_money_and_is_not_in_the_total():
    a, b = verdicts(REFUNDS, run(0, [("refund", {"customer_id": "C-1", "amount": 600})], session__id="S",
                                 results=["Error: card declined"]),
                    run(MINUTE, [("refund", {"customer_id": "C-1", "amount": 600})], session__id="S"))
    assert not a.fired and not b.fired


def test_yesterdays_refunds_fall_out_of_a_24h_window():
    a, b = verdicts(REFUNDS, run(0, [("refund", {"customer_id": "C-1", "amount": 900})], session__id="S"),
                    run(25 * 60 * MINUTE, [("refund", {"customer_id": "C-1", "amount": 900})], session__id="S"))
    assert not a.fired and not b.fired


def test_a_running_total_fails_closed_on_an_amount_that_is_not_a_number_or_no_customer():
    (r,) = verdicts(REFUNDS, run(0, [("refund", {"customer_id": "C-1", "amount": "lots"}),
                                     ("refund", {"amount": 5})], session__id="S"))
    assert r.fired
    assert r.reason == ("step 1: refund.amount 'lots' is not a number; "
                        "step 2: refund has no readable customer_id, cannot count it against max 1000 per customer_id")


def test_a_run_budget_with_a_window_counts_a_burst_and_not_the_same_calls_spread_out():
    policy = {"max_calls": {"max": 3, "within": "30s"}}
    (burst,) = verdicts(policy, run(0, 4))
    assert burst.fired and burst.reason == "step 4: 4 tool calls > max 3 within 30s per run (step(s) 1, 2, 3, 4 of this run)"
    t = trace_id()
    root = agent(t, name="a", start_s=0, end_s=200)
    spread = [root] + [tool(t, root.span_id, "lookup", {"q": i}, "{}", start_s=1 + 40 * i) for i in range(4)]
    (calm,) = verdicts(policy, spread)
    assert not calm.fired and not calm.undecided


def test_a_sum_per_run_without_a_window_totals_the_run():
    policy = {"limits": [{"tool": "refund", "arg": "amount", "sum": True, "max": 100}]}
    (r,) = verdicts(policy, run(0, [("refund", {"amount": 60}), ("refund", {"amount": 50})]))
    assert r.fired and r.reason == "step 2: refund.amount total 110 > max 100 per run (step(s) 1, 2 of this run)"


# --- per-run semantics stay faultgate's ---------------------------------------------------


def test_a_plain_max_calls_and_a_plain_limit_still_read_as_faultgates():
    p = Policy.from_mapping({"max_calls": 2, "limits": [{"tool": "refund", "arg": "amount", "max": 500}]})
    assert p.run_max_calls == 2 and p.windows == () and len(p.per_call_limits) == 1
    (r,) = verdicts({"max_calls": 2, "limits": [{"tool": "refund", "arg": "amount", "max": 500}]},
                    run(0, [("refund", {"amount": 900}), ("lookup", {}), ("lookup", {})], session__id="S"))
    assert r.reason == "step 1: refund.amount 900 > max 500; 3 tool calls > max 2"


def test_a_sum_limit_is_not_also_a_per_call_limit():
    (r,) = verdicts({"limits": [{"tool": "refund", "arg": "amount", "sum": True, "max": 500}]},
                    run(0, [("refund", {"amount": 400})]))
    assert not r.fired


@pytest.mark.parametrize("policy, problem", [
    ({"max_calls": {"max": 3, "within": "10 minutes"}}, "policy: max_calls.within must be a duration like 30s, 10m, 24h or 7d"),
    ({"max_calls": {"max": 3, "per": "user"}}, "policy: max_calls.per must be one of run, session, agent"),
    ({"max_calls": {"within": "1m"}}, "policy: max_calls needs 'max'"),
    ({"max_calls": [{"max": 1, "by": "order_id"}]}, "policy: max_calls[0].by needs 'tools' (the tools that carry 'order_id')"),
    ({"max_calls": {"max": 1, "every": "1m"}}, "policy: max_calls has unknown keys ['every']"),
    ({"max_calls": "10"}, "policy: max_calls must be a whole number >= 0"),
    ({"limits": [{"tool": "r", "arg": "a", "max": 5, "within": "1h"}]},
     "policy: limits[0].within needs 'sum': true (a bound on one call's value has no window)"),
    ({"limits": [{"tool": "r", "arg": "a", "sum": True, "min": 1, "max": 5}]},
     "policy: limits[0] with 'sum' needs 'max' and takes no 'min' (a ceiling on a running total)"),
])
def test_a_malformed_windowed_budget_names_its_key_path(policy, problem):
    with pytest.raises(PolicyError) as e:
        Policy.from_mapping(policy)
    assert e.value.problems == [problem]


# --- the store ----------------------------------------------------------------------------


def test_a_run_recorded_again_replaces_its_events_instead_of_adding_them():
    store = WindowStore()
    key = StoreKey("", "b", "S", "")
    store.exchange(key, "run-1", [Event(1, 1.0), Event(2, 1.0)], None)
    store.exchange(key, "run-1", [Event(1, 1.0), Event(2, 1.0)], None)
    assert store.others(key, "run-2") == [Event(1, 1.0), Event(2, 1.0)]
    assert store.events == 2


def test_an_amended_verdict_does_not_count_its_run_twice():
    store = WindowStore()
    policy = Policy.from_mapping(SESSION_BUDGET)
    runs = run(0, 3, session__id="S")
    for _ in range(2):  # the same run judged twice (a late span amends its verdict)
        (v,) = check_spans([runs], [PolicyCheck(policy, store=store)])
        assert not v.results[0].fired
    assert store.events == 3


def test_the_store_drops_the_least_recent_key_past_max_keys_and_counts_it():
    store = WindowStore(max_keys=2)
    for s in ("a", "b", "c"):
        store.exchange(StoreKey("", "b", s, ""), "r", [Event(1, 1.0), Event(2, 1.0)], None)
    assert len(store) == 2 and store.evicted_keys == 1 and store.evicted_events == 2 and store.events == 4
    assert store.others(StoreKey("", "b", "a", ""), "other") == []  # forgotten: undercounts from now


def test_a_key_keeps_at_most_max_events_the_newest_by_span_time():
    store = WindowStore(max_events_per_key=3)
    key = StoreKey("", "b", "S", "")
    store.exchange(key, "r1", [Event(5, 1.0), Event(1, 1.0)], None)
    store.exchange(key, "r2", [Event(3, 1.0), Event(4, 1.0)], None)
    assert [e.t_ns for e in store.others(key, "r3")] == [3, 4, 5]
    assert store.evicted_events == 1


def test_events_older_than_the_window_expire_and_are_counted_apart_from_evictions():
    store = WindowStore()
    key = StoreKey("", "b", "S", "")
    store.exchange(key, "r1", [Event(0, 1.0)], 10)
    store.exchange(key, "r2", [Event(100, 1.0)], 10)
    assert store.others(key, "r3") == [Event(100, 1.0)]
    assert store.expired_events == 1 and store.evicted_events == 0


def test_a_huge_session_id_is_kept_as_a_hash():
    assert bounded_value("s" * 10_000).startswith("sha256:") and len(bounded_value("s" * 10_000)) == 71
    assert bounded_value("S-1") == "S-1"


def test_two_bindings_with_the_same_budget_keep_their_counts_apart():
    store = WindowStore()
    policy = Policy.from_mapping(SESSION_BUDGET)
    for ns in ("bindings[0]", "bindings[1]"):
        (v,) = check_spans([run(0, 3, session__id="S")], [PolicyCheck(policy, store=store, namespace=ns)])
        assert not v.results[0].fired
    assert len(store) == 2


# --- offline: one file, several runs of one session ---------------------------------------


def _otlp(runs: list[list]) -> dict:
    spans = []
    for r in runs:
        for s in r:
            attrs = [{"key": k, "value": {"stringValue": v} if isinstance(v, str) else {"intValue": str(v)}}
                     for k, v in s.attrs.items()]
            if s.tool is not None:
                attrs += [{"key": "gen_ai.tool.call.arguments", "value": {"stringValue": s.tool.arguments}},
                          {"key": "gen_ai.tool.call.result", "value": {"stringValue": s.tool.result}}]
            spans.append({"traceId": s.trace_id, "spanId": s.span_id, "parentSpanId": s.parent_id or "",
                          "name": s.name, "startTimeUnixNano": str(s.start_ns), "endTimeUnixNano": str(s.end_ns),
                          "attributes": attrs})
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def test_check_over_a_file_with_several_runs_of_one_session_fires_on_the_run_over_budget(tmp_path, capsys):
    runs = [run(i * MINUTE, 2, session__id="S-7") for i in range(3)]
    trace = tmp_path / "session.json"
    trace.write_text(json.dumps(_otlp(runs)))
    policy = tmp_path / "policy.yaml"
    policy.write_text("max_calls: {max: 5, within: 10m, per: session}\n")
    report = tmp_path / "report.json"
    assert main(["check", str(trace), "--policy", str(policy), "--check", "policy", "--json", str(report)]) == 1
    results = json.loads(report.read_text())["results"]
    fired = {r["trace_id"]: r for r in results if r["detected"]}
    assert list(fired) == [runs[2][0].trace_id]
    assert "6 tool calls > max 5 within 10m per session 'S-7'" in fired[runs[2][0].trace_id]["reason"]


def test_the_example_policy_loads_with_its_windowed_budgets_and_its_per_call_limit():
    from pathlib import Path

    from faultgate_stream.checks.policy import load_policy

    p = load_policy(Path(__file__).resolve().parents[2] / "examples" / "policies" / "session-budgets.yaml")
    assert len(p.windows) == 4 and [lim.max for lim in p.per_call_limits] == [500]


def test_a_run_reads_back_only_the_events_its_windows_can_hold():
    store = WindowStore()
    key = StoreKey("", "b", "S", "")
    store.exchange(key, "r1", [Event(t, a) for t, a in ((10, 1.0), (20, 2.0), (30, 4.0), (40, 8.0))], None)
    found = store.exchange(key, "r2", [], None, after_ns=10, until_ns=30)
    assert found.times == [20, 30] and found.total(None, 30) == (6.0, 2) and found.total(20, 30) == (4.0, 1)
    assert store.exchange(key, "r2", [], None, until_ns=20).total(None, 40) == (3.0, 2)
