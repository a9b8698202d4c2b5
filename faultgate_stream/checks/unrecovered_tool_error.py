"""unrecovered_tool_error: a tool call failed and the same tool never succeeded afterwards.

Two signals, in order: a step whose result is a structural error (``signals``) with no
later successful call to the same tool, or to one of its declared alternatives; else a
span whose status says error with no later successful tool span.

Alternatives come from a policy: tools named together in one ``requires[].after`` list
stand in for each other (two ways to find the user). A failed email lookup made good by a
successful name-and-zip lookup is a recovery, not an unrecovered error: that is the
commonest legitimate recovery in tau2 retail (``ok-failed-auth-then-retry``), which
faultgate 0.4.1 flags and its own author labels valid. Without a policy there are no
alternatives and the check is faultgate's. FAULTLINE P18 (via faultgate): recall 0.57, kappa 0.54; it misses
plain-text errors and run-ending API failures.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.signals import span_error, step_errors
from faultgate_stream.model.reason import reason
from faultgate_stream.model.records import MISSING_TOOL_RESULT
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult


class UnrecoveredToolError(Check):
    name = "unrecovered_tool_error"
    description = "A tool call produced a structural error and the tool was never used successfully afterwards."

    def __init__(self, alternatives: Mapping[str, frozenset[str]] | None = None) -> None:
        self.alternatives = dict(alternatives or {})

    def finish(self, state: Any, run: Run) -> CheckResult:
        steps = run.steps
        failed = step_errors(run)
        # A failed step is recovered when a later call to its tool succeeded, that is when
        # the tool's last successful step comes after it: one pass instead of a scan of
        # every later step for each failure.
        last_ok: dict[str, int] = {}
        for j, st in enumerate(steps):
            if not failed[j]:
                last_ok[st.tool] = j
        for i, st in enumerate(steps):
            if failed[i] and max(last_ok.get(t, -1) for t in {st.tool, *self.alternatives.get(st.tool, ())}) < i:
                return self.result(True, reason(f"Tool '{st.tool}' failed at step {st.index} (", failed[i],
                                                f") and no subsequent call to '{st.tool}' succeeded."))
        spans = run.spans
        errors = [span_error(s) for s in spans]
        if not any(errors):
            return self._clean(run)
        # recovered: a later span that did not fail ran tool calls that all succeeded
        ran = {st.span_id for st in steps}
        ran_ok = ran - {st.span_id for st, f in zip(steps, failed) if f}
        last_good = max((j for j, s in enumerate(spans) if not errors[j] and s.span_id in ran_ok), default=-1)
        # A tool span that failed by its status alone is made good only by a later
        # successful call of the same tool (or a declared alternative): another tool working
        # afterwards leaves the call it failed undone.
        last_good_of: dict[str, int] = {}
        for j, s in enumerate(spans):
            if s.tool is not None and not errors[j] and s.span_id in ran_ok:
                last_good_of[s.tool.name] = j
        for i, err in enumerate(errors):
            if not err:
                continue
            tool = spans[i].tool
            if tool is not None:
                good = max(last_good_of.get(t, -1) for t in {tool.name, *self.alternatives.get(tool.name, ())})
            else:
                good = last_good
            if good < i:
                return self.result(True, f"Unrecovered span error at span {i + 1} of {len(spans)}: {err}")
        return self._clean(run)

    def _clean(self, run: Run) -> CheckResult:
        # an error said only in a result's text is invisible when results were not recorded
        gap = run.steps_not_captured(MISSING_TOOL_RESULT)
        return self.undecided(gap) if gap else self.result(False, "no unrecovered tool errors")
