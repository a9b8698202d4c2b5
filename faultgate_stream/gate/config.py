"""The live gate's settings: which band judges which agents, and the window's bounds."""
from __future__ import annotations

from dataclasses import dataclass

from faultgate_stream.gate.drift import DEFAULT_ALPHA as DEFAULT_DRIFT_ALPHA
from faultgate_stream.gate.drift import DEFAULT_MIN_RUNS as DEFAULT_DRIFT_MIN_RUNS

# Runs per (agent, version) the gate compares with the band: about as many as a baseline
# holds scenarios a few times over, so one bad hour moves it and one bad run does not.
DEFAULT_WINDOW = 200
# Windows held: max_agents x (max_versions + "other"). A canary holds two versions of an
# agent; five leaves room for a few rollouts in flight. Beyond, runs fold (counted). Each
# window is ~16 series, and exposition dominates a scrape: 500 full windows took 0.14-0.7 s
# of the GIL, 100 took 12-64 ms (ranges over runs on a loaded 2-core machine).
DEFAULT_MAX_AGENTS = 20
DEFAULT_MAX_VERSIONS = 5


@dataclass(frozen=True, kw_only=True)
class GateBandConfig:
    """The band (faultgate's band.json, from ``baseline``) for agents whose names match."""

    agents: tuple[str, ...] = ("*",)
    band: str = ""

    def validate(self) -> list[str]:
        problems = []
        if not self.agents:
            problems.append("agents: name at least one agent (a glob; \"*\" for every agent)")
        if not self.band:
            problems.append("band: the path of a band.json is required")
        return problems


@dataclass(frozen=True, kw_only=True)
class GateDriftConfig:
    """Trajectory drift (gate/drift.py), judged for every window whose band holds
    trajectories (``baseline`` writes them)."""

    enabled: bool = True
    alpha: float = DEFAULT_DRIFT_ALPHA        # the chance of DRIFT on a window of the baseline's own runs
    min_runs: int = DEFAULT_DRIFT_MIN_RUNS    # runs needed on each side, else INCONCLUSIVE

    def validate(self) -> list[str]:
        problems = []
        if not 0.0 < self.alpha < 1.0:
            problems.append(f"alpha: must lie strictly between 0 and 1, not {self.alpha}")
        if self.min_runs < 1:
            problems.append(f"min_runs: must be at least 1, not {self.min_runs}")
        return problems


@dataclass(frozen=True, kw_only=True)
class GateConfig:
    bands: tuple[GateBandConfig, ...] = ()   # first match wins; no match: the agent is not gated
    window: int = DEFAULT_WINDOW             # last N decided runs per (agent, version)
    max_agents: int = DEFAULT_MAX_AGENTS
    max_versions: int = DEFAULT_MAX_VERSIONS  # per agent; more fold into version "other"
    drift: GateDriftConfig = GateDriftConfig()

    def validate(self) -> list[str]:
        return [f"{k}: must be at least 1, not {v}" for k, v in
                (("window", self.window), ("max_agents", self.max_agents), ("max_versions", self.max_versions))
                if v < 1]
