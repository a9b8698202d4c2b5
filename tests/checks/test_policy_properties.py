"""``requires`` against a reference model small enough to be obviously right, on generated runs.

The check decides each call by looking back over the steps before it (faultgate's shape).
The model walks the run forward once instead, keeping per record (``same_arg`` value) the
lookups that still count: an ``after`` call joins its record's list, a successful
``invalidated_by`` call empties it (after joining, so a call that is both voids itself),
and a call to the guarded tool is fine when one counted lookup (the last only, with
``latest``) succeeded (``success``), contains ``result_contains`` and meets the ``result``
predicate. Two formulations that agree on every generated run agree on the rule.

Deterministic (``derandomize``) and bounded, so the suite stays fast and repeatable.
"""
from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from faultgate_stream.checks.policy import Policy, PolicyCheck
from faultgate_stream.checks.policy.check import PROVISIONAL
from faultgate_stream.pipeline import check_spans
from faultgate_stream.testing import agent, tool, trace_id

TOOLS = ("lookup", "auth", "mutate", "cancel")
IDS = ("A", "B", " A", None)  # None: the call carries no id; " A" is the record "A" written loosely
RESULTS = ('{"status": "pending"}', '{"status": "delivered"}', '{"status": true}', '{"note": "pending"}',
           "Error: failed", '{"error": "refused", "status": "pending"}', "pending (plain text)")
PREDICATES = (None, {"path": "status", "equals": "pending"}, {"path": "status", "in": ["pending", "delivered"]},
              {"path": "status", "not_in": ["delivered"]}, {"path": "status", "exists": True})
SETTINGS = settings(derandomize=True, max_examples=400, deadline=None)

calls = st.lists(st.tuples(st.sampled_from(TOOLS), st.sampled_from(IDS), st.sampled_from(RESULTS),
                           st.sampled_from((0, 0, 0, 2))), max_size=9)


@st.composite
def requirements(draw: Any) -> dict[str, Any]:
    req: dict[str, Any] = {"tool": draw(st.sampled_from(TOOLS)),
                           "after": draw(st.lists(st.sampled_from(TOOLS), min_size=1, max_size=2, unique=True))}
    if draw(st.booleans()):
        req["same_arg"] = "id"
    if draw(st.booleans()):
        req["success"] = True
    if draw(st.booleans()):
        req["latest"] = True
    invalidated = draw(st.lists(st.sampled_from(TOOLS), max_size=2, unique=True))
    if invalidated:
        req["invalidated_by"] = invalidated
    predicate = draw(st.sampled_from(PREDICATES))
    if predicate is not None:
        req["result"] = [predicate]
    if draw(st.integers(0, 3)) == 0:
        req["result_contains"] = "pending"
    return req


# --- the model -----------------------------------------------------------------------------------


def _succeeded(result: str, status: int) -> bool:
    if status == 2 or result.startswith("Error:"):
        return False
    try:
        doc = json.loads(result)
    except ValueError:
        return True
    return not (isinstance(doc, dict) and doc.get("error"))


def _meets_predicate(result: str, pred: dict[str, Any]) -> bool:
    try:
        doc = json.loads(result)
    except ValueError:
        return False
    if not isinstance(doc, dict):
        return False
    if "exists" in pred:
        return ("status" in doc) == pred["exists"]
    if "status" not in doc:
        return False
    status = doc["status"]
    is_text = isinstance(status, str)  # the generated values are all text; true must not pass as one
    if "equals" in pred:
        return is_text and status == pred["equals"]
    if "in" in pred:
        return is_text and status in pred["in"]
    return not (is_text and status in pred["not_in"])


def model_violations(run: list[tuple[str, str | None, str, int]], req: dict[str, Any]) -> set[int]:
    """Step numbers (1-based) of the calls that break ``req``."""

    def record(ident: str | None) -> str | None:
        if "same_arg" not in req:
            return "*"  # one record: the whole run
        return ident.strip() if ident is not None else None

    def counts(result: str, status: int) -> bool:
        if req.get("success") and not _succeeded(result, status):
            return False
        if "result_contains" in req and req["result_contains"] not in result:
            return False
        return all(_meets_predicate(result, p) for p in req.get("result", []))

    counted: dict[str, list[tuple[str, int]]] = {}
    bad = set()
    for n, (name, ident, result, status) in enumerate(run, start=1):
        key = record(ident)
        if name == req["tool"]:
            lookups = counted.get(key, []) if key is not None else []
            if req.get("latest"):
                lookups = lookups[-1:]
            if key is None or not any(counts(r, s) for r, s in lookups):
                bad.add(n)
        if key is not None:
            if name in req["after"]:
                counted.setdefault(key, []).append((result, status))
            if name in req.get("invalidated_by", []) and _succeeded(result, status):
                counted[key] = []
    return bad


# --- the check -----------------------------------------------------------------------------------


def _spans(run: list[tuple[str, str | None, str, int]]) -> list:
    t = trace_id()
    root = agent(t, answer="done", end_s=len(run) + 2.0)
    return [root] + [tool(t, root.span_id, name, {"id": ident} if ident is not None else {"other": 1}, result,
                          start_s=1.0 + i, status=status)
                     for i, (name, ident, result, status) in enumerate(run)]


def _violations(reason: str) -> set[int]:
    return {int(m.group(1)) for part in reason.split("; ") if (m := re.match(r"step (\d+): ", part))}


@SETTINGS
@given(calls, requirements())
def test_requires_flags_exactly_the_calls_the_model_flags(run, req):
    (verdict,) = check_spans([_spans(run)], [PolicyCheck(Policy.from_mapping({"requires": [req]}))])
    (r,) = verdict.results
    assert (_violations(r.reason) if r.fired else set()) == model_violations(run, req), r.reason


@SETTINGS
@given(calls, requirements(), st.randoms(use_true_random=False))
def test_the_order_spans_arrive_in_does_not_change_the_verdict(run, req, rnd):
    check = PolicyCheck(Policy.from_mapping({"requires": [req]}))
    spans = _spans(run)
    (in_order,) = check_spans([spans], [check])
    shuffled = rnd.sample(spans, len(spans))
    (arrived,) = check_spans([[s] for s in shuffled], [check])
    assert arrived.results == in_order.results


@SETTINGS
@given(calls, requirements())
def test_in_start_order_an_early_finding_is_always_confirmed_by_the_verdict(run, req):
    (verdict,) = check_spans([[s] for s in _spans(run)], [PolicyCheck(Policy.from_mapping({"requires": [req]}))])
    for f in verdict.early:
        assert f.reason.endswith(PROVISIONAL) and verdict.results[0].fired
