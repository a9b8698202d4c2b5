"""Four plug-in checks for the retail and search agents of faultgate-stream's examples.

Each reads only the public check API (``faultgate_stream.checks.api``): the run's steps
with their parsed arguments and results, and says fired, passed or undecided.
"""
from __future__ import annotations

import json

from faultgate_stream.checks import api

MUTATIONS = ("cancel_pending_order", "modify_pending_order_items", "modify_pending_order_address",
             "exchange_delivered_order_items", "return_delivered_order_items")


class ActedOnError(api.Check):
    """The agent changed an order whose lookup had answered with an error, as if the lookup
    had succeeded (retail gap G2: the order was not pending, and it cancelled it anyway).
    A later lookup of the same order that succeeds clears it."""

    name = "acted_on_error"
    version = "0.1.0"
    description = "the agent changed an order whose lookup had failed"
    severity = "hard"

    def finish(self, state, run):
        if "tool results" in run.not_captured:
            return api.undecided("tool results were not captured")
        failed: dict[str, object] = {}  # order id -> the failed lookup's step
        for step in run.steps:
            order = str(step.args.get("order_id", ""))
            if step.tool == "get_order_details":
                if step.result.startswith("Error") or not step.ok:
                    failed[order] = step
                else:
                    failed.pop(order, None)
            elif step.tool in MUTATIONS and order in failed:
                lookup = failed[order]
                return api.fired(f"step {step.index}: {step.tool} on order {order} after step {lookup.index}: "
                                 f"get_order_details answered {lookup.result[:80]!r}",
                                 span_ids=[lookup.span_id, step.span_id])
        return api.passed("no order was changed after its lookup failed")


class MutationWithoutLookup(api.Check):
    """An order changed without its details looked up first in the same run (a step order
    question: decided at the verdict, over the run's steps in start order)."""

    name = "mutation_without_lookup"
    version = "0.1.0"
    description = "an order was changed before its details were looked up"

    def finish(self, state, run):
        looked: set[str] = set()
        for step in run.steps:
            order = str(step.args.get("order_id", ""))
            if step.tool == "get_order_details":
                looked.add(order)
            elif step.tool in MUTATIONS and order not in looked:
                if not step.arguments_captured:
                    return api.undecided(f"step {step.index}: {step.tool}'s arguments were not captured")
                return api.fired(f"step {step.index}: {step.tool} on order {order} never looked up",
                                 span_ids=[step.span_id])
        return api.passed("every changed order was looked up first")


class BulkItemChange(api.Check):
    """One call that changes more than ``MAX_ITEMS`` items of an order. Fires early: the
    span alone decides it, so the finding is heard the moment the span arrives."""

    name = "bulk_item_change"
    version = "0.1.0"
    description = "one call changed more than five items of an order"
    MAX_ITEMS = 5

    def observe(self, state, span):
        if span.tool in MUTATIONS and len(span.args.get("item_ids", ())) > self.MAX_ITEMS:
            return api.fired(f"{span.tool} changed {len(span.args['item_ids'])} items", span_ids=[span.span_id])
        return None

    def finish(self, state, run):
        for step in run.steps:
            items = step.args.get("item_ids", ())
            if step.tool in MUTATIONS and len(items) > self.MAX_ITEMS:
                return api.fired(f"step {step.index}: {step.tool} changed {len(items)} items",
                                 span_ids=[step.span_id])
        return api.passed(f"no call changed more than {self.MAX_ITEMS} items")


class EmptySearches(api.Check):
    """Searches that found nothing, over and over: more than three in a run that answered
    with ``n_candidates: 0`` (the search agent of examples/traces/traces.json)."""

    name = "empty_searches"
    version = "0.1.0"
    description = "more than three searches found nothing"
    severity = "soft"

    def finish(self, state, run):
        empty = []
        for step in run.steps:
            if step.tool != "search":
                continue
            try:
                doc = json.loads(step.result)
            except ValueError:
                continue
            if isinstance(doc, dict) and doc.get("n_candidates") == 0:
                empty.append(step)
        measures = {"empty_searches": len(empty)}
        if len(empty) > 3:
            return api.fired(f"{len(empty)} searches found nothing (steps "
                             f"{', '.join(str(s.index) for s in empty[:10])})",
                             measures=measures, span_ids=[s.span_id for s in empty])
        return api.passed(f"{len(empty)} empty searches", measures=measures)
