"""Sessions (sessions/tracker.py, sessions/checks.py): runs grouped by session id, decided
when the session ends, explicitly or when idle, with its checks; every bound counted."""
from __future__ import annotations

import dataclasses

from faultgate_stream.model.profile import RunProfile
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.session import SessionEnd
from faultgate_stream.model.verdict import Completion, RunVerdict
from faultgate_stream.sessions.config import SessionsConfig
from faultgate_stream.sessions.offline import decide_sessions
from faultgate_stream.sessions.tracker import Tracker

S = 1_000_000_000
SHAPE = ("lookup", "1", "0", "0", "<1k")


def verdict(n: int, session: str = "S1", *, start_s: float = 0.0, tokens: float | None = 100.0,
            cost: float | None = None, task: str | None = None, answered: bool = True, end: bool = False,
            attrs: tuple[tuple[str, float], ...] = (), agent: str = "support", revision: int = 0) -> RunVerdict:
    return RunVerdict(RunKey(f"{n:032x}", f"{n:016x}"), "scenario", agent, "1.0", Completion.GRACE, (), 1, 2,
                      first_start_ns=int(start_s * S), last_end_ns=int((start_s + 1) * S),
                      measures={"tokens": tokens, "latency_ms": 1000.0, "cost_usd": cost}, revision=revision,
                      profile=RunProfile(SHAPE, session, end, f"task-{n}" if task is None else task, answered,
                                         attrs))


def tracker(**config) -> tuple[Tracker, list]:
    out: list = []
    return Tracker(dataclasses.replace(SessionsConfig(enabled=True), **config), out.append), out


def results(s) -> dict[str, tuple[bool, bool]]:
    return {r.check: (r.fired, r.undecided) for r in s.results}


def test_a_session_is_decided_when_a_run_carries_the_end_attribute():
    t, out = tracker(max_tokens_per_session=250)
    t.add(verdict(1, start_s=0), 1 * S)
    t.add(verdict(2, start_s=10), 11 * S)
    assert out == [] and t.open_sessions == 1
    t.add(verdict(3, start_s=20, end=True), 21 * S)
    (s,) = out
    assert s.end is SessionEnd.ENDED and [k.trace_id[-1] for k in s.runs] == ["1", "2", "3"]
    assert s.tokens == 300 and s.verdict == "failed"
    (fired,) = s.fired
    assert fired.check == "session.token_budget"
    assert fired.reason == "session 'S1' used 300 tokens over 3 run(s) > max 250"
    # a run of the same id after the end starts a new session
    t.add(verdict(4, start_s=30), 31 * S)
    assert t.open_sessions == 1


def test_a_session_without_runs_for_the_idle_timeout_is_decided_idle_and_not_before():
    t, out = tracker(idle_timeout=60.0)
    t.add(verdict(1, start_s=0), 1 * S)
    assert t.advance(60 * S) == 0
    assert t.advance(61 * S) == 1
    assert out[0].end is SessionEnd.IDLE and out[0].verdict == "clean"


def test_an_unrecorded_token_count_leaves_the_budget_undecided_unless_the_known_runs_are_already_over():
    t, out = tracker(max_tokens_per_session=250)
    t.add(verdict(1, tokens=100), S)
    t.add(verdict(2, tokens=None, end=True), S)
    assert results(out[0])["session.token_budget"] == (False, True) and out[0].verdict == "undecided"
    t.add(verdict(3, "S2", tokens=300), S)
    t.add(verdict(4, "S2", tokens=None, end=True), S)
    assert results(out[1])["session.token_budget"] == (True, False)


def test_the_same_task_asked_after_an_answer_fires_but_a_retry_of_an_unanswered_run_does_not():
    t, out = tracker()
    t.add(verdict(1, task="t-refund", answered=False, start_s=0), S)
    t.add(verdict(2, task="t-refund", answered=True, start_s=10), S)
    t.add(verdict(3, task="other", start_s=20, end=True), S)
    assert results(out[0])["session.repeated_task"] == (False, False)
    t.add(verdict(4, "S2", task="t-refund", start_s=0), S)
    t.add(verdict(5, "S2", task="t-refund", start_s=10, end=True), S)
    (fired,) = out[1].fired
    assert fired.reason == f"run 2 ({5:032x}) asked again what run 1 ({4:032x}) had answered"


def test_runs_are_judged_in_start_order_whatever_order_their_verdicts_came_in():
    t, out = tracker(monotonic=("order.stage",))
    t.add(verdict(2, attrs=(("order.stage", 3.0),), start_s=10), S)
    t.add(verdict(1, attrs=(("order.stage", 1.0),), start_s=0), S)
    t.add(verdict(3, attrs=(("order.stage", 2.0),), start_s=20, end=True), S)
    (fired,) = [r for r in out[0].fired if r.check == "session.monotonic"]
    assert fired.reason == f"order.stage went down from 3 (run 2) to 2 (run 3, {3:032x})"


def test_a_monotonic_attribute_no_run_carried_and_requests_not_captured_are_undecided():
    t, out = tracker(monotonic=("order.stage",))
    t.add(verdict(1, task="", end=True), S)
    assert results(out[0])["session.monotonic"] == (False, True)
    assert results(out[0])["session.repeated_task"] == (False, True) and out[0].verdict == "undecided"


def test_the_agent_budget_sums_the_agents_sessions_within_the_window():
    t, out = tracker(max_cost_usd_per_agent=1.0, budget_window=3600.0, repeated_task=False)
    t.add(verdict(1, "A", cost=0.6, start_s=0, end=True), S)
    t.add(verdict(2, "B", cost=0.3, start_s=100, end=True), S)
    t.add(verdict(3, "C", cost=0.3, start_s=200, end=True), S)
    assert [s.verdict for s in out] == ["clean", "clean", "failed"]
    assert out[2].fired[0].reason == "agent 'support' within 3600s used 1.2 USD > max 1"
    # an hour later the first sessions are out of the window
    t.add(verdict(4, "D", cost=0.3, start_s=4000, end=True), S)
    assert out[3].verdict == "clean"


def test_bounds_decide_sessions_early_and_count_it():
    t, out = tracker(max_sessions=2, max_runs_per_session=2, repeated_task=False)
    t.add(verdict(1, "A"), 1 * S)
    t.add(verdict(2, "B"), 2 * S)
    t.add(verdict(3, "C"), 3 * S)  # A, idle longest, goes
    assert [(s.session_id, s.end) for s in out] == [("A", SessionEnd.EVICTED)]
    t.add(verdict(4, "B"), 4 * S)  # B's second run: at max_runs_per_session
    assert out[-1].session_id == "B" and out[-1].end is SessionEnd.MAX_RUNS
    t.add(verdict(5, None or ""), 5 * S)
    assert (t.counts.evicted_sessions, t.counts.max_runs_sessions, t.counts.runs_without_session) == (1, 1, 1)


def test_an_amended_verdict_replaces_its_run_while_the_session_is_open_and_is_counted_after():
    t, out = tracker(max_tokens_per_session=150)
    t.add(verdict(1, tokens=100), S)
    t.add(verdict(1, tokens=200, revision=1), S)
    t.add(verdict(2, tokens=None, end=True), S)
    t.add(verdict(2, tokens=10, revision=1), S)
    assert results(out[0])["session.token_budget"] == (True, False)  # 200 from the amendment
    assert t.counts.late_amendments == 1 and len(out) == 1


def test_offline_groups_a_files_runs_by_their_span_times():
    vs = [verdict(1, start_s=0), verdict(2, start_s=30), verdict(3, start_s=200),  # 200 s later: idle at 60 s
          verdict(4, "S2", start_s=5, end=True)]
    out = decide_sessions(list(reversed(vs)), dataclasses.replace(SessionsConfig(), idle_timeout=60.0))
    assert [(s.session_id, len(s.runs), s.end) for s in out] == [
        ("S2", 1, SessionEnd.ENDED), ("S1", 2, SessionEnd.IDLE), ("S1", 1, SessionEnd.COMPLETE)]
