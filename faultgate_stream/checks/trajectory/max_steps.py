"""trajectory.max_steps (soft): more tool calls than the spec's step budget.

A budget, not correctness: step counts vary run to run, so it is soft (a gate fails it
only when most runs of a case do). It is also what catches loops, including retries of a
failing tool, which ``no_repeat`` deliberately lets through.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.trajectory.common import steps_word
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult, Severity


class MaxSteps(Check):
    name = "trajectory.max_steps"
    reads = (STEPS,)
    fires_on_evidence = True
    kind = "spec"
    description = "The run made more tool calls than the spec's step budget."
    severity = Severity.SOFT

    def __init__(self, max_steps: int) -> None:
        self.max_steps = max_steps

    def finish(self, state: Any, run: Run) -> CheckResult:
        n = len(run.steps)
        if n > self.max_steps:
            over = run.steps[self.max_steps]
            return self.result(True, f"{steps_word(n)} > max_steps {self.max_steps}: "
                                     f"over budget from step {over.index} ({over.tool})")
        return self.result(False, f"{steps_word(n)} within max_steps {self.max_steps}")
