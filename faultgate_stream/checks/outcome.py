"""outcome: the user's own evaluator marked the run failed.

The outcome comes, first found wins, from an outcomes file (keyed like golden answers),
a ``faultgate.outcome`` attribute on the run's root span, or an incoming
``gen_ai.evaluation.result`` event named ``outcome`` (another evaluator's, on the root or
any span of the run; label pass/fail, else score >= 0.5 passes). A run with no
outcome is not judged (confidence 0). Not in the default set unless outcomes are given,
so default reports keep faultgate's check set.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.expectations import Outcomes
from faultgate_stream.model.run import Run
from faultgate_stream.read.events import EVALUATIONS
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


EVALUATION_NAMES = ("outcome",)
_PASS_LABELS = ("pass", "passed", "success", "true")
_FAIL_LABELS = ("fail", "failed", "failure", "false")


def event_outcome(run: Run, names: tuple[str, ...] = EVALUATION_NAMES) -> bool | None:
    spans = ([run.root] if run.root is not None else []) + [s for s in run.spans if s is not run.root]
    for s in spans:
        for name, label, score in s.attrs.get(EVALUATIONS, ()):
            if name not in names:
                continue
            if label in _PASS_LABELS or label in _FAIL_LABELS:
                return label in _PASS_LABELS
            if score is not None:
                return score >= 0.5
    return None


class Outcome(Check):
    name = "outcome"
    reads = ()
    kind = "outcome"
    attributes = frozenset({OUTCOME_ATTR, EVALUATIONS})
    description = ("The user's own evaluator marked the scenario failed (needs --outcomes, a faultgate.outcome "
                   "attribute, or an incoming gen_ai.evaluation.result named outcome).")

    def __init__(self, outcomes: Outcomes | None = None) -> None:
        self.outcomes = outcomes or Outcomes()

    def finish(self, state: Any, run: Run) -> CheckResult:
        ok = self.outcomes.outcome(run)
        source = "in the outcomes file"
        if ok is None:
            ok, source = attribute_outcome(run), f"in the root's {OUTCOME_ATTR} attribute"
        if ok is None:
            ok, source = event_outcome(run), "in an incoming gen_ai.evaluation.result event"
        if ok is None:
            return self.result(False, "no outcome for this scenario", 0.0)
        return self.result(not ok, f"outcome {'true' if ok else 'false'} {source}")
