"""trajectory.no_repeat (soft): an identical call (same tool, same arguments in canonical
form) repeating work that already succeeded.

A retry after a failure is correct behaviour, so only a call that already SUCCEEDED makes
a later identical one a repeat. Without this every well-built agent would fail for
handling a transient error. A call failed when its span says so or its result is an error
(a JSON ``error``, a non-zero exit code, an ``Error:`` prefix): the same reading
``unrecovered_tool_error`` uses.

Endless retries of a failing tool are left to ``max_steps``, which is what catches loops.
Add a retry cap only if that proves too weak.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.signals import canonical_arguments, step_errors
from faultgate_stream.checks.trajectory.common import listing
from faultgate_stream.checks.trajectory.secrets import shapes_in
from faultgate_stream.model.reason import quoted, reason
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult, Severity


class NoRepeat(Check):
    name = "trajectory.no_repeat"
    reads = (STEPS,)
    fires_on_evidence = True
    kind = "spec"
    description = "An identical call repeated work that had already succeeded (retries after a failure excepted)."
    severity = Severity.SOFT

    def finish(self, state: Any, run: Run) -> CheckResult:
        errors = step_errors(run)
        done: dict[tuple[str, str], int] = {}   # (tool, canonical arguments) -> the step that succeeded
        canonical: dict[str, str] = {}          # one decode per distinct argument text
        repeats = []
        for st, error in zip(run.steps, errors):
            args = canonical.get(st.arguments)
            if args is None:
                args = canonical[st.arguments] = canonical_arguments(st.arguments)
            key = (st.tool, args)
            if key in done:
                # arguments are quoted, unless they hold a credential: that stays out of reasons
                shown = "<arguments withheld: credential-shaped>" if shapes_in(args) else quoted(args, 60)
                repeats.append(reason(f"step {st.index}: {st.tool}(", shown, f") repeats step {done[key]}, "
                                      "which succeeded"))
            elif st.ok and not error:
                done[key] = st.index
        if repeats:
            n = len(repeats)
            return self.result(True, f"{n} repeated call{'s' if n > 1 else ''}: {listing(repeats)}")
        return self.result(False, f"no call repeated successful work in {len(run.steps)} calls")
