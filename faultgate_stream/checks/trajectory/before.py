"""trajectory.before (hard): for a pair ``[a, b]``, the first ``b`` came before the first
``a``, or ``b`` was called and ``a`` never was.

First occurrence on purpose: with repeated calls any other rule is arbitrary. Decided at
the end over the steps in start order, so the order spans arrived in cannot change it.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.trajectory.common import listing
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult, Severity


class Before(Check):
    name = "trajectory.before"
    reads = (STEPS,)
    kind = "spec"
    description = "An ordering the spec requires was broken: the first b came before the first a, or without any a."
    severity = Severity.HARD

    def __init__(self, pairs: tuple[tuple[str, str], ...]) -> None:
        self.pairs = pairs

    def finish(self, state: Any, run: Run) -> CheckResult:
        first: dict[str, int] = {}
        for st in run.steps:
            first.setdefault(st.tool, st.index)
        broken = []
        for a, b in self.pairs:
            if b not in first:
                continue
            if a not in first:
                broken.append(f"step {first[b]}: {b} called without {a}")
            elif first[a] > first[b]:
                broken.append(f"step {first[b]}: {b} called before {a} (first {a} at step {first[a]})")
        if broken:
            return self.result(True, listing(broken))
        n = len(self.pairs)
        return self.result(False, f"{n} ordering{'s' if n > 1 else ''} kept")
