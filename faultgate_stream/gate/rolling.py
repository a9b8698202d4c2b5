"""Rolling windows: the last N decided runs per (agent, version), and undecided counts.

Bounded: at most ``max_agents`` agents with at most ``max_versions`` versions each. A new
version past the cap joins its agent's ``other`` window (one more, judged by the agent's
band); a run of a new agent past the cap is not gated at all, since one window mixing
agents would compare nothing with anything. Each folded run is counted in ``folded``.
Thread-safe: verdicts arrive on the assembler's threads, scrapes on the HTTP server's.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from faultgate_stream.gate.drift import ShapeCounts, ShapeWindow
from faultgate_stream.gate.runs import CLEAN, FAILED, GateRun

OTHER = "other"
UNKNOWN = "unknown"   # a run that names no version: "" would read as no label at all


class Tally:
    """The last ``size`` decided runs as running counts, so a scrape reads three numbers per
    window instead of walking its runs. Runs are kept by key, so an amended verdict replaces
    its run's first outcome in place instead of counting the run twice."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.runs: OrderedDict[object, tuple[bool, bool]] = OrderedDict()  # key -> (clean, policy fired)
        # the last ``size`` undecided runs, so an amendment that decides one can find it
        self.undecided_keys: OrderedDict[object, None] = OrderedDict()
        self.clean = 0
        self.policy = 0
        self.undecided = 0

    def add(self, run: GateRun, key: object) -> None:
        if run.outcome not in (CLEAN, FAILED):
            self._count_undecided(key)
            return
        if key in self.runs:
            self._drop(key)
        elif len(self.runs) >= self.size:
            self._drop(next(iter(self.runs)))
        self._put(key, run)

    def amend(self, run: GateRun, key: object) -> bool:
        """The run's new outcome in its place; False when the window no longer holds it."""
        decided = run.outcome in (CLEAN, FAILED)
        if key in self.runs:
            if decided:
                clean, policy = self.runs[key]
                self.clean -= clean
                self.policy -= policy
                self._put(key, run)  # an existing key keeps its place in the order
            else:
                self._drop(key)
                self._count_undecided(key)
            return True
        if key in self.undecided_keys:
            if decided:
                del self.undecided_keys[key]
                self.undecided -= 1
                self.add(run, key)
            return True
        return False

    def _put(self, key: object, run: GateRun) -> None:
        entry = (run.outcome == CLEAN, run.policy_fired)
        self.runs[key] = entry
        self.clean += entry[0]
        self.policy += entry[1]

    def _drop(self, key: object) -> None:
        clean, policy = self.runs.pop(key)
        self.clean -= clean
        self.policy -= policy

    def _count_undecided(self, key: object) -> None:
        self.undecided += 1
        self.undecided_keys[key] = None
        if len(self.undecided_keys) > self.size:
            self.undecided_keys.popitem(last=False)

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
    # the last runs' shapes, for drift (gate/drift.py): runs of every verdict, undecided too
    shapes: ShapeWindow | None = None
    changes: int = 0  # shapes added or amended: tells a cached drift result it is stale


@dataclass(frozen=True)
class WindowView:
    agent: str
    version: str
    active: Counts
    shadow: Counts | None = field(default=None)
    shapes: ShapeCounts | None = field(default=None)  # a copy, taken under the lock


class Windows:
    def __init__(self, size: int, max_agents: int, max_versions: int) -> None:
        self.size = size
        self.max_agents = max_agents
        self.max_versions = max_versions
        self.folded = 0
        self.amend_missed = 0
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

    def add(self, agent: str, version: str, run: GateRun, shadow: GateRun | None = None,
            key: object = None, shape: tuple[str, ...] | None = None) -> None:
        """``key`` names the run for a later ``amend`` (default: a run no amendment can name);
        ``shape`` is its shape, for drift (None: not profiled)."""
        key = object() if key is None else key
        with self._lock:
            w = self._window(agent, version or UNKNOWN)
            if w is None:
                return
            w.active.add(run, key)
            if shape is not None:
                if w.shapes is None:
                    w.shapes = ShapeWindow(self.size)
                w.shapes.add(key, shape)
                w.changes += 1
            if shadow is not None:
                if w.shadow is None:
                    w.shadow = Tally(self.size)
                w.shadow.add(shadow, key)

    def amend(self, agent: str, version: str, key: object, run: GateRun, shadow: GateRun | None = None,
              shape: tuple[str, ...] | None = None) -> bool:
        """An amended verdict replaces its run's outcome (and shape) where ``add`` put it.
        False (and counted in ``amend_missed``) when its run has rolled out of the window or
        was folded."""
        with self._lock:
            versions = self._by_agent.get(agent, {})
            w = versions.get(version or UNKNOWN) or versions.get(OTHER)
            found = w is not None and w.active.amend(run, key)
            if found and shape is not None and w.shapes is not None and w.shapes.amend(key, shape):
                w.changes += 1
            if found and shadow is not None and w.shadow is not None:
                w.shadow.amend(shadow, key)
            if not found:
                self.amend_missed += 1
            return found

    def views(self) -> list[WindowView]:
        with self._lock:
            return [WindowView(agent, version, w.active.counts(), w.shadow.counts() if w.shadow else None,
                               w.shapes.counts.merged(ShapeCounts()) if w.shapes is not None else None)
                    for agent, versions in self._by_agent.items() for version, w in versions.items()]

    def shapes(self, agent: str, version: str) -> tuple[int, ShapeCounts | None]:
        """(changes, a copy of the shape counts) of one window, as ``add`` files its runs."""
        with self._lock:
            versions = self._by_agent.get(agent, {})
            w = versions.get(version or UNKNOWN) or versions.get(OTHER)
            if w is None or w.shapes is None:
                return 0, None
            return w.changes, w.shapes.counts.merged(ShapeCounts())
