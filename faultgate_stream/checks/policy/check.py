"""The ``policy`` check: every violation of the policy across the run's tool calls, by step.

Without a policy file only the default ``deny_patterns`` apply.
"""
from __future__ import annotations

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

    def start(self) -> dict[str, str | None]:
        # argument text -> the first denied pattern it matches: what ``observe`` found, so
        # ``finish`` does not run every pattern over the same arguments again
        return {}

    def _first_match(self, seen: dict[str, str | None], arguments: str) -> str | None:
        if arguments in seen:
            return seen[arguments]
        pattern = seen[arguments] = self.deny.first_match(arguments)
        return pattern

    def observe(self, state: dict[str, str | None], span: SpanRecord) -> str | None:
        args = [span.tool.arguments] if span.tool is not None else []
        args += [c.arguments for c in span.calls]
        for a in args:
            pattern = self._first_match(state, a)
            if pattern:
                return f"span {span.span_id}: argument matches denied pattern {pattern!r}"
        return None

    def finish(self, state: dict[str, str | None], run: Run) -> CheckResult:
        bad = []
        for st in run.steps:
            pattern = self._first_match(state, st.arguments)
            if pattern:
                bad.append(f"step {st.index}: argument matches denied pattern {pattern!r}")
        if bad:
            return self.result(True, "; ".join(bad))
        return self.result(False, f"{len(run.steps)} calls within policy")
