"""The sessions stage's settings (``sessions``). Off unless ``enabled``."""
from __future__ import annotations

from dataclasses import dataclass, field

from faultgate_stream.model.settings import DURATION

# Hosted evaluators call a session over after 15-30 minutes without a message; an agent
# that says when its session ends (``end_attribute``) is decided at once instead.
DEFAULT_IDLE_TIMEOUT_S = 15 * 60.0
DEFAULT_END_ATTRIBUTE = "faultgate.session.end"
# Open sessions held; past it the one idle longest is decided early (end ``evicted``,
# counted). A session holds its runs' keys and a few numbers each: ~1 KB for ten runs.
DEFAULT_MAX_SESSIONS = 10_000
# Runs one session holds; the next run starts a new session of the same id (end
# ``max-runs``, counted): a runaway loop of runs must not grow one session without end.
DEFAULT_MAX_RUNS_PER_SESSION = 500
# The per-agent budgets' window and its bounds: agents counted, and session totals kept
# per agent (the oldest go, counted, and the agent's total undercounts from then on).
DEFAULT_BUDGET_WINDOW_S = 3600.0
DEFAULT_MAX_AGENTS = 100
DEFAULT_MAX_EVENTS_PER_AGENT = 10_000


@dataclass(frozen=True, kw_only=True)
class SessionsConfig:
    enabled: bool = False
    idle_timeout: float = field(default=DEFAULT_IDLE_TIMEOUT_S, metadata=DURATION)
    end_attribute: str = DEFAULT_END_ATTRIBUTE  # true on a run's root (or any span) ends its session
    max_sessions: int = DEFAULT_MAX_SESSIONS
    max_runs_per_session: int = DEFAULT_MAX_RUNS_PER_SESSION
    # budgets; unset: not checked
    max_tokens_per_session: float | None = None
    max_cost_usd_per_session: float | None = None
    max_tokens_per_agent: float | None = None    # every session of one agent within budget_window
    max_cost_usd_per_agent: float | None = None
    budget_window: float = field(default=DEFAULT_BUDGET_WINDOW_S, metadata=DURATION)
    max_agents: int = DEFAULT_MAX_AGENTS
    max_events_per_agent: int = DEFAULT_MAX_EVENTS_PER_AGENT
    # the same request asked again after a run that answered it (the answer failed the user)
    repeated_task: bool = True
    # numeric session attributes that must never go down from one run to the next
    monotonic: tuple[str, ...] = ()

    def validate(self) -> list[str]:
        problems = []
        if not self.idle_timeout > 0:
            problems.append("idle_timeout: must be a duration > 0")
        if not self.budget_window > 0:
            problems.append("budget_window: must be a duration > 0")
        for name in ("max_sessions", "max_runs_per_session", "max_agents", "max_events_per_agent"):
            if getattr(self, name) < 1:
                problems.append(f"{name}: must be at least 1, not {getattr(self, name)}")
        for name in ("max_tokens_per_session", "max_cost_usd_per_session", "max_tokens_per_agent",
                     "max_cost_usd_per_agent"):
            v = getattr(self, name)
            if v is not None and not v >= 0:
                problems.append(f"{name}: must be a number >= 0, not {v}")
        if not self.end_attribute:
            problems.append("end_attribute: must name an attribute")
        return problems
