"""What a check says about a run, and the run's record of truth.

One ``RunVerdict`` per run; every sink (report, metrics, span attributes, log, stream)
renders this one object. Reasons are raw here: sinks mask them on the way out.

The three records are ``NamedTuple``s, as ``SpanRecord`` is: immutable, equal and hashable
by value, built by one C-level tuple allocation behind a generated ``__new__``. A frozen
slotted dataclass cost ~3 us to construct (``object.__setattr__`` per field: ~8 us for a
``RunVerdict``) and 2-5 M instructions to define at import (bench/README.md); a run makes
one result per check and a verdict. What they give up is the dataclass's class check in
``==``: a record equals a plain tuple of the same values. Change one with ``_replace``.
"""
from __future__ import annotations

import enum
from typing import NamedTuple

from faultgate_stream.model.profile import RunProfile
from faultgate_stream.model.records import RunKey


# A run's verdict: the value of ``RunVerdict.verdict`` and of every sink's "verdict".
CLEAN, FAILED, UNDECIDED = "clean", "failed", "undecided"
VERDICTS = (CLEAN, FAILED, UNDECIDED)


def verdict_of(fired: bool, undecided: bool) -> str:
    """A run's verdict from whether a check fired and whether one could not see its input:
    ``failed`` when a check fired; else ``undecided`` when one could not tell; else
    ``clean``. An undecided run is never reported clean."""
    return FAILED if fired else UNDECIDED if undecided else CLEAN


class Severity(enum.Enum):
    """luckrate's severities: hard fails a build, soft is a budget, warn is worth a look."""

    HARD = "hard"
    SOFT = "soft"
    WARN = "warn"


class Completion(enum.Enum):
    """Why the assembler decided a run was over. Part of every verdict."""

    COMPLETE = "complete"          # end of input (offline): every span there was has been seen
    GRACE = "grace"                # live: the root arrived and root_grace passed
    MAX_DURATION = "max-duration"  # live: max_run_duration since the first span ran out first
    ORPHAN = "orphan"              # no root span ever arrived for these spans
    EVICTED = "evicted"            # closed early to make room (a capacity bound)
    SHUTDOWN = "shutdown"          # the service stopped with the run in flight


class CheckResult(NamedTuple):
    check: str
    fired: bool
    confidence: float
    reason: str
    severity: Severity = Severity.HARD
    kind: str = "rule"
    agent: str = ""  # set when the check was bound to one agent of a multi-agent run
    # The check could not see its input (content not captured): neither fired nor passed.
    # ``fired`` is False and ``confidence`` 0, so code that only knows "fired" stays right.
    undecided: bool = False
    # What a check measured on the run, as (name, value) pairs: the loop's waste (steps,
    # seconds, tokens, cost_usd, each only when recorded), which metrics add up by agent.
    measures: tuple[tuple[str, float], ...] = ()
    # Who made it, when not faultgate-stream's own code: a plug-in's package and version
    # ("name version"); its evaluation records name it (export/spans/annotate.py).
    evaluator: str = ""
    # The spans the result points at (the steps where it fired), when the check names them
    # (a plug-in, a rule); reports mark those steps. Empty says nothing: a reader falls back
    # on the steps the reason names (``verdict/pointers.py``).
    span_ids: tuple[str, ...] = ()


class EarlyFinding(NamedTuple):
    """A violation a check could decide when one span arrived, before its run completed."""

    trace_id: str
    span_id: str
    check: str
    reason: str
    agent: str = ""


class RunVerdict(NamedTuple):
    key: RunKey
    scenario: str
    agent: str
    agent_version: str
    completion: Completion
    results: tuple[CheckResult, ...]
    steps: int
    spans: int
    first_start_ns: int = 0
    # A trace that only built an agent (every span ``gen_ai.operation.name = create_agent``)
    # is not a run: its spans pass through, but no verdict is reported or counted for it.
    setup_only: bool = False
    last_end_ns: int = 0
    root_arrival_ns: int = 0   # service clock; 0 offline or when no root arrived
    decided_ns: int = 0
    root_span_id: str = ""     # for exemplars and for writing the verdict onto the root
    # Every span that left the assembler with this run (its members, and spans above it
    # that no other run can claim): what span export may now release.
    released_span_ids: frozenset[str] = frozenset()
    early: tuple[EarlyFinding, ...] = ()
    # The run's usage (tokens, latency_ms, cost_usd). Read-only by contract: the default
    # is one dict shared by every verdict built without it (a NamedTuple has no factory).
    measures: dict[str, float | None] = {}
    # Per result (same order): a digest of the files and settings of the rules that produced
    # it (the binding's policy/spec files, else the every-run checks'), so an evaluation
    # record names the exact rules behind it.
    rule_digests: tuple[str, ...] = ()
    # Results of the run's shadow rules (a binding's ``shadow``): reported in their own
    # series and never part of the verdict, which ``results`` alone makes.
    shadow: tuple[CheckResult, ...] = ()
    # An amended verdict (``verdict/amend.py``): the same run key again, after a late span or
    # a judge changed a check's result. ``revision`` counts the amendments (0: the first
    # verdict); ``previous`` is the verdict (clean/failed/undecided) it replaces;
    # ``amended_checks`` the checks whose result changed; ``amended_by`` what caused it: the
    # late span's id, or ``judge:<name>``.
    revision: int = 0
    previous: str = ""
    amended_checks: tuple[str, ...] = ()
    amended_by: str = ""
    # The run's shape, session and task (``model/profile.py``): set only when drift, sessions
    # or judge routing are configured; None otherwise.
    profile: RunProfile | None = None
    # Spans of the run that carry agent work no convention read, as (kind, count): kinds
    # ``tool``, ``model``, ``output`` (model/unread.py). The checks they hid are undecided.
    unread: tuple[tuple[str, int], ...] = ()

    @property
    def fired(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.fired)

    @property
    def failed(self) -> bool:
        """A check fired (faultgate's "failed")."""
        return any(r.fired for r in self.results)

    @property
    def undecided(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.undecided)

    @property
    def verdict(self) -> str:
        """``verdict_of`` the run's results."""
        if self.failed:
            return FAILED
        return verdict_of(False, any(r.undecided for r in self.results))

    @property
    def clean(self) -> bool:
        return self.verdict == CLEAN
