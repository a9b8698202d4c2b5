"""Call budgets: ``max_calls`` for the run, ``max_calls_per_arg`` per argument value.

``max_calls`` counts every tool call (a budget loop). Calls only add up, so it fires when
the call over the budget arrives.

``max_calls_per_arg`` counts successful calls per value of one argument: at most ``max``
item changes per order. A call whose result is an error (a structural error, as
``signals`` reads it) changed nothing and is not counted: an agent that fixes a bad item
id and retries changed the order once. A call without a readable ``arg`` cannot be
counted, and is a violation. Decided over the whole run.
"""
from __future__ import annotations

from faultgate_stream.checks.policy.facts import Calls
from faultgate_stream.checks.policy.schema import PerValueBudget


def max_calls_reason(n: int, limit: int) -> str:
    return f"{n} tool calls > max {limit}"


class PerValueBudgets:
    def __init__(self, budgets: tuple[PerValueBudget, ...]) -> None:
        self.budgets = budgets

    def check(self, ctx: Calls, indexes: list[int]) -> list[str]:
        """Reasons for the calls of ``ctx`` over a budget; ``indexes`` are their step numbers."""
        bad: list[str] = []
        for b in self.budgets:
            seen: dict[str, list[int]] = {}
            for j in ctx.earlier(b.tools, len(ctx.calls)):
                c = ctx.calls[j]
                if c.failed:
                    continue
                v = c.key(b.arg)
                if v is None:
                    bad.append(f"{c.where}: {c.tool} has no readable {b.arg}, cannot count it against max {b.max} "
                               f"per {b.arg}")
                    continue
                steps = seen.setdefault(v, [])
                steps.append(indexes[j])
                if len(steps) == b.max + 1:
                    bad.append(f"{c.where}: {len(steps)} successful {'/'.join(sorted(b.tools))} calls for {b.arg} "
                               f"{v!r} > max {b.max} (steps {', '.join(map(str, steps))})")
        return bad
