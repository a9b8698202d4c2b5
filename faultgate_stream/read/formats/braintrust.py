"""Braintrust exports -> spans: a list of logged spans (or a fetch page under ``events``),
each with ``span_attributes.type`` ``task``, ``llm``, ``tool``, ..., its ``root_span_id``,
``span_parents`` and ``metrics.start`` / ``metrics.end`` in epoch seconds.

The root span (its own ``root_span_id``, or one without parents) becomes the
``invoke_agent`` root with its ``input``, ``output`` and ``metadata.scenario``; ``tool`` spans
are the steps, ``llm`` spans chat spans (tokens, finish reason); a span with an ``error``
failed. A trace is named by its ``root_span_id``, as faultgate names it.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.formats.shared import (
    agent_root, error_text, first_object, measures, objects, records, required, span, to_ns, tool_span,
)

# The field names this format's records carry: how close an unrecognised file came to it.
SIGNATURE = frozenset({"span_attributes", "root_span_id", "span_id", "span_parents", "input", "output", "metrics", "metadata", "error"})
NEEDS = (("span_attributes", "root_span_id"),)


def detect(doc: Any) -> bool:
    first = first_object(records(doc, "events"))
    return first is not None and ("span_attributes" in first or "root_span_id" in first)


def read(doc: Any) -> list[SpanRecord]:
    return [_span(e, f"events[{i}]") for i, e in enumerate(objects(records(doc, "events"), "events"))]


def _span(e: dict[str, Any], where: str) -> SpanRecord:
    sid = str(required(e, "span_id", "id", where=where))
    root_id = str(e.get("root_span_id") or sid)
    sa = e.get("span_attributes") if isinstance(e.get("span_attributes"), dict) else {}
    typ = str(sa.get("type") or "").lower()
    name = str(sa.get("name") or typ or "span")
    parents = e.get("span_parents") or []
    if not isinstance(parents, list):
        raise ValueError(f"{where}.span_parents: expected a list")
    metrics = e.get("metrics") if isinstance(e.get("metrics"), dict) else {}
    metadata = e.get("metadata") if isinstance(e.get("metadata"), dict) else {}
    start, end = to_ns(metrics.get("start")), to_ns(metrics.get("end"))
    error = error_text(e.get("error"))
    attrs = measures(input_tokens=metrics.get("prompt_tokens"), output_tokens=metrics.get("completion_tokens"))
    if sid == root_id or not parents:
        return agent_root(root_id, sid, name, start, end, prompt=e.get("input"), answer=e.get("output"),
                          metadata=metadata, error=error, attrs=attrs)
    parent = str(parents[0])
    if typ == "tool":
        return tool_span(root_id, sid, parent, name, start, end, e.get("input"), e.get("output"),
                         error=error, attrs=attrs)
    if typ == "llm":
        attrs |= measures(finish_reason=metadata.get("finish_reason"))
        return span(root_id, sid, parent, name, start, end, "chat", error=error, attrs=attrs)
    return span(root_id, sid, parent, name, start, end, typ or "span", error=error, attrs=attrs)
