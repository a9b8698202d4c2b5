"""search_loop: the run ended with no answer at its step budget, and most tool calls came
back empty.

Calibrated by faultgate on FAULTLINE P4 human labels: kappa 0.98 (n=200), 1.00 on the P5
test split. ponytail: the cap of 12 is FAULTLINE's; a run that names its cap in
``faultgate.termination`` is caught at any cap, a silent cap below 12 is missed.

The rule (compiled, native/core/src/checks/search_loop.rs): a run with an answer, or without
tool calls, passes. It is capped when ``faultgate.termination`` names a step cap ("step
cap", "step limit", "max steps", "max_steps", "max iterations", "iteration limit") or it
made 12 calls or more, and fires when capped with at least half its results empty
(``signals.empty_result``). At the cap, results the run did not record decide nothing
unless, empty or not, they could move the share across one half (then it is undecided).
"""
from __future__ import annotations

from typing import Any

from faultgate_stream import _native
from faultgate_stream.checks.base import Check
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import ANSWER, STEPS
from faultgate_stream.model.verdict import CheckResult


class SearchLoop(Check):
    name = "search_loop"
    reads = (STEPS, ANSWER)
    description = "Run ended with no answer at the step budget and most tool calls returned nothing."

    def __init__(self) -> None:
        self._outcomes = _native.Outcomes(CheckResult, self.name, self.severity, self.kind)

    def finish(self, state: Any, run: Run) -> CheckResult:
        return _native.search_loop(run, self._outcomes)
