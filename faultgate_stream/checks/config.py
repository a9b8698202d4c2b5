"""Which checks a service runs, and the files some of them read."""
from __future__ import annotations

from dataclasses import dataclass, field

from faultgate_stream.model.settings import DURATION

# A plug-in's CPU on one run (start, every observe, finish) past which its result is
# undecided: a few milliseconds is a hundred times what a check over a run's steps takes
# (the built-ins take 2-20 us a run), and at 2,000 runs a second on one core it would
# still be a tenth of that core's time per plug-in.
DEFAULT_CPU_BUDGET_S = 0.005
# Wall time a plug-in's call may take before it is given up on (it sleeps, it waits on
# I/O). Far above the budget: under load a call also waits for the GIL behind ingestion.
DEFAULT_DEADLINE_S = 1.0
# Overruns in a row before a plug-in is switched off: a garbage collection inside one call
# can push it over once, a plug-in that overruns every run does it each time.
DEFAULT_MAX_OVERRUNS = 5
# Runs and span batches waiting for the plug-ins' thread: at the live bench's 1,400 runs a
# second, seven seconds of falling behind.
DEFAULT_MAX_QUEUE = 10_000


@dataclass(frozen=True, kw_only=True)
class ShadowConfig:
    """Rules evaluated on the same runs as the binding's and reported in their own series
    (``faultgate_shadow_*``), never in a verdict: what a new policy would flag before it
    is enforced. Empty: no shadow."""

    policy: str = ""
    spec: str = ""
    plugins: tuple[str, ...] = ()  # plug-ins in shadow: entry-point names or module:Class
    rules: str = ""                # a rules file in shadow


@dataclass(frozen=True, kw_only=True)
class BindingConfig:
    """Holds the agents whose names match ``agents`` (globs) to a policy and/or a spec."""

    agents: tuple[str, ...] = ("*",)
    policy: str = ""   # a faultgate policy file (JSON or YAML)
    spec: str = ""     # a luckrate trajectory spec file (JSON or YAML)
    plugins: tuple[str, ...] = ()  # plug-ins these agents' runs get: entry-point names or module:Class
    rules: str = ""    # a rules file (checks/rules) these agents' runs get
    shadow: ShadowConfig = ShadowConfig()

    def validate(self) -> list[str]:
        problems = []
        if not self.agents:
            problems.append("agents: name at least one agent (a glob; \"*\" for every agent)")
        sh = self.shadow
        if not (self.policy or self.spec or self.plugins or self.rules
                or sh.policy or sh.spec or sh.plugins or sh.rules):
            problems.append("policy, spec, plugins or rules: a binding needs at least one (or a shadow)")
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
class IsolationConfig:
    """What a plug-in may spend (checks/plugins/isolate.py)."""

    cpu_budget: float = field(default=DEFAULT_CPU_BUDGET_S, metadata=DURATION)  # CPU per run
    deadline: float = field(default=DEFAULT_DEADLINE_S, metadata=DURATION)      # wall time per call
    max_overruns: int = DEFAULT_MAX_OVERRUNS  # in a row, before the plug-in is switched off
    max_queue: int = DEFAULT_MAX_QUEUE

    def validate(self) -> list[str]:
        problems = [f"{k}: must be a duration > 0" for k in ("cpu_budget", "deadline") if not getattr(self, k) > 0]
        problems += [f"{k}: must be at least 1, not {getattr(self, k)}" for k in ("max_overruns", "max_queue")
                     if getattr(self, k) < 1]
        return problems


@dataclass(frozen=True, kw_only=True)
class ChecksConfig:
    enabled: tuple[str, ...] | None = None  # None: every rule, plus golden/outcome when their files are set
    golden: str | None = None               # golden.json: expected answers by scenario key or prompt
    outcomes: str | None = None             # outcomes.json: true/false by scenario key or prompt
    # Per-agent rules, first match wins; reloaded on SIGHUP (runs in flight keep theirs).
    bindings: tuple[BindingConfig, ...] = ()
    windows: WindowsConfig = WindowsConfig()  # the bounded store behind windowed budgets
    # Checks of your own (docs/writing-checks.md), every run's, beside the built-ins:
    plugins: tuple[str, ...] = ()  # entry-point names (faultgate_stream.checks) or module:Class
    rules: str = ""                # a rules file: CEL expressions over a span or a run
    isolation: IsolationConfig = IsolationConfig()  # what a plug-in may spend

    def validate(self) -> list[str]:
        from faultgate_stream.checks.registry import NAMES

        return [f"enabled: unknown check {n!r}; available: {', '.join(NAMES)}"
                for n in self.enabled or () if n not in NAMES]

