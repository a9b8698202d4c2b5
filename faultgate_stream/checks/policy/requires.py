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

from bisect import bisect_left, bisect_right
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


class _Index:
    """Positions of the calls a requirement reads, by their ``same_arg`` value (``None``
    for all, without one), each list in order: built once per run, so each call is judged
    with a few bisections instead of a scan of every earlier call (issue 9, defect 12)."""

    def __init__(self, ctx: Calls, req: Requirement) -> None:
        self.after: dict[str | None, list[int]] = {}    # calls to an ``after`` tool
        self.ok: dict[str | None, list[int]] = {}       # ... that satisfy the requirement
        self.voids: dict[str | None, list[int]] = {}    # successful ``invalidated_by`` calls
        after, voids = set(req.after), set(req.invalidated_by)
        for j, e in enumerate(ctx.calls):
            if e.tool not in after and e.tool not in voids:
                continue
            k = e.key(req.same_arg) if req.same_arg is not None else None
            if e.tool in after:
                self.after.setdefault(k, []).append(j)
                fits = (unmet(e, req) is None if req.stateful
                        else req.result_contains is None or req.result_contains in e.result)
                if fits:
                    self.ok.setdefault(k, []).append(j)
            if e.tool in voids and e.succeeded:
                self.voids.setdefault(k, []).append(j)


def _index(ctx: Calls, req: Requirement) -> _Index:
    idx = ctx.memo.get(id(req))
    if idx is None:
        idx = ctx.memo[id(req)] = _Index(ctx, req)
    return idx


def _plain(ctx: Calls, i: int, req: Requirement) -> str | None:
    """faultgate 0.3.1's requirement: any earlier ``after`` call that fits."""
    c, after = ctx.calls[i], " or ".join(req.after)
    cond = f" returned {req.result_contains!r}" if req.result_contains is not None else ""
    mine = None
    if req.same_arg is not None:
        mine = c.key(req.same_arg)
        if mine is None:
            return _unmatched(c, req.same_arg, after)
        cond += f" for the same {req.same_arg} {mine!r}"
    ok = _index(ctx, req).ok.get(mine, ())
    return None if ok and ok[0] < i else f"{c.where}: {c.tool} before {after}{cond}"


def _stateful(ctx: Calls, i: int, req: Requirement) -> str | None:
    calls, c, after = ctx.calls, ctx.calls[i], " or ".join(req.after)
    mine = None
    if req.same_arg is not None:
        mine = c.key(req.same_arg)
        if mine is None:
            return _unmatched(c, req.same_arg, after)
    idx = _index(ctx, req)
    cands_all = idx.after.get(mine, [])
    hi = bisect_left(cands_all, i)       # candidates: cands_all[lo:hi]
    lo, last, voided = 0, None, None
    if req.invalidated_by:
        voids = idx.voids.get(mine, [])
        k = bisect_left(voids, i)
        if k:
            last = voids[k - 1]
            stale = bisect_left(cands_all, last)   # candidates before the voiding call
            lo = bisect_right(cands_all, last)     # a call that is both voids itself
            if stale and lo >= hi:
                voided = (calls[cands_all[stale - 1]], calls[last])
    if req.latest and hi > lo:
        lo = hi - 1
    if hi > lo:
        ok = idx.ok.get(mine, [])
        if bisect_left(ok, i) > bisect_left(ok, cands_all[lo]):
            return None
    cond = (f" before {'a successful ' if req.success else ''}{after}"
            + (f" returned {req.result_contains!r}" if req.result_contains is not None else "")
            + (" with " + " and ".join(describe(p) for p in req.result) if req.result else "")
            + (f" for the same {req.same_arg} {mine!r}" if req.same_arg is not None else ""))
    if voided:
        why = f" ({voided[0].tool} at {voided[0].where} voided by {voided[1].tool} at {voided[1].where})"
    elif hi > lo:
        e = calls[cands_all[hi - 1]]
        why = (f" (latest {e.tool} at {e.where}: {unmet(e, req)})" if req.latest
               else f" ({e.where} {e.tool}: {unmet(e, req)})")
    else:
        why = ""
    return f"{c.where}: {c.tool}{cond}{why}"
