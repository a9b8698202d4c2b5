"""unrecovered_tool_error: a tool call failed and the same tool never succeeded afterwards.

Two signals, in order: a step whose result is a structural error (``signals``) with no
later successful call to the same tool; else a span whose status says error with no later
successful tool span. FAULTLINE P18 (via faultgate): recall 0.57, kappa 0.54; it misses
plain-text errors and run-ending API failures.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.signals import span_error, structural_error
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult


class UnrecoveredToolError(Check):
    name = "unrecovered_tool_error"
    description = "A tool call produced a structural error and the tool was never used successfully afterwards."

    def finish(self, state: Any, run: Run) -> CheckResult:
        steps = run.steps
        failed = [structural_error(st.result) for st in steps]
        for i, st in enumerate(steps):
            if failed[i] and not any(later.tool == st.tool and not failed[j]
                                     for j, later in enumerate(steps[i + 1:], start=i + 1)):
                return self.result(True, f"Tool '{st.tool}' failed at step {st.index} ({failed[i]}) and no "
                                         f"subsequent call to '{st.tool}' succeeded.")
        step_failed: dict[str, list[bool]] = {}
        for st, f in zip(steps, failed):
            step_failed.setdefault(st.span_id, []).append(bool(f))
        spans = run.spans
        for i, s in enumerate(spans):
            err = span_error(s)
            if not err:
                continue
            # recovered: a later span that did not fail ran tool calls that all succeeded
            if not any(not span_error(later) and later.span_id in step_failed and not any(step_failed[later.span_id])
                       for later in spans[i + 1:]):
                return self.result(True, f"Unrecovered span error at span {i + 1} of {len(spans)}: {err}")
        return self.result(False, "no unrecovered tool errors")
