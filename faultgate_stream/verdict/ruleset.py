"""Which checks judge which runs: the checks every run gets, and per-agent bindings.

A binding maps agent-name globs to checks built from policy and spec files; the first
binding whose glob matches an agent's name holds that agent to its rules. A ruleset is
immutable: a reload builds a new one and swaps it in, and a run in flight keeps the
ruleset it started with.

Neither is a dataclass: ``check`` wraps its checks in a ruleset and runs without importing
``dataclasses`` (tests/cli/test_startup.py).
"""
from __future__ import annotations

import hashlib
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, NamedTuple

from faultgate_stream.checks.base import each
from faultgate_stream.model.errors import InputError
from faultgate_stream.model.run import ATTRIBUTES_READ

if TYPE_CHECKING:
    # Building a ruleset from files needs these; the offline command, which wraps its
    # checks in a ruleset, does not, so they are imported where a ruleset is built.
    from faultgate_stream.checks.base import Check
    from faultgate_stream.checks.config import ChecksConfig
    from faultgate_stream.checks.window_store import WindowStore
    from prometheus_client import Counter

ANY_AGENT = "*"
# Agent names come from traffic; the lookup cache is cleared past this many, so a flood
# of distinct names costs glob matching, never memory. The names a clear forgets are
# counted (faultgate_ruleset_agent_cache_evictions): one that keeps rising is that flood.
MAX_CACHED_AGENTS = 1024


class Binding(NamedTuple):
    agents: tuple[str, ...]          # globs, matched case-sensitively
    checks: tuple[Check, ...]
    source: str = ""                 # the files it came from, for logs
    shadow: tuple[Check, ...] = ()   # judged on the same runs, reported apart, never in a verdict
    digest: str = ""                 # of those files' bytes: which rules, exactly
    judge: tuple[str, ...] = ()      # judge checks its spec names (asked live, after the rule verdict)

    def matches(self, agent: str) -> bool:
        return any(fnmatchcase(agent, g) for g in self.agents)

    @property
    def universal(self) -> bool:
        """Matches an agent whose name is not known yet (for early findings)."""
        return ANY_AGENT in self.agents


class Ruleset:
    __slots__ = ("checks", "bindings", "generation", "digest", "has_shadow", "own_digests", "reporting", "digests",
                 "several", "_cache", "_evictions")

    def __init__(self, checks: tuple[Check, ...], bindings: tuple[Binding, ...] = (), generation: int = 0,
                 digest: str = "", evictions: Counter | None = None) -> None:
        """``evictions``: where the agent names a clear of the lookup cache forgets are
        counted; the service passes the same counter to each ruleset it builds, so the count
        goes on across reloads (a run in flight clears its own ruleset's cache)."""
        self.checks = checks
        self.bindings = bindings
        self.generation = generation
        self.digest = digest  # of the every-run checks' names and files
        # read for every verdict: worked out once, not a scan of the bindings per run
        self.has_shadow = any(b.shadow for b in bindings)
        # checks that name their own rules (a plug-in's code, a rules file's rules): check -> digest
        self.own_digests = {c.name: c.digest for c in each(self.every_check()) if c.digest}
        # the check each every-run result comes from, in order (a rules file's: its rules)
        self.reporting = tuple(each(checks))
        # the every-run checks' results' digests, in order (what a verdict without bindings records)
        self.digests = tuple(c.digest or digest for c in self.reporting)
        # where the every-run checks of several results are (``Check.members``), the last
        # first: each one's list of results goes in its place, the places before it unmoved
        self.several = tuple(i for i, c in enumerate(checks) if c.members)[::-1]
        self._cache: dict[str, tuple[Check, ...]] = {}  # agent name -> its bound checks
        self._evictions = evictions

    def bound(self, agent: str | None) -> tuple[Check, ...]:
        """The checks bound to ``agent``; ``None`` (not known yet) gets a universal binding's."""
        if agent is None:
            return next((b.checks for b in self.bindings if b.universal), ())
        hit = self._cache.get(agent)
        if hit is None:
            if len(self._cache) >= MAX_CACHED_AGENTS:
                if self._evictions is not None:
                    self._evictions.inc(len(self._cache))
                self._cache.clear()
            hit = self._cache[agent] = next((b.checks for b in self.bindings if b.matches(agent)), ())
        return hit

    def digest_of(self, check: str, agent: str) -> str:
        """The digest of the rules that a result of ``check`` for ``agent`` came from: the
        first binding matching the agent when it holds that check, else the every-run set.
        A plug-in's or a rules file's results name their own (``Check.digest``)."""
        own = self.own_digests.get(check)
        if own:
            return own
        for b in self.bindings:
            if b.matches(agent):
                if any(c.name == check for c in each(b.checks)):
                    return b.digest
                break
        return self.digest

    def shadow_bound(self, agent: str) -> tuple[Check, ...]:
        """The shadow checks of the binding that holds ``agent`` (the first match)."""
        return next((b.shadow for b in self.bindings if b.matches(agent)), ())

    def judged(self, agent: str) -> tuple[str, ...]:
        """The judge checks the spec of the binding that holds ``agent`` names."""
        return next((b.judge for b in self.bindings if b.matches(agent)), ())

    def every_check(self) -> tuple[Check, ...]:
        """Every check of the ruleset: every run's, then each binding's and its shadow's."""
        return (*self.checks, *(c for b in self.bindings for c in (*b.checks, *b.shadow)))

    @property
    def attributes(self) -> frozenset[str]:
        """Every span attribute a run judged by this ruleset may be read for: the run's own
        and every check's, shadow checks' too (read/projection.py keeps only these)."""
        out = set(ATTRIBUTES_READ)
        for c in (*self.checks, *(c for b in self.bindings for c in (*b.checks, *b.shadow))):
            out |= c.attributes
        return frozenset(out)

    @property
    def names(self) -> list[str]:
        """Check names in report-column order: every run's, then the bound ones."""
        out = [c.name for c in self.reporting]
        for b in self.bindings:
            out += [c.name for c in each(b.checks) if c.name not in out]
        return out


def build(config: ChecksConfig, generation: int = 0, store: WindowStore | None = None,
          evictions: Counter | None = None) -> Ruleset:
    """The ruleset a service's checks config describes: files read and validated now.
    Raises ``InputError`` naming every bad file by its binding's path in the config.
    ``store`` keeps windowed budgets' counts across runs and reloads: pass the same one
    each time (the budgets of two bindings are kept apart by the binding's place), and the
    same ``evictions`` counter (``Ruleset``)."""
    from faultgate_stream.checks.expectations import Golden, Outcomes
    from faultgate_stream.checks.registry import select
    from faultgate_stream.checks.trajectory import load_spec

    golden = Golden.load(config.golden) if config.golden else None
    # the outcome check joins with an outcomes file, or by name in ``enabled`` (then it
    # reads the root's faultgate.outcome attribute): the default set stays faultgate's
    outcomes = Outcomes.load(config.outcomes) if config.outcomes else None
    checks = select(list(config.enabled) if config.enabled else None, golden=golden, outcomes=outcomes)
    problems = []
    try:
        checks += own_checks(config.plugins, config.rules)
        unique(checks)
    except InputError as e:
        problems.append(f"checks: {e}")
    bindings = []
    for i, b in enumerate(config.bindings):
        try:
            bound = _checks_of(b.policy, b.spec, store, f"bindings[{i}]") + own_checks(b.plugins, b.rules)
            shadow = (_checks_of(b.shadow.policy, b.shadow.spec, store, f"bindings[{i}].shadow")
                      + own_checks(b.shadow.plugins, b.shadow.rules))
            unique(bound)
            unique(shadow)
        except InputError as e:
            problems.append(f"checks.bindings[{i}]: {e}")
            continue
        source = ", ".join(f"{k}={v}" for k, v in (("policy", b.policy), ("spec", b.spec), ("rules", b.rules),
                                                    ("plugins", ",".join(b.plugins)),
                                                    ("shadow.policy", b.shadow.policy),
                                                    ("shadow.spec", b.shadow.spec),
                                                    ("shadow.rules", b.shadow.rules),
                                                    ("shadow.plugins", ",".join(b.shadow.plugins))) if v)
        bindings.append(Binding(tuple(b.agents), tuple(bound), source, tuple(shadow),
                                _digest((b.policy, b.spec)), load_spec(b.spec).judge if b.spec else ()))
    if problems:
        raise InputError("\n".join(problems))
    every_run = ",".join(c.name for c in each(checks))
    return Ruleset(tuple(checks), tuple(bindings), generation, _digest((config.golden, config.outcomes), every_run),
                   evictions)


def own_checks(plugins: tuple[str, ...] | list[str] = (), rules: str = "") -> list[Check]:
    """The checks of your own: plug-ins (entry-point names or module:Class) and the rules of
    a rules file, loaded and checked now. Raises ``InputError``."""
    out: list[Check] = []
    if plugins:
        from faultgate_stream.checks.plugins.load import load_all
        out += load_all(tuple(plugins))
    if rules:
        from faultgate_stream.checks.rules.check import rule_checks
        from faultgate_stream.checks.rules.load import load_rules
        out += rule_checks(load_rules(rules))
    return out


def unique(checks: list[Check]) -> None:
    """Raises ``InputError`` when two checks share a name (a rule named as a plug-in, say):
    a report column, a metric label and a reason attribute each name one check."""
    seen: set[str] = set()
    for c in each(checks):
        if c.name in seen:
            raise InputError(f"two checks are named {c.name!r}: rename one (rules and plug-ins take names of "
                             f"their own)")
        seen.add(c.name)


def _checks_of(policy: str, spec: str, store: WindowStore | None = None, namespace: str = "") -> list[Check]:
    from faultgate_stream.checks.policy import load_policy
    from faultgate_stream.checks.registry import policy_checks
    from faultgate_stream.checks.trajectory import checks_for, load_spec

    out: list[Check] = []
    if policy:
        out += policy_checks(load_policy(policy), store, namespace)
    if spec:
        out += checks_for(load_spec(spec))
    return out


def _digest(files: tuple[str | None, ...], text: str = "") -> str:
    """sha256 (first 16 hex digits) of the files' bytes and ``text``; the files were just
    read and validated. An unset file counts as empty, in its place."""
    h = hashlib.sha256(text.encode())
    for f in files:
        h.update(b"\0")
        if f:
            with open(f, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()[:16]
