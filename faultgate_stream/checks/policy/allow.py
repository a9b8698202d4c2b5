"""allow: the tools the agent may call; a call to any other is a violation.

Off until a policy sets it. Decided by the call alone, so it fires when the call arrives.
"""
from __future__ import annotations

from faultgate_stream.checks.policy.facts import Call


class Allow:
    def __init__(self, allow: frozenset[str]) -> None:
        self.allow = allow

    def check(self, call: Call) -> str | None:
        if call.tool in self.allow:
            return None
        return f"{call.where}: tool {call.tool!r} not in allowlist"
