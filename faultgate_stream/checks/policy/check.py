"""The ``policy`` check: every violation of the policy across the run's tool calls, by step.

Without a policy file only the default ``deny_patterns`` apply.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.policy.deny_patterns import DenyPatterns
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult


class PolicyCheck(Check):
    name = "policy"
    description = ("A tool call broke the policy: an argument matched a denied pattern (path traversal, "
                   "file URLs, credential files, procfs).")

    def __init__(self, deny: DenyPatterns | None = None) -> None:
        self.deny = deny or DenyPatterns()

    def observe(self, state: Any, span: SpanRecord) -> str | None:
        args = [span.tool.arguments] if span.tool is not None else []
        args += [c.arguments for c in span.calls]
        for a in args:
            pattern = self.deny.first_match(a)
            if pattern:
                return f"span {span.span_id}: argument matches denied pattern {pattern!r}"
        return None

    def finish(self, state: Any, run: Run) -> CheckResult:
        bad = []
        for st in run.steps:
            pattern = self.deny.first_match(st.arguments)
            if pattern:
                bad.append(f"step {st.index}: argument matches denied pattern {pattern!r}")
        if bad:
            return self.result(True, "; ".join(bad))
        return self.result(False, f"{len(run.steps)} calls within policy")
