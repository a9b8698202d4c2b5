"""trajectory.required (hard): a tool the spec requires was never called.

Missing a required tool is the wrong tool for the job (refunding without checking the
policy), and only the whole run can show it, so it is decided at the end.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult, Severity


class Required(Check):
    name = "trajectory.required"
    reads = (STEPS,)
    kind = "spec"
    description = "A tool the spec requires was never called."
    severity = Severity.HARD

    def __init__(self, required: tuple[str, ...]) -> None:
        self.required = tuple(dict.fromkeys(required))

    def finish(self, state: Any, run: Run) -> CheckResult:
        seen = {st.tool for st in run.steps}
        missing = [t for t in self.required if t not in seen]
        if missing:
            return self.result(True, "; ".join(f"{t} required but never called" for t in missing))
        return self.result(False, "every required tool called")
