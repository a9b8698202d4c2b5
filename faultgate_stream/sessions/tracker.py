"""Open sessions, the runs they hold, and the session verdict when one ends.

No thread and no clock of its own: ``add(verdict, now_ns)`` files a run verdict, and
``advance(now_ns)`` decides the sessions idle for ``idle_timeout`` by then. Live the stage
passes the service clock; offline ``check`` passes each run's span times (its start
before filing it, its end as its activity) and ends with ``close_all``, so a file and a
live stream of the same runs group them the same way when the spans' times are the
times they were sent at (tests/sessions).

Who a run belongs to: the open session of its id. A run whose session ended (explicit
end, or idle) starts a new session of the same id. A run with no session id belongs to
none (counted). An amended verdict replaces its run in its session while the session is
open; once decided, a session's verdict stands.

Bounded: ``max_sessions`` open sessions (the one idle longest is decided early, end
``evicted``), ``max_runs_per_session`` runs each (the session is decided, end
``max-runs``, and its next run starts a new one), and the per-agent budgets' store
(``max_agents`` agents, ``max_events_per_agent`` session totals each); each bound counted.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from faultgate_stream.model.session import SessionEnd, SessionVerdict
from faultgate_stream.model.verdict import CheckResult, RunVerdict
from faultgate_stream.sessions import checks
from faultgate_stream.sessions.checks import SessionRun
from faultgate_stream.sessions.config import SessionsConfig

NS = 1_000_000_000


@dataclass
class _Open:
    session_id: str
    agent: str
    last_seen_ns: int
    runs: dict[object, SessionRun] = field(default_factory=dict)


@dataclass
class Counts:
    """What the bounds did and what could not be grouped, for the stage's counters."""

    runs_without_session: int = 0
    evicted_sessions: int = 0        # max_sessions
    max_runs_sessions: int = 0       # max_runs_per_session
    evicted_agents: int = 0          # max_agents (per-agent budgets)
    evicted_agent_events: int = 0    # max_events_per_agent
    late_amendments: int = 0         # amended verdicts of runs whose session was decided


class AgentTotals:
    """Each agent's session totals at their end time, for the per-agent budgets: the
    sessions of one agent closed within ``window_ns`` before now, summed."""

    def __init__(self, window_ns: int, max_agents: int, max_events: int, counts: Counts) -> None:
        self.window_ns = window_ns
        self.max_agents = max_agents
        self.max_events = max_events
        self._counts = counts
        self._by_agent: OrderedDict[str, deque[tuple[int, float, float]]] = OrderedDict()

    def add(self, agent: str, at_ns: int, tokens: float | None, cost: float | None) -> tuple[float, float]:
        """Record a session's totals; the agent's totals within the window, this one included."""
        events = self._by_agent.pop(agent, None)
        if events is None:
            if len(self._by_agent) >= self.max_agents:
                self._by_agent.popitem(last=False)
                self._counts.evicted_agents += 1
            events = deque()
        self._by_agent[agent] = events
        while events and events[0][0] < at_ns - self.window_ns:
            events.popleft()
        if len(events) >= self.max_events:
            events.popleft()
            self._counts.evicted_agent_events += 1
        events.append((at_ns, tokens or 0.0, cost or 0.0))
        return (sum(e[1] for e in events if e[0] <= at_ns), sum(e[2] for e in events if e[0] <= at_ns))

    def __len__(self) -> int:
        return len(self._by_agent)


class Tracker:
    def __init__(self, config: SessionsConfig, emit: Callable[[SessionVerdict], None]) -> None:
        self.config = config
        self._emit = emit
        self._idle_ns = int(config.idle_timeout * NS)
        self._open: OrderedDict[str, _Open] = OrderedDict()   # least recently active first
        self.counts = Counts()
        self.agents = AgentTotals(int(config.budget_window * NS), config.max_agents, config.max_events_per_agent,
                                  self.counts)

    @property
    def open_sessions(self) -> int:
        return len(self._open)

    @property
    def held_runs(self) -> int:
        return sum(len(s.runs) for s in self._open.values())

    def add(self, v: RunVerdict, now_ns: int) -> None:
        p = v.profile
        if p is None or v.setup_only:
            return
        if not p.session:
            if not v.revision:
                self.counts.runs_without_session += 1
            return
        run = SessionRun(v.key, v.first_start_ns, v.last_end_ns, v.measures.get("tokens"),
                         v.measures.get("cost_usd"), p.task, p.answered, p.attrs)
        s = self._open.get(p.session)
        if v.revision:
            if s is not None and v.key in s.runs:
                s.runs[v.key] = run
            else:
                self.counts.late_amendments += 1
            return
        if s is None:
            if len(self._open) >= self.config.max_sessions:
                _, oldest = self._open.popitem(last=False)
                self.counts.evicted_sessions += 1
                self._decide(oldest, SessionEnd.EVICTED, now_ns)
            s = self._open[p.session] = _Open(p.session, v.agent, now_ns)
        s.runs[v.key] = run
        s.last_seen_ns = max(s.last_seen_ns, now_ns)
        self._open.move_to_end(p.session)
        if p.session_end:
            del self._open[p.session]
            self._decide(s, SessionEnd.ENDED, now_ns)
        elif len(s.runs) >= self.config.max_runs_per_session:
            del self._open[p.session]
            self.counts.max_runs_sessions += 1
            self._decide(s, SessionEnd.MAX_RUNS, now_ns)

    def advance(self, now_ns: int) -> int:
        """Decide every session with no run for ``idle_timeout`` by ``now_ns``; how many."""
        n = 0
        while self._open:
            sid, s = next(iter(self._open.items()))
            if now_ns - s.last_seen_ns < self._idle_ns:
                break
            del self._open[sid]
            self._decide(s, SessionEnd.IDLE, now_ns)
            n += 1
        return n

    def close_all(self, end: SessionEnd, now_ns: int) -> int:
        n = len(self._open)
        while self._open:
            _, s = self._open.popitem(last=False)
            self._decide(s, end, now_ns)
        return n

    def _decide(self, s: _Open, end: SessionEnd, now_ns: int) -> None:
        runs = sorted(s.runs.values(), key=lambda r: (r.first_start_ns, r.key))
        tokens, tokens_unrecorded = checks.total(runs, "tokens")
        cost, cost_unrecorded = checks.total(runs, "cost_usd")
        c = self.config
        what = f"session {s.session_id!r}"
        results: list[CheckResult] = []
        if c.max_tokens_per_session is not None:
            results.append(checks.budget(checks.TOKEN_BUDGET, runs, "tokens", c.max_tokens_per_session, what))
        if c.max_cost_usd_per_session is not None:
            results.append(checks.budget(checks.COST_BUDGET, runs, "cost_usd", c.max_cost_usd_per_session, what))
        if c.max_tokens_per_agent is not None or c.max_cost_usd_per_agent is not None:
            # the session counts at its last run's end (its activity time offline and live alike)
            at = max((r.last_end_ns for r in runs), default=0) or now_ns
            agent_tokens, agent_cost = self.agents.add(s.agent, at, tokens, cost)
            if c.max_tokens_per_agent is not None:
                results.append(checks.agent_budget(checks.AGENT_TOKEN_BUDGET, s.agent, agent_tokens,
                                                   c.max_tokens_per_agent, c.budget_window, "tokens",
                                                   tokens_unrecorded))
            if c.max_cost_usd_per_agent is not None:
                results.append(checks.agent_budget(checks.AGENT_COST_BUDGET, s.agent, agent_cost,
                                                   c.max_cost_usd_per_agent, c.budget_window, "cost_usd",
                                                   cost_unrecorded))
        if c.repeated_task:
            results.append(checks.repeated_task(runs))
        if c.monotonic:
            results.append(checks.monotonic(runs, c.monotonic))
        self._emit(SessionVerdict(
            s.session_id, s.agent, end, tuple(r.key for r in runs), tuple(results),
            min((r.first_start_ns for r in runs), default=0), max((r.last_end_ns for r in runs), default=0),
            tokens, cost, now_ns))
