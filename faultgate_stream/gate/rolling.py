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


@dataclass
class Window:
    runs: deque[GateRun]
    shadow: deque[GateRun]
    undecided: int = 0
    shadow_undecided: int = 0
    has_shadow: bool = False


@dataclass(frozen=True)
class WindowView:
    agent: str
    version: str
    runs: list[GateRun]
    undecided: int
    shadow: list[GateRun] | None = field(default=None)


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
                w = versions[version] = Window(deque(maxlen=self.size), deque(maxlen=self.size))
        return w

    def add(self, agent: str, version: str, run: GateRun, shadow: GateRun | None = None) -> None:
        with self._lock:
            w = self._window(agent, version or UNKNOWN)
            if w is None:
                return
            if run.outcome in (CLEAN, FAILED):
                w.runs.append(run)
            else:
                w.undecided += 1
            if shadow is not None:
                w.has_shadow = True
                if shadow.outcome in (CLEAN, FAILED):
                    w.shadow.append(shadow)
                else:
                    w.shadow_undecided += 1

    def views(self) -> list[WindowView]:
        with self._lock:
            return [WindowView(agent, version, list(w.runs), w.undecided, list(w.shadow) if w.has_shadow else None)
                    for agent, versions in self._by_agent.items() for version, w in versions.items()]
