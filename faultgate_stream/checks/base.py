"""The incremental contract every check implements.

A check is built once from validated options and shared by every run; it keeps no state
of its own. For each trace in flight the engine calls ``start()`` once and keeps what it
returns; ``observe(state, span)`` is called for each span as it arrives, in arrival order,
and may return the reason for an *early* finding; ``finish(state, run)`` gives the
verdict when the run completes. The evaluator observes a batch's spans one trace's
stretch at a time, through ``observe_spans``: ``observe`` over each span of the stretch in
order, the first early finding returned; a check may override it with one compiled call.

Fire early only on facts no later span can undo (a denied argument, a cut-off model
output). Decide anything order-dependent in ``finish``, over ``run.steps``, which are
sorted by start time, so the order spans arrived in cannot change the answer. What
``observe`` keeps in the state may save ``finish`` work, never change its answer: where no
one hears early findings (the offline command, ``check_spans(..., early=False)``) no span
is observed, and ``finish`` gets the fresh state ``start()`` made.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import INPUTS, UnreadWork
from faultgate_stream.model.verdict import CheckResult, Severity


class Check(ABC):
    name: ClassVar[str]
    kind: ClassVar[str] = "rule"  # rule | golden | outcome
    description: ClassVar[str]
    severity: ClassVar[Severity] = Severity.HARD
    # Span attributes the check reads from ``SpanRecord.attrs`` beyond the run's own
    # (``model.run.ATTRIBUTES_READ``): the live reader keeps no others (read/projection.py).
    attributes: frozenset[str] = frozenset()
    # Runs somewhere else than the evaluator's thread (a plug-in: checks/plugins/isolate.py).
    isolated: ClassVar[bool] = False
    # Who made its results, and the digest of its rules, when not the ruleset's (a plug-in,
    # a rules file): what evaluation records name (export/spans/annotate.py).
    evaluator: str = ""
    digest: str = ""
    # What the check reads of a run (model/unread.py: ``STEPS``, ``ANSWER``,
    # ``FINISH_REASONS``), in the order a reason is chosen: where a run's spans carry agent
    # work no convention read and it leaves one of these incomplete, a result that passed
    # is undecided instead (``held_to_what_was_read``). All of them unless a check says
    # less: a plug-in that does not say is held to every one.
    reads: ClassVar[tuple[str, ...]] = INPUTS
    # Whether every finding of the check is evidence it saw (a denied argument, three
    # identical calls, a cut-off finish reason): such a finding stands when other work of the
    # run was not read. A finding that rests on an absence (no later success, no answer, a
    # required call never made) is undecided instead: the unread work may hold what is absent.
    fires_on_evidence: ClassVar[bool] = False
    # The checks whose results ``finish`` gives, when it gives several (a list of them, in
    # this order: a rules file's, one per rule): each is a check of its own to everything a
    # result goes to (its name, severity, metrics, early findings), this one none of them.
    members: tuple[Check, ...] = ()

    def start(self) -> Any:
        return None

    def observe(self, state: Any, span: SpanRecord) -> str | None:
        return None

    def observe_spans(self, state: Any, spans: Sequence[SpanRecord], lo: int, hi: int) -> tuple[int, str] | None:
        """``observe`` on ``spans[lo:hi]`` (spans of one trace, in arrival order), every one
        of them: the first that fired, as (its index, the reason), or None."""
        first = None
        observe = self.observe
        for i in range(lo, hi):
            reason = observe(state, spans[i])
            if reason and first is None:
                first = (i, reason)
        return first

    @abstractmethod
    def finish(self, state: Any, run: Run) -> CheckResult:
        """The verdict on a completed run."""

    def result(self, fired: bool, reason: str, confidence: float = 1.0) -> CheckResult:
        return CheckResult(self.name, fired, confidence, reason, self.severity, self.kind)

    def held_to_what_was_read(self, result: CheckResult, unread: UnreadWork, run: Run | None = None) -> CheckResult:
        """``result``, or undecided when it passed, or fired on an absence
        (``fires_on_evidence``), on an input the run did not let the reader see (``unread``:
        the run's ``Run.unread``). A finding on evidence stands: it fired on what was read.
        ``run``: the run, for a check that can tell more closely where the unread work lies."""
        if result.undecided or (result.fired and self.fires_on_evidence):
            return result
        reasons = unread.reasons
        for what in self.reads:
            why = reasons.get(what)
            if why is not None:
                return self.undecided(why)._replace(agent=result.agent)
        return result

    def undecided(self, missing: str) -> CheckResult:
        """Neither fired nor passed: ``missing`` names the input the run did not capture."""
        return CheckResult(self.name, False, 0.0, f"undecided: {missing}", self.severity, self.kind, undecided=True)


def each(checks: Sequence[Check]) -> list[Check]:
    """The checks whose results ``checks`` give, in order: a check of several as its
    ``members``."""
    return [m for c in checks for m in (c.members or (c,))]
