"""confirmation: listed mutations need the user's confirmation, recorded structurally.

Either an earlier successful call to the ``by`` tool (for the same ``same_arg`` value,
when set), or the attribute ``faultgate.confirmed = true`` on the mutation's own span.
Deliberately not the dialogue: a "yes" in free text is not read, because a rule cannot
tell a confirmation from a question that contains the word.

Like ``requires``, this is order-dependent: while a run is still arriving, a missing
confirmation means none observed so far, and the run's verdict decides.
"""
from __future__ import annotations

from typing import ClassVar

from faultgate_stream.checks.policy.facts import Calls
from faultgate_stream.checks.policy.schema import Confirmation


class ConfirmationRule:
    history: ClassVar[bool] = True

    def __init__(self, confirmation: Confirmation) -> None:
        self.confirmation = confirmation
        self.tools = confirmation.tools
        self.reads = frozenset({confirmation.by})

    def check(self, ctx: Calls, i: int) -> list[str]:
        c, conf = ctx.calls[i], self.confirmation
        if c.confirmed:
            return []
        mine = None
        if conf.same_arg is not None:
            mine = c.key(conf.same_arg)
            if mine is None:
                return [f"{c.where}: {c.tool} has no readable {conf.same_arg}, cannot match it to a {conf.by}"]
        for j in ctx.earlier((conf.by,), i):
            e = ctx.calls[j]
            if e.succeeded and (mine is None or e.key(conf.same_arg) == mine):  # type: ignore[arg-type]
                return []
        scope = f" for the same {conf.same_arg} {mine!r}" if conf.same_arg is not None else ""
        return [f"{c.where}: {c.tool} without an earlier successful {conf.by}{scope} "
                "(or faultgate.confirmed = true on its span)"]
