"""The shape every per-call business rule has, so ``check`` can run them in one loop."""
from __future__ import annotations

from typing import ClassVar, Protocol

from faultgate_stream.checks.policy.facts import Calls


class CallRule(Protocol):
    """Judges ``ctx.calls[i]``, given the calls before it. Built once from a policy and
    shared by every run, so it keeps no per-run state.

    ``tools``: the tools whose calls it judges (the loop skips the rest without a call);
    ``None`` for every tool.
    ``history``: it reads earlier calls (those to the tools in its ``reads``), so a
    verdict reached while a run is still arriving is provisional (a call that started
    earlier may arrive later); one that does not is final the moment the call arrives."""

    tools: frozenset[str] | None
    history: ClassVar[bool]

    def check(self, ctx: Calls, i: int) -> list[str]: ...


def by_tool(entries: tuple) -> dict[str, list]:
    """Entries keyed by their ``tool``, each tool's in policy order."""
    out: dict[str, list] = {}
    for e in entries:
        out.setdefault(e.tool, []).append(e)
    return out
