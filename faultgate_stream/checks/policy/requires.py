"""requires: a tool may only run after an earlier call to another.

``after`` names the prerequisite (a list: any one of them). A requirement without a 0.4
key is judged as faultgate 0.3.1 did: some earlier ``after`` call (whose result contains
``result_contains``, whose ``same_arg`` matches). The 0.4 keys make it stateful, the way
faultgate's ``_stateful_requirement`` is:

1. candidates: earlier ``after`` calls on the same ``same_arg`` value (any, without one);
2. ``invalidated_by``: the last successful call to one of these tools on that value voids
   every candidate before it (and a call that is both, itself);
3. ``latest``: only the last candidate left counts;
4. the requirement is met when a counted candidate succeeded (``success``), contains
   ``result_contains`` and meets every ``result`` predicate.

The reason says why the nearest candidate fell short, or which call voided it. A call
without a readable ``same_arg`` cannot be matched to anything, and is a violation.

Order-dependent: while a run is still arriving, "no earlier matching call" means none
*observed so far*, and a call that started earlier may still arrive. Such an early
finding is provisional; the run's verdict, over every step in start order, decides.
"""
from __future__ import annotations

from typing import Any, ClassVar

from faultgate_stream.checks.policy.facts import ABSENT, NOT_JSON, Call, Calls, json_path
from faultgate_stream.checks.policy.rule import by_tool
from faultgate_stream.checks.policy.schema import Predicate, Requirement


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality that keeps types apart at every depth: ``true`` is not ``1``, ``"1"``
    is not ``1``; ``1`` is ``1.0`` (JSON has one number type). faultgate keeps them apart
    at the top level only (``[true]`` equals ``[1]`` there); see PARITY_DEVIATIONS.md."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def describe(p: Predicate) -> str:
    if p.op == "equals":
        return f"{p.path} == {p.value!r}"
    if p.op == "exists":
        return f"{p.path} present" if p.value else f"no {p.path}"
    return f"{p.path} {'in' if p.op == 'in' else 'not in'} {list(p.value)!r}"


def predicate_unmet(doc: Any, p: Predicate) -> str | None:
    """Why the parsed result ``doc`` fails ``p``, or None when it meets it. A missing path
    fails every operator but ``exists: false``."""
    got = json_path(doc, p.path)
    if p.op == "exists":
        return None if (got is not ABSENT) == p.value else f"result has {'no ' if p.value else ''}{p.path}"
    if got is ABSENT:
        return f"result has no {p.path}"
    if p.op == "equals" and not json_equal(got, p.value):
        return f"{p.path} is {got!r}, not {p.value!r}"
    if p.op == "in" and not any(json_equal(got, x) for x in p.value):
        return f"{p.path} is {got!r}, not in {list(p.value)!r}"
    if p.op == "not_in" and any(json_equal(got, x) for x in p.value):
        return f"{p.path} is {got!r}"
    return None


def unmet(e: Call, req: Requirement) -> str | None:
    """Why the earlier call ``e`` does not satisfy ``req``, or None when it does."""
    if req.success and not e.succeeded:
        return "failed"
    if req.result_contains is not None and req.result_contains not in e.result:
        return f"result does not contain {req.result_contains!r}"
    if req.result:
        doc = e.doc
        if doc is NOT_JSON:
            return "result is not JSON"
        for p in req.result:
            why = predicate_unmet(doc, p)
            if why is not None:
                return why
    return None


class Requires:
    history: ClassVar[bool] = True

    def __init__(self, requires: tuple[Requirement, ...]) -> None:
        self._by_tool = by_tool(requires)
        self.tools = frozenset(self._by_tool)
        # the tools whose earlier calls a requirement reads
        self.reads = frozenset(t for r in requires for t in (*r.after, *r.invalidated_by))

    def check(self, ctx: Calls, i: int) -> list[str]:
        bad = []
        for req in self._by_tool.get(ctx.calls[i].tool, ()):
            why = _stateful(ctx, i, req) if req.stateful else _plain(ctx, i, req)
            if why:
                bad.append(why)
        return bad


def _unmatched(c: Call, arg: str, after: str) -> str:
    return f"{c.where}: {c.tool} has no readable {arg}, cannot match it to {after}"


def _plain(ctx: Calls, i: int, req: Requirement) -> str | None:
    """faultgate 0.3.1's requirement: any earlier ``after`` call that fits."""
    calls, c, after = ctx.calls, ctx.calls[i], " or ".join(req.after)
    cond = f" returned {req.result_contains!r}" if req.result_contains is not None else ""
    cands = [calls[j] for j in ctx.earlier(req.after, i)]
    if req.result_contains is not None:
        cands = [e for e in cands if req.result_contains in e.result]
    if req.same_arg is not None:
        mine = c.key(req.same_arg)
        if mine is None:
            return _unmatched(c, req.same_arg, after)
        cond += f" for the same {req.same_arg} {mine!r}"
        cands = [e for e in cands if e.key(req.same_arg) == mine]
    return None if cands else f"{c.where}: {c.tool} before {after}{cond}"


def _stateful(ctx: Calls, i: int, req: Requirement) -> str | None:
    calls, c, after = ctx.calls, ctx.calls[i], " or ".join(req.after)
    mine = None
    if req.same_arg is not None:
        mine = c.key(req.same_arg)
        if mine is None:
            return _unmatched(c, req.same_arg, after)

    def bound(e: Call) -> bool:
        return mine is None or e.key(req.same_arg) == mine  # type: ignore[arg-type]

    cands = [j for j in ctx.earlier(req.after, i) if bound(calls[j])]
    voided = None
    if req.invalidated_by:
        last = next((j for j in reversed(ctx.earlier(req.invalidated_by, i))
                     if bound(calls[j]) and calls[j].succeeded), None)
        if last is not None:
            stale = [j for j in cands if j < last]
            cands = [j for j in cands if j > last]
            if stale and not cands:
                voided = (calls[stale[-1]], calls[last])
    if req.latest:
        cands = cands[-1:]
    if any(unmet(calls[j], req) is None for j in cands):
        return None
    cond = (f" before {'a successful ' if req.success else ''}{after}"
            + (f" returned {req.result_contains!r}" if req.result_contains is not None else "")
            + (" with " + " and ".join(describe(p) for p in req.result) if req.result else "")
            + (f" for the same {req.same_arg} {mine!r}" if req.same_arg is not None else ""))
    if voided:
        why = f" ({voided[0].tool} at {voided[0].where} voided by {voided[1].tool} at {voided[1].where})"
    elif cands:
        e = calls[cands[-1]]
        why = (f" (latest {e.tool} at {e.where}: {unmet(e, req)})" if req.latest
               else f" ({e.where} {e.tool}: {unmet(e, req)})")
    else:
        why = ""
    return f"{c.where}: {c.tool}{cond}{why}"

