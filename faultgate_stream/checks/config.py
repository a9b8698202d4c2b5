"""Which checks a service runs, and the files some of them read."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ShadowConfig:
    """Rules evaluated on the same runs as the binding's and reported in their own series
    (``faultgate_shadow_*``), never in a verdict: what a new policy would flag before it
    is enforced. Empty: no shadow."""

    policy: str = ""
    spec: str = ""


@dataclass(frozen=True, kw_only=True)
class BindingConfig:
    """Holds the agents whose names match ``agents`` (globs) to a policy and/or a spec."""

    agents: tuple[str, ...] = ("*",)
    policy: str = ""   # a faultgate policy file (JSON or YAML)
    spec: str = ""     # a luckrate trajectory spec file (JSON or YAML)
    shadow: ShadowConfig = ShadowConfig()

    def validate(self) -> list[str]:
        problems = []
        if not self.agents:
            problems.append("agents: name at least one agent (a glob; \"*\" for every agent)")
        if not self.policy and not self.spec and not (self.shadow.policy or self.shadow.spec):
            problems.append("policy or spec: a binding needs at least one (or a shadow)")
        return problems


@dataclass(frozen=True, kw_only=True)
class WindowsConfig:
    """The store behind windowed budgets (policy ``max_calls`` / ``limits`` with ``within``
    or ``per: session | agent``): other runs' counts, bounded. See ``checks/window_store.py``."""

    # keys are (binding, budget, session or agent, argument value); past this many the least
    # recently used is dropped whole (faultgate_window_evicted_keys_total)
    max_keys: int = 100_000
    # a budget of N needs N + 1 events inside its window to be exact; past this many a key's
    # oldest go (faultgate_window_evicted_events_total)
    max_events_per_key: int = 1024

    def validate(self) -> list[str]:
        return [f"{k}: must be at least 1, not {getattr(self, k)}" for k in ("max_keys", "max_events_per_key")
                if getattr(self, k) < 1]


@dataclass(frozen=True, kw_only=True)
class ChecksConfig:
    enabled: tuple[str, ...] | None = None  # None: every rule, plus golden/outcome when their files are set
    golden: str | None = None               # golden.json: expected answers by scenario key or prompt
    outcomes: str | None = None             # outcomes.json: true/false by scenario key or prompt
    # Per-agent rules, first match wins; reloaded on SIGHUP (runs in flight keep theirs).
    bindings: tuple[BindingConfig, ...] = ()
    windows: WindowsConfig = WindowsConfig()  # the bounded store behind windowed budgets

    def validate(self) -> list[str]:
        from faultgate_stream.checks.registry import NAMES

        return [f"enabled: unknown check {n!r}; available: {', '.join(NAMES)}"
                for n in self.enabled or () if n not in NAMES]

