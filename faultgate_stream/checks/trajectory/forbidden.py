"""trajectory.forbidden (hard): a call to a tool the spec forbids.

A forbidden tool is usually attached to the agent (that is why it can be called at all)
but wrong for this task: ``issue_refund`` on a case over the refund limit, which a human
must approve. One call is enough; it is decidable from the span that makes it, so it fires
early.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.trajectory.common import called, listing
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult, Severity


class Forbidden(Check):
    name = "trajectory.forbidden"
    reads = (STEPS,)
    fires_on_evidence = True
    kind = "spec"
    description = "A tool the spec forbids for this task was called."
    severity = Severity.HARD

    def __init__(self, forbidden: tuple[str, ...]) -> None:
        self.forbidden = frozenset(forbidden)

    def observe(self, state: Any, span: SpanRecord) -> str | None:
        hit = next((n for n in called(span) if n in self.forbidden), None)
        return f"span {span.span_id}: {hit} called but forbidden" if hit else None

    def finish(self, state: Any, run: Run) -> CheckResult:
        first: dict[str, int] = {}
        calls: dict[str, int] = {}
        for st in run.steps:
            if st.tool in self.forbidden:
                first.setdefault(st.tool, st.index)
                calls[st.tool] = calls.get(st.tool, 0) + 1
        if first:
            return self.result(True, listing([
                f"step {i}: {tool} called but forbidden" + (f" ({calls[tool]} calls)" if calls[tool] > 1 else "")
                for tool, i in first.items()]))
        return self.result(False, f"no forbidden tool called in {len(run.steps)} calls")
