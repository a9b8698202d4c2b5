"""Evaluation results that arrive with a span: ``gen_ai.evaluation.result`` span events
written by another evaluator (a judge, a test harness). They are how a live stream can
carry a run's outcome; the ``outcome`` check reads them from the root's attributes.
"""
from __future__ import annotations

from typing import Any

EVENT = "gen_ai.evaluation.result"
# Where the reader keeps them: not an OTel attribute name, so it cannot collide with one.
EVALUATIONS = "@evaluations"


def _result(attrs: dict[str, Any]) -> tuple[str, str, float | None] | None:
    name = attrs.get("gen_ai.evaluation.name")
    if not name:
        return None
    label = str(attrs.get("gen_ai.evaluation.score.label") or "").lower()
    value = attrs.get("gen_ai.evaluation.score.value")
    return str(name), label, float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def from_json(events: Any, value: Any) -> tuple[tuple[str, str, float | None], ...]:
    """From OTLP/JSON span events; ``value`` reads an AnyValue."""
    out = []
    if not isinstance(events, list):
        return ()
    for e in events:
        if isinstance(e, dict) and e.get("name") == EVENT and isinstance(e.get("attributes"), list):
            attrs = {kv["key"]: value(kv.get("value")) for kv in e["attributes"]
                     if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
            r = _result(attrs)
            if r:
                out.append(r)
    return tuple(out)


def from_attributes(events: list[dict[str, Any]]) -> tuple[tuple[str, str, float | None], ...]:
    """From the attributes of protobuf span events named ``EVENT`` (the compiled reader
    picks them out)."""
    out = []
    for attrs in events:
        r = _result(attrs)
        if r:
            out.append(r)
    return tuple(out)
