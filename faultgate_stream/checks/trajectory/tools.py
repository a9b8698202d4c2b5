"""trajectory.tools (hard): a call to a tool outside the spec's vocabulary.

A call outside ``tools`` is a hallucinated tool, or a renamed one: in n8n a tool's name is
its node's name, and nodes get renamed freely. With ``tools`` set, a rename shows up here
as an unknown tool instead of as a mysterious missing ``required`` one. Decidable from the
one span that makes the call, so it fires early.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.trajectory.common import called, listing
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult, Severity


class Tools(Check):
    name = "trajectory.tools"
    reads = (STEPS,)
    fires_on_evidence = True
    kind = "spec"
    description = "A tool outside the spec's vocabulary was called (hallucinated or renamed)."
    severity = Severity.HARD

    def __init__(self, tools: tuple[str, ...]) -> None:
        self.tools = frozenset(tools)

    def observe(self, state: Any, span: SpanRecord) -> str | None:
        unknown = next((n for n in called(span) if n not in self.tools), None)
        return f"span {span.span_id}: {unknown} called but not in tools" if unknown else None

    def finish(self, state: Any, run: Run) -> CheckResult:
        first: dict[str, int] = {}
        calls: dict[str, int] = {}
        for st in run.steps:
            if st.tool not in self.tools:
                first.setdefault(st.tool, st.index)
                calls[st.tool] = calls.get(st.tool, 0) + 1
        if first:
            return self.result(True, listing([
                f"step {i}: {tool} called but not in tools" + (f" ({calls[tool]} calls)" if calls[tool] > 1 else "")
                for tool, i in first.items()]))
        return self.result(False, f"{len(run.steps)} calls, all in tools")
