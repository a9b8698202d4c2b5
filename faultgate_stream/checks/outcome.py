"""outcome: the user's own evaluator marked the run failed.

The outcome comes from an outcomes file (keyed like golden answers) or, for a live
stream, from a ``faultgate.outcome`` attribute on the run's root span. A run with no
outcome is not judged (confidence 0). Not in the default set unless outcomes are given,
so default reports keep faultgate's check set.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.expectations import Outcomes
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult

OUTCOME_ATTR = "faultgate.outcome"
_TRUE = ("true", "pass", "passed", "success", "1")
_FALSE = ("false", "fail", "failed", "failure", "0")


def attribute_outcome(run: Run) -> bool | None:
    v = run.root.attrs.get(OUTCOME_ATTR) if run.root is not None else None
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v > 0
    if isinstance(v, str) and v.strip().lower() in _TRUE + _FALSE:
        return v.strip().lower() in _TRUE
    return None


class Outcome(Check):
    name = "outcome"
    kind = "outcome"
    description = "The user's own evaluator marked the scenario failed (needs --outcomes or a faultgate.outcome attribute)."

    def __init__(self, outcomes: Outcomes | None = None) -> None:
        self.outcomes = outcomes or Outcomes()

    def finish(self, state: Any, run: Run) -> CheckResult:
        ok = self.outcomes.outcome(run)
        source = "in the outcomes file"
        if ok is None:
            ok, source = attribute_outcome(run), f"in the root's {OUTCOME_ATTR} attribute"
        if ok is None:
            return self.result(False, "no outcome for this scenario", 0.0)
        return self.result(not ok, f"outcome {'true' if ok else 'false'} {source}")
