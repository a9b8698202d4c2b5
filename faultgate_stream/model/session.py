"""A session's record of truth: the runs one ``session.id`` (else
``gen_ai.conversation.id``) grouped, and what the session checks said when it ended.

Built by ``sessions/`` and rendered by every sink that renders run verdicts (metrics, the
verdict log, the verdict stream); reasons are raw here and masked on the way out, as a
run verdict's are.
"""
from __future__ import annotations

import enum
from typing import NamedTuple, Protocol

from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, verdict_of


class SessionEnd(enum.Enum):
    """Why the session was decided."""

    ENDED = "ended"          # a run carried the end attribute (sessions.end_attribute)
    IDLE = "idle"            # no run for sessions.idle_timeout
    MAX_RUNS = "max-runs"    # sessions.max_runs_per_session reached: the rest starts a new one
    EVICTED = "evicted"      # closed early to make room (sessions.max_sessions)
    SHUTDOWN = "shutdown"    # the service stopped with the session open
    COMPLETE = "complete"    # offline: end of input


class SessionVerdict(NamedTuple):
    session_id: str
    agent: str               # the agent of its first run
    end: SessionEnd
    runs: tuple[RunKey, ...]  # in start order
    results: tuple[CheckResult, ...]
    first_start_ns: int = 0
    last_end_ns: int = 0
    tokens: float | None = None   # the runs' tokens, where recorded; None when none was
    cost_usd: float | None = None
    decided_ns: int = 0

    @property
    def fired(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.fired)

    @property
    def verdict(self) -> str:
        return verdict_of(any(r.fired for r in self.results), any(r.undecided for r in self.results))


class SessionConsumer(Protocol):
    """What the sessions stage feeds: each session's verdict when the session ends."""

    def session(self, verdict: SessionVerdict) -> None: ...
