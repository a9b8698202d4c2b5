"""Metrics endpoint settings."""
from __future__ import annotations

from dataclasses import dataclass

# Agent names become a label: a fleet has tens of agents, not thousands. Past the cap a
# name folds into "other" (and is counted), so a bug that names agents by request id
# cannot explode the series count.
DEFAULT_MAX_AGENTS = 100


@dataclass(frozen=True, kw_only=True)
class MetricsConfig:
    endpoint: str = "0.0.0.0:9464"   # /metrics, /healthz, /readyz
    max_agents: int = DEFAULT_MAX_AGENTS

    def validate(self) -> list[str]:
        problems = []
        if ":" not in self.endpoint or not self.endpoint.rsplit(":", 1)[1].isdigit():
            problems.append(f"endpoint: must be host:port, not {self.endpoint!r}")
        if self.max_agents < 1:
            problems.append("max_agents: must be >= 1")
        return problems
