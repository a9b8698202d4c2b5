"""identity: an argument must equal the run's authenticated principal.

The principal is a root-span attribute (``session_attr``, default ``enduser.id``). Only
calls that carry the argument are checked, optionally only calls to ``tools``. It fails
closed: with no such root attribute the call cannot be verified, which is a violation; so
are unreadable arguments on a listed tool, or on any tool (no ``tools`` list) when the
argument's name shows in the text.

While a run is still arriving, a call is checked when it arrives only if its root has
already been observed (``Calls.root`` is then known); otherwise the run's verdict decides.
"""
from __future__ import annotations

from typing import ClassVar

from faultgate_stream.checks.policy.facts import ABSENT, UNKNOWN, Calls, as_text
from faultgate_stream.checks.policy.schema import Identity


class IdentityRule:
    history: ClassVar[bool] = False

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.tools = identity.tools  # None: every tool
        # the name as it would show in unreadable argument text ("customer_id" of "who.customer_id")
        self._leaf = identity.arg.split(".")[-1]

    def check(self, ctx: Calls, i: int) -> list[str]:
        c, ident = ctx.calls[i], self.identity
        if c.args is None:
            if ident.tools is not None or self._leaf in c.arguments:
                return [f"{c.where}: {c.tool} arguments are not a JSON object, cannot check {ident.arg}"]
            return []
        raw = c.value(ident.arg)
        if raw is ABSENT or ctx.root is UNKNOWN:
            return []
        session = ctx.root.attrs.get(ident.session_attr) if ctx.root is not None else None
        if session is None:
            return [f"{c.where}: cannot verify {ident.arg}, root span has no {ident.session_attr}"]
        if as_text(raw) != as_text(session):
            return [f"{c.where}: {c.tool}.{ident.arg} {as_text(raw)!r} != session {ident.session_attr} "
                    f"{as_text(session)!r}"]
        return []
