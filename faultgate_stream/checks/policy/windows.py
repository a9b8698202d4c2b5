"""Windowed budgets: ``max_calls`` and ``limits`` (``sum``) counted over a time window, a
session or an agent, not only over one run.

``max_calls: {max: 20, within: 10m, per: session}`` allows 20 tool calls in any 10
minutes of one session; ``limits: [{tool: issue_refund, arg: amount, sum: true, max: 1000,
within: 24h, per: session, by: customer_id}]`` allows refunds totalling 1000 per customer
per day of a session. ``per`` is ``run`` (the default: the run's own calls), ``session``
(``session.id``, else ``gen_ai.conversation.id``, on the run's root, else on its first
span that has one) or ``agent`` (``gen_ai.agent.name``, as the verdict names the agent).
Without ``within`` the count runs over everything the store holds for the key.

A call counts at its span's start time, never at its arrival: a call is over budget when
the total of the events in the ``within`` before it (its own included) exceeds ``max``.
Within a run that is decided over ``run.steps`` in start order, so shuffled or re-batched
spans give the same verdict. Earlier runs of the session reach the count through the
injected ``WindowStore``; the run's own events are recorded there when its verdict is made
(again, replacing them, when it is remade).

The budgets fail closed as their per-run siblings do: in a running total, an argument that
is there but not a number, or arguments that are not a JSON object, are violations, and an
absent argument does not count (``limits``); with ``by``, a call without a readable ``by``
cannot be counted and is a violation (``max_calls_per_arg``). A running total counts
successful calls only (a refund that failed moved no money); a call budget counts every
call, as ``max_calls`` does. A run with no session id is judged alone: it fires if its own
calls exceed the budget, and is otherwise undecided (the session's count was not seen).

Decided at the verdict, not early: the session id and the agent's name usually come with
the root span, the last to arrive.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

from faultgate_stream.checks.policy.facts import ABSENT, Calls, number
from faultgate_stream.checks.policy.schema import CallWindow, Limit
from faultgate_stream.checks.window_store import Event, Slice, StoreKey, WindowStore, bounded_value
from faultgate_stream.model.records import Step
from faultgate_stream.model.run import Run

SESSION_ATTRS = ("session.id", "gen_ai.conversation.id")
# Steps a reason lists; the count says how many there were.
SHOWN_STEPS = 10


def session_of(run: Run) -> str | None:
    """The run's session: ``session.id``, else ``gen_ai.conversation.id``, on its root,
    else on its first span (in start order) that carries one."""
    spans = ((run.root,) if run.root is not None else ()) + run.spans
    for name in SESSION_ATTRS:
        for s in spans:
            v = s.attrs.get(name)
            if v is not None and str(v).strip():
                return str(v).strip()
    return None


def _num(x: float) -> str:
    return f"{x:.12g}"


class _Budget:
    """One windowed budget, as the rule reads it."""

    __slots__ = ("ident", "tools", "arg", "max", "within", "within_ns", "scope", "by")

    def __init__(self, b: CallWindow | Limit) -> None:
        self.ident = repr(b)  # its definition: a reload that keeps the budget keeps its counts
        self.tools = frozenset((b.tool,)) if isinstance(b, Limit) else b.tools
        self.arg = b.arg if isinstance(b, Limit) else None  # None: a call budget (each call is 1)
        self.max = float(b.max) if b.max is not None else 0.0
        self.within, self.within_ns, self.scope, self.by = b.within, b.within_ns, b.scope, b.by

    def what(self, total: float) -> str:
        if self.arg is None:
            tools = "/".join(sorted(self.tools)) + " " if self.tools else "tool "
            return f"{_num(total)} {tools}calls > max {_num(self.max)}"
        (tool,) = self.tools
        return f"{tool}.{self.arg} total {_num(total)} > max {_num(self.max)}"

    def where(self, scope_value: str | None, value: str) -> str:
        out = f"within {self.within} " if self.within else ""
        out += f"per {self.scope}" + (f" {scope_value!r}" if scope_value is not None and self.scope != "run" else "")
        return out + (f" for {self.by} {value!r}" if self.by else "")


class WindowedBudgets:
    """Every windowed budget of a policy. ``store`` holds the counts of other runs; it is
    needed only by budgets counted per session or agent."""

    def __init__(self, budgets: Sequence[CallWindow | Limit], store: WindowStore | None, namespace: str = "") -> None:
        self.budgets = tuple(_Budget(b) for b in budgets)
        self.cross_run = any(b.scope != "run" for b in self.budgets)
        self.store = store if store is not None or not self.cross_run else WindowStore()
        self.namespace = namespace

    def check(self, ctx: Calls, steps: Sequence[Step], run: Run) -> tuple[list[str], str]:
        """(violations, why the run is undecided: "" when it is not)."""
        bad: list[str] = []
        gaps: list[str] = []
        for b in self.budgets:
            self._check(b, ctx, steps, run, bad, gaps)
        return bad, "; ".join(dict.fromkeys(gaps))

    def _check(self, b: _Budget, ctx: Calls, steps: Sequence[Step], run: Run, bad: list[str],
               gaps: list[str]) -> None:
        own: dict[str, list[tuple[int, float, int]]] = {}  # by-value -> (start ns, amount, step)
        untimed: list[int] = []
        positions = ctx.earlier(b.tools, len(ctx.calls)) if b.tools is not None else range(len(ctx.calls))
        for j in positions:
            c, st = ctx.calls[j], steps[j]
            amount = 1.0
            if b.arg is not None:
                if c.args is None:
                    bad.append(f"{c.where}: {c.tool} arguments are not a JSON object, cannot add {b.arg} to its total")
                    continue
                raw = c.value(b.arg)
                if raw is ABSENT:
                    continue
                n = number(raw)
                if n is None:
                    bad.append(f"{c.where}: {c.tool}.{b.arg} {raw!r} is not a number")
                    continue
                if c.failed:
                    continue
                amount = n
            value = ""
            if b.by is not None:
                v = c.key(b.by)
                if v is None:
                    bad.append(f"{c.where}: {c.tool} has no readable {b.by}, cannot count it against max "
                               f"{_num(b.max)} per {b.by}")
                    continue
                value = v
            if b.within_ns is not None and not st.start_ns:
                untimed.append(st.index)
                continue
            own.setdefault(value, []).append((st.start_ns, amount, st.index))
        if untimed:
            gaps.append(f"within {b.within}: no start time on step(s) {', '.join(map(str, untimed[:SHOWN_STEPS]))}")
        scope_value: str | None
        if b.scope == "run":
            scope_value = None
        elif b.scope == "session":
            scope_value = session_of(run)
        else:
            scope_value = run.agent
        alone = b.scope != "run" and scope_value is None
        fired = False
        for value, events in own.items():
            found: Slice | None = None
            if b.scope != "run" and scope_value is not None and self.store is not None:
                key = StoreKey(self.namespace, b.ident, bounded_value(scope_value), bounded_value(value))
                # only what can fall in a window of this run's calls is read back
                after = min(t for t, _, _ in events) - b.within_ns if b.within_ns is not None else None
                found = self.store.exchange(key, f"{run.key}#{run.agent}", [Event(t, a) for t, a, _ in events],
                                            b.within_ns, after, max(t for t, _, _ in events))
            reason = self._over(b, events, found, scope_value, value, ctx, steps)
            if reason:
                bad.append(reason + (" (this run alone: it carries no session.id or gen_ai.conversation.id)"
                                     if alone else ""))
                fired = True
        if alone and not fired and own:
            gaps.append(f"per session: no session.id or gen_ai.conversation.id on the run, so only its own calls "
                        f"were counted against max {_num(b.max)}")

    def _over(self, b: _Budget, events: list[tuple[int, float, int]], found: Slice | None,
              scope_value: str | None, value: str, ctx: Calls, steps: Sequence[Step]) -> str | None:
        """The reason for the first of this run's calls at which the window's total
        exceeds the budget, or None. ``events`` are in step order, which is start order;
        ``found`` holds other runs' events (at a tie in time, they count first)."""
        times = [t for t, _, _ in events]
        cum = [0.0, *accumulate(a for _, a, _ in events)]
        for i, (t, _, index) in enumerate(events):
            start = t - b.within_ns if b.within_ns is not None else None
            lo = bisect_right(times, start, 0, i) if start is not None else 0
            other_total, other_n = found.total(start, t) if found is not None else (0.0, 0)
            total = cum[i + 1] - cum[lo] + other_total
            if total <= b.max + 1e-9:
                continue
            mine_in = [x[2] for x in events[lo:i + 1]]
            where = next(c.where for c, st in zip(ctx.calls, steps) if st.index == index)
            shown = ", ".join(map(str, mine_in[:SHOWN_STEPS])) + (
                f" and {len(mine_in) - SHOWN_STEPS} more" if len(mine_in) > SHOWN_STEPS else "")
            earlier = ""
            if other_n:
                earlier = (f"; {other_n} in earlier runs" if b.arg is None else
                           f"; {_num(other_total)} in {other_n} call(s) of earlier runs")
            return f"{where}: {b.what(total)} {b.where(scope_value, value)} (step(s) {shown} of this run{earlier})"
        return None
