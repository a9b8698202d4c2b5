"""trajectory.ground (warn): an identifier-shaped argument value that traces to nothing:
not in the user's input, not in any earlier tool result.

Grounding traces through tool results, so an order id discovered mid-run is legitimate;
only a value that appeared nowhere before the call is flagged: the agent invented it.

Warn-only, and it stays that way: provenance is substring-based and false-positives on
enum values the model legitimately knows ("high", "pending", "urgent" appear in no prior
text but are not invented). A hard failure would break builds on correct behaviour. It is
still a finding, because a fabricated id that happened to work is exactly a lucky run.

A run that records no user input (an OpenInference export of tool spans only) has nothing
to ground against: every id the user gave would read as invented, so the check does not
decide it. When the provenance bound is reached, that is reported, as a warning here.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.trajectory.common import listing
from faultgate_stream.checks.trajectory.provenance import provenance
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult, Severity


class Ground(Check):
    name = "trajectory.ground"
    reads = (STEPS,)
    kind = "spec"
    description = "An identifier-shaped argument appears in neither the input nor any earlier tool result."
    severity = Severity.WARN

    def finish(self, state: Any, run: Run) -> CheckResult:
        if not run.prompt.strip():
            return self.result(False, "the run records no user input: nothing to ground its arguments against")
        p = provenance(run)
        found = [f"step {t.step.index}: {t.where} appears in neither the input nor an earlier result"
                 for t in p.traced if not t.grounded]
        parts = ([listing(found)] if found else []) + ([p.bound_note] if p.bounded else [])
        if parts:
            return self.result(True, "; ".join(parts))
        return self.result(False, f"{len(p.traced)} identifier-shaped arguments all traced to the input or a result")
