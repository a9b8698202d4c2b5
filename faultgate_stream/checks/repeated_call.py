"""repeated_call: the same tool with the same arguments called three times in a row of
its own calls, with identical results: the agent repeated itself without progress.

FAULTLINE P18 (via faultgate): kappa 0.95 against a blind second rater on 97 real runs.
"""
from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.signals import canonical_arguments, squash
from faultgate_stream.model.reason import quoted, reason
from faultgate_stream.model.records import MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT, Step
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult
from faultgate_stream.read.payload import loads

MIN_REPEATS = 3
_UNSURE = None  # a call key that may equal any other


def call_key(arguments: str) -> Hashable:
    """A key that is equal for two argument texts whenever their canonical forms are, and
    cheaper to get: one decode instead of a decode and a sorted re-encode (0.9 us against
    1.8 us on a search query). ``_UNSURE`` when it cannot tell.

    Equal canonical JSON means equal decoded values, type for type, so an object's string
    members are the same; a text that is not JSON is compared in its canonical form itself.
    """
    s = arguments.strip()
    if (s[:1], s[-1:]) not in (("{", "}"), ("[", "]")):
        return canonical_arguments(s)  # plain text: cheap, and never looks like JSON
    try:
        v = loads(s)
    except ValueError:
        return _UNSURE  # its canonical form is its text, which may read like someone's JSON
    if isinstance(v, dict):
        return frozenset([(k, x) for k, x in v.items() if type(x) is str])
    return len(v) if isinstance(v, list) else _UNSURE


def tools_that_may_repeat(steps: tuple[Step, ...], squashed: list[str]) -> set[str]:
    """Tools with three calls that may share their arguments and their result. Only these
    can fire, so only their steps need canonical arguments."""
    same_result: dict[tuple[str, str], list[Step]] = {}
    for st, res in zip(steps, squashed):
        same_result.setdefault((st.tool, res), []).append(st)
    tools: set[str] = set()
    for (tool, _), group in same_result.items():
        if len(group) < MIN_REPEATS or tool in tools:
            continue
        counts: dict[Hashable, int] = {}
        for st in group:
            key = call_key(st.arguments)
            counts[key] = counts.get(key, 0) + 1
        if _UNSURE in counts or max(counts.values()) >= MIN_REPEATS:
            tools.add(tool)
    return tools


class RepeatedCall(Check):
    name = "repeated_call"
    description = "Same tool and arguments called >=3 times with identical results."

    def finish(self, state: Any, run: Run) -> CheckResult:
        steps = run.steps
        if len(steps) < MIN_REPEATS:
            if run.calls_not_captured:  # three calls may have been made, unseen
                return self.undecided(run.calls_not_captured)
            return self.result(False, "fewer than 3 tool calls")
        # A step whose arguments or result were not recorded reads as "" and would repeat
        # any other such step: its tool is judged only when all its calls were recorded.
        blind = {st.tool for st in steps if st.missing}
        if blind:
            steps = tuple(st for st in steps if st.tool not in blind)
        folded = {r: squash(r) for r in {st.result for st in steps}}
        squashed = [folded[st.result] for st in steps]
        # Only those tools are grouped: the other tools' groups hold no triple, so leaving
        # them out cannot change which group fires first.
        tools = tools_that_may_repeat(steps, squashed)
        canonical: dict[str, str] = {}  # one round trip per distinct argument text
        same_call: dict[tuple[str, str], list[int]] = {}
        for i, st in enumerate(steps):
            if st.tool not in tools:
                continue
            args = canonical.get(st.arguments)
            if args is None:
                args = canonical[st.arguments] = canonical_arguments(st.arguments)
            same_call.setdefault((st.tool, args), []).append(i)
        for (tool, args), idx in same_call.items():
            for a, b, c in zip(idx, idx[1:], idx[2:]):
                if squashed[a] == squashed[b] == squashed[c]:
                    # the arguments are masked whole before they are cut (model/reason.py)
                    return self.result(True, reason(
                        f"Tool '{tool}' with arguments ", quoted(args, 60), f" issued >= 3 times (steps "
                        f"{steps[a].index}, {steps[b].index}, {steps[c].index}) where all 3 responses are "
                        "identical after whitespace normalization."))
        if blind and any(sum(st.tool == t for st in run.steps) >= MIN_REPEATS for t in blind):
            return self.undecided(run.steps_not_captured(MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT))
        return self.result(False, "no repeated calls without progress")
