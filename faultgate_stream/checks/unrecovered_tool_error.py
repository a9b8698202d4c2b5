"""unrecovered_tool_error: a tool call failed and the same tool never succeeded afterwards.

Two signals, in order: a step whose result is a structural error (``signals``) with no
later successful call to the same tool, or to one of its declared alternatives; else a
span whose status says error with no later successful tool span. A tool span that failed
by its status alone is made good only by a later successful call of the same tool (or an
alternative): another tool working afterwards leaves the call it failed undone.

Alternatives come from a policy: tools named together in one ``requires[].after`` list
stand in for each other (two ways to find the user). A failed email lookup made good by a
successful name-and-zip lookup is a recovery, not an unrecovered error: that is the
commonest legitimate recovery in tau2 retail (``ok-failed-auth-then-retry``), which
faultgate 0.4.1 flags and its own author labels valid. Without a policy there are no
alternatives and the check is faultgate's. FAULTLINE P18 (via faultgate): recall 0.57, kappa 0.54; it misses
plain-text errors and run-ending API failures.

Compiled: native/core/src/checks/unrecovered_tool_error.rs.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faultgate_stream import _native
from faultgate_stream.checks.base import Check
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS, UnreadWork
from faultgate_stream.model.verdict import CheckResult


class UnrecoveredToolError(Check):
    name = "unrecovered_tool_error"
    reads = (STEPS,)
    description = "A tool call produced a structural error and the tool was never used successfully afterwards."

    def __init__(self, alternatives: Mapping[str, frozenset[str]] | None = None) -> None:
        self.alternatives = dict(alternatives or {})
        self._outcomes = _native.Outcomes(CheckResult, self.name, self.severity, self.kind)

    def finish(self, state: Any, run: Run) -> CheckResult:
        return _native.unrecovered_tool_error(run, self.alternatives, self._outcomes)

    def held_to_what_was_read(self, result: CheckResult, unread: UnreadWork, run: Run | None = None) -> CheckResult:
        # The finding rests on an absence: no later success. Unread work that began before
        # the run's first failure cannot be that success (a failed span no convention read,
        # alone in its run, is still a failure nothing made good), so the finding stands.
        if result.fired and run is not None and unread.latest_start_ns <= _first_failure_ns(run):
            return result
        return super().held_to_what_was_read(result, unread, run)


def _first_failure_ns(run: Run) -> int:
    """When the earliest span that may hold the finding's failure began: one whose status says
    error, or any tool step (its result may be a structural error)."""
    starts = [s.start_ns for s in run.spans if s.status_code == 2 or s.tool is not None]
    return min(starts, default=0)
