"""Rolling windows: the last N decided runs per (agent, version), and undecided counts.

Bounded: at most ``max_agents`` agents with at most ``max_versions`` versions each. A new
version past the cap joins its agent's ``other`` window (one more, judged by the agent's
band); a run of a new agent past the cap is not gated at all, since one window mixing
agents would compare nothing with anything. Each folded run is counted in ``folded``.
Thread-safe: verdicts arrive on the assembler's threads, scrapes on the HTTP server's.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

from faultgate_stream.gate.runs import CLEAN, FAILED, GateRun

OTHER = "other"
UNKNOWN = "unknown"   # a run that names no version: "" would read as no label at all


class Tally:
    """The last ``size`` decided runs as running counts, so a scrape reads three numbers per
    window instead of walking its runs."""

    def __init__(self, size: int) -> None:
        self.runs: deque[tuple[bool, bool]] = deque(maxlen=size)   # (clean, policy fired)
        self.clean = 0
        self.policy = 0
        self.undecided = 0

    def add(self, run: GateRun) -> None:
        if run.outcome not in (CLEAN, FAILED):
            self.undecided += 1
            return
        if len(self.runs) == self.runs.maxlen:
            clean, policy = self.runs[0]
            self.clean -= clean
            self.policy -= policy
        entry = (run.outcome == CLEAN, run.policy_fired)
        self.runs.append(entry)
        self.clean += entry[0]
        self.policy += entry[1]

    def counts(self) -> "Counts":
        return Counts(self.clean, len(self.runs), self.policy, self.undecided)


@dataclass(frozen=True)
class Counts:
    clean: int
    decided: int
    policy_violations: int
    undecided: int


@dataclass
class Window:
    active: Tally
    shadow: Tally | None = None


@dataclass(frozen=True)
class WindowView:
    agent: str
    version: str
    active: Counts
    shadow: Counts | None = field(default=None)


class Windows:
    def __init__(self, size: int, max_agents: int, max_versions: int) -> None:
        self.size = size
        self.max_agents = max_agents
        self.max_versions = max_versions
        self.folded = 0
        self._by_agent: dict[str, dict[str, Window]] = {}
        self._lock = threading.Lock()

    def _window(self, agent: str, version: str) -> Window | None:
        versions = self._by_agent.get(agent)
        if versions is None:
            if len(self._by_agent) >= self.max_agents:
                self.folded += 1
                return None
            versions = self._by_agent[agent] = {}
        w = versions.get(version)
        if w is None:
            if sum(v != OTHER for v in versions) >= self.max_versions:
                self.folded += 1
                version = OTHER
                w = versions.get(OTHER)
            if w is None:
                w = versions[version] = Window(Tally(self.size))
        return w

    def add(self, agent: str, version: str, run: GateRun, shadow: GateRun | None = None) -> None:
        with self._lock:
            w = self._window(agent, version or UNKNOWN)
            if w is None:
                return
            w.active.add(run)
            if shadow is not None:
                if w.shadow is None:
                    w.shadow = Tally(self.size)
                w.shadow.add(shadow)

    def views(self) -> list[WindowView]:
        with self._lock:
            return [WindowView(agent, version, w.active.counts(), w.shadow.counts() if w.shadow else None)
                    for agent, versions in self._by_agent.items() for version, w in versions.items()]
