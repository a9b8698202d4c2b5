"""Metrics endpoint settings."""
from __future__ import annotations

from dataclasses import dataclass

from faultgate_stream.receive.config import ServerTLS, token_file_problem

# Agent names become a label: a fleet has tens of agents, not thousands. Past the cap a
# name folds into "other" (and is counted), so a bug that names agents by request id
# cannot explode the series count.
DEFAULT_MAX_AGENTS = 100
# Characters a label value may have. An agent name is a word or two; one of 1 MiB made
# every scrape 514 MB. A longer value is cut and given a hash of the whole (counted), so
# two long names stay two series.
DEFAULT_MAX_LABEL_LENGTH = 128
# Loopback by default, as the collector binds its own telemetry: metrics name agents and
# checks, and need not leave the host unless the operator says so (in Kubernetes, set
# "0.0.0.0:9464" or the pod IP so Prometheus and the kubelet can reach it).
DEFAULT_ENDPOINT = "127.0.0.1:9464"


@dataclass(frozen=True, kw_only=True)
class MetricsConfig:
    endpoint: str = DEFAULT_ENDPOINT   # /metrics, /healthz, /readyz
    max_agents: int = DEFAULT_MAX_AGENTS
    max_label_length: int = DEFAULT_MAX_LABEL_LENGTH
    tls: ServerTLS = ServerTLS()
    # Required on /metrics ("Authorization: Bearer <token>", Prometheus' `authorization`);
    # /healthz and /readyz stay open for the kubelet's probes: they say only up or not.
    bearer_token: str = ""
    bearer_token_file: str = ""

    def validate(self) -> list[str]:
        problems = []
        if ":" not in self.endpoint or not self.endpoint.rsplit(":", 1)[1].isdigit():
            problems.append(f"endpoint: must be host:port, not {self.endpoint!r}")
        if self.max_agents < 1:
            problems.append("max_agents: must be >= 1")
        if self.max_label_length < 16:
            problems.append("max_label_length: must be >= 16")
        if self.bearer_token and self.bearer_token_file:
            problems.append("bearer_token and bearer_token_file: set one, not both")
        if self.bearer_token and not self.bearer_token.strip():
            problems.append("bearer_token: is blank; a blank token would turn authentication off")
        if self.bearer_token_file:
            problem = token_file_problem(self.bearer_token_file)
            if problem:
                problems.append(f"bearer_token_file: {problem}")
        return problems
