"""repeated_call: the same tool with the same arguments called three times in a row of
its own calls, with identical results: the agent repeated itself without progress.

FAULTLINE P18 (via faultgate): kappa 0.95 against a blind second rater on 97 real runs.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.signals import canonical_arguments, squash
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult

MIN_REPEATS = 3


class RepeatedCall(Check):
    name = "repeated_call"
    description = "Same tool and arguments called >=3 times with identical results."

    def finish(self, state: Any, run: Run) -> CheckResult:
        steps = run.steps
        if len(steps) < MIN_REPEATS:
            return self.result(False, "fewer than 3 tool calls")
        squashed = [squash(st.result) for st in steps]
        # Three calls with identical results share a tool and a squashed result, so only the
        # tools with such a triple can fire. Canonical arguments (a JSON round trip each) are
        # needed for those tools' steps alone; the groups of the other tools, which the full
        # scan below would have visited in between, hold no triple.
        seen: dict[tuple[str, str], int] = {}
        for st, res in zip(steps, squashed):
            seen[st.tool, res] = seen.get((st.tool, res), 0) + 1
        candidates = {tool for (tool, _), n in seen.items() if n >= MIN_REPEATS}
        if not candidates:
            return self.result(False, "no repeated calls without progress")
        canonical: dict[str, str] = {}  # one round trip per distinct argument text
        same_call: dict[tuple[str, str], list[int]] = {}
        for i, st in enumerate(steps):
            if st.tool not in candidates:
                continue
            args = canonical.get(st.arguments)
            if args is None:
                args = canonical[st.arguments] = canonical_arguments(st.arguments)
            same_call.setdefault((st.tool, args), []).append(i)
        for (tool, args), idx in same_call.items():
            for a, b, c in zip(idx, idx[1:], idx[2:]):
                if squashed[a] == squashed[b] == squashed[c]:
                    return self.result(True, (
                        f"Tool '{tool}' with arguments {args[:60]} issued >= 3 times (steps {steps[a].index}, "
                        f"{steps[b].index}, {steps[c].index}) where all 3 responses are identical after "
                        "whitespace normalization."))
        return self.result(False, "no repeated calls without progress")
