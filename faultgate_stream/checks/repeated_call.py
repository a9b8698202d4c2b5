"""repeated_call: the same tool with the same arguments called three times in a row of
its own calls, with identical results: the agent repeated itself without progress.

FAULTLINE P18 (via faultgate): kappa 0.95 against a blind second rater on 97 real runs.

The rule (native/core/src/checks/repeated_call.rs): steps are grouped by tool and canonical
arguments (``signals.canonical_arguments``: key order, layout and number spelling do not
count), and three consecutive calls of a group whose results are equal after white space
folding (``signals.squash``) fire, naming the first such group in the order its calls
began. A tool with a call whose arguments or result were not recorded is not judged (an
unrecorded call reads as "" and would repeat any other); with three calls of such a tool
the run is undecided.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream import _native
from faultgate_stream.checks.base import Check
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult


class RepeatedCall(Check):
    name = "repeated_call"
    reads = (STEPS,)
    fires_on_evidence = True
    description = "Same tool and arguments called >=3 times with identical results."

    def __init__(self) -> None:
        self._outcomes = _native.Outcomes(CheckResult, self.name, self.severity, self.kind)

    def finish(self, state: Any, run: Run) -> CheckResult:
        return _native.repeated_call(run, self._outcomes)
