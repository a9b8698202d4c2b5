"""search_loop: the run ended with no answer at its step budget, and most tool calls came
back empty.

Calibrated by faultgate on FAULTLINE P4 human labels: kappa 0.98 (n=200), 1.00 on the P5
test split. ponytail: the cap of 12 is FAULTLINE's; a run that names its cap in
``faultgate.termination`` is caught at any cap, a silent cap below 12 is missed.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.signals import empty_result
from faultgate_stream.model.records import MISSING_TOOL_RESULT
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult

STEP_CAP = 12
EMPTY_SHARE = 0.5
STEP_CAP_WORDS = ("step cap", "step limit", "max steps", "max_steps", "max iterations", "iteration limit")


class SearchLoop(Check):
    name = "search_loop"
    description = "Run ended with no answer at the step budget and most tool calls returned nothing."

    def finish(self, state: Any, run: Run) -> CheckResult:
        steps = run.steps
        if run.answer.strip():
            return self.result(False, "answered")
        if not steps:
            return self.result(False, "no tool calls")
        termination = run.termination.lower()
        capped = any(w in termination for w in STEP_CAP_WORDS) or len(steps) >= STEP_CAP
        # a looping run repeats its results: each distinct one is decoded once
        results = [s.result for s in steps]
        known = {r: empty_result(r) for r in set(results)}
        unseen = [bool(s.missing & MISSING_TOOL_RESULT) for s in steps]
        empty = sum([known[r] for r, u in zip(results, unseen) if not u]) / len(steps)
        if capped:
            # at the cap, the verdict turns on an answer and results the run may not have
            # recorded; results it did not record decide nothing when, empty or not, they
            # cannot move the share across the line (the last call of a run cut off by its
            # budget, whose result no later message carries)
            gap = run.answer_not_captured
            if not gap and any(unseen):
                at_most = empty + sum(unseen) / len(steps)
                if empty < EMPTY_SHARE <= at_most:
                    gap = run.steps_not_captured(MISSING_TOOL_RESULT)
            if gap:
                return self.undecided(gap)
        return self.result(capped and empty >= EMPTY_SHARE,
                           f"no answer, {len(steps)} steps{' (cap)' if capped else ''}, {empty:.0%} empty results")
