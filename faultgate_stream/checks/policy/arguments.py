"""Rules on one call's arguments: ``max_arg_chars``, ``limits``, ``values``, ``required_args``.

Each reads only the call itself, so each is final when the call arrives. Each fails
closed: arguments that are not a JSON object cannot be checked, and that is a violation
for a tool the rule names. An argument that is simply absent is left to
``required_args``: ``limits`` and ``values`` judge an argument that is there.
"""
from __future__ import annotations

from typing import ClassVar

from faultgate_stream.checks.policy.facts import ABSENT, Call, Calls, as_text, empty, number
from faultgate_stream.checks.policy.rule import by_tool
from faultgate_stream.checks.policy.schema import AllowedValues, Limit, RequiredArgs


def _unreadable(c: Call, what: str) -> str:
    return f"{c.where}: {c.tool} arguments are not a JSON object, cannot check {what}"


class MaxArgChars:
    """The argument text of one call is at most ``limit`` characters (a query dump)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def check(self, call: Call) -> str | None:
        n = len(call.arguments)
        return f"{call.where}: arguments {n} chars > {self.limit}" if n > self.limit else None


class _PerTool:
    """A rule whose entries each name one tool: looked up by the call's tool."""

    history: ClassVar[bool] = False

    def __init__(self, rules: tuple) -> None:
        self._by_tool = by_tool(rules)
        self.tools = frozenset(self._by_tool)


class Limits(_PerTool):
    """A numeric bound on a dotted argument. Text such as ``"$1,200.50"`` is read as a
    number; anything else that is there but not a number is a violation."""

    def __init__(self, limits: tuple[Limit, ...]) -> None:
        super().__init__(limits)

    def check(self, ctx: Calls, i: int) -> list[str]:
        c = ctx.calls[i]
        bad = []
        for lim in self._by_tool.get(c.tool, ()):
            if c.args is None:
                bad.append(_unreadable(c, lim.arg))
                continue
            raw = c.value(lim.arg)
            if raw is ABSENT:
                continue
            n = number(raw)
            if n is None:
                bad.append(f"{c.where}: {c.tool}.{lim.arg} {raw!r} is not a number")
            elif lim.max is not None and n > lim.max:
                bad.append(f"{c.where}: {c.tool}.{lim.arg} {n:g} > max {lim.max:g}")
            elif lim.min is not None and n < lim.min:
                bad.append(f"{c.where}: {c.tool}.{lim.arg} {n:g} < min {lim.min:g}")
        return bad


class Values(_PerTool):
    """An argument, when present, is one of a fixed list (compared as text, the argument
    trimmed; the allowed values as written)."""

    def __init__(self, values: tuple[AllowedValues, ...]) -> None:
        super().__init__(values)

    def check(self, ctx: Calls, i: int) -> list[str]:
        c = ctx.calls[i]
        bad = []
        for rule in self._by_tool.get(c.tool, ()):
            if c.args is None:
                bad.append(_unreadable(c, rule.arg))
                continue
            raw = c.value(rule.arg)
            if raw is not ABSENT and as_text(raw) not in rule.allowed:
                bad.append(f"{c.where}: {c.tool}.{rule.arg} {as_text(raw)!r} not in allowed values")
        return bad


class Required(_PerTool):
    """Listed arguments are present and not empty (``""``, ``null``, ``[]``, ``{}``)."""

    def __init__(self, required: tuple[RequiredArgs, ...]) -> None:
        super().__init__(required)

    def check(self, ctx: Calls, i: int) -> list[str]:
        c = ctx.calls[i]
        bad = []
        for rule in self._by_tool.get(c.tool, ()):
            if c.args is None:
                bad.append(_unreadable(c, f"required {rule.args[0]}"))
                continue
            bad += [f"{c.where}: {c.tool} missing required argument {a}" for a in rule.args if empty(c.value(a))]
        return bad
