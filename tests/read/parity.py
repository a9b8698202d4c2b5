"""What the compiled readers and conventions are held to: the Python they replaced.

``upb_records(data, kept)`` reads a request the way the package did before the records
were built in Rust: upb's parse, read field by field through its Python objects (what
read/otlp_proto.py did before the compiled reader), one row per span, then the row's
record by read/rows.py's rules and tests/read/conventions_oracle.py's ``build_span``.
``comparable`` makes two results comparable field by field, type by type, in order.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import SERVICE_VERSION
from faultgate_stream.read import content_events, events
from tests.read import conventions_oracle


def comparable(x: Any) -> Any:
    """``x`` with every value tagged by its type (a str is not a list), dicts as their items
    in order, and NaN equal to itself (the same value on both sides, but NaN != NaN). A
    record's attributes are their items in order, whichever mapping holds them: a dict, the
    shared ``NO_ATTRS`` when none is kept, or the core's own (``SpanAttributes``), whose
    values are made as the reader made them when they are read."""
    if isinstance(x, float) and math.isnan(x):
        return ("float", "NaN")
    if isinstance(x, SpanRecord):
        return ("SpanRecord", [("attrs", [(comparable(k), comparable(v)) for k, v in v.items()]) if f == "attrs"
                               else comparable(v) for f, v in zip(x._fields, x)])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [comparable(v) for v in x])
    if isinstance(x, Mapping):
        return (type(x).__name__, [(comparable(k), comparable(v)) for k, v in x.items()])
    return (type(x).__name__, x)


def value(v: AnyValue) -> Any:
    """An AnyValue as upb's Python objects give it."""
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which)


def _id(raw: bytes, n: int) -> str | None:
    """An id as the readers take it: hex, "" when absent, None when not ``n`` bytes or all zero."""
    return "" if not raw else raw.hex() if len(raw) == n and any(raw) else None


def upb_rows(data: bytes):
    """What upb reads from ``data``: each resource's version, and (i, j, rows) per scope,
    a row being (trace_id, span_id, parent_id, name, start, end, status code, status
    message, attributes, the evaluation events' attributes or None)."""
    req = ExportTraceServiceRequest.FromString(data)
    versions = [next((value(kv.value) for kv in rs.resource.attributes if kv.key == SERVICE_VERSION), None)
                for rs in req.resource_spans]
    scopes = []
    for i, rs in enumerate(req.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            rows = []
            for s in ss.spans:
                named = [{kv.key: value(kv.value) for kv in e.attributes} for e in s.events if e.name == events.EVENT]
                content = [(e.name, {kv.key: value(kv.value) for kv in e.attributes}) for e in s.events
                           if e.name in content_events.NAMES]
                rows.append((_id(s.trace_id, 16), _id(s.span_id, 8), _id(s.parent_span_id, 8), s.name,
                             s.start_time_unix_nano, s.end_time_unix_nano, s.status.code, s.status.message,
                             {kv.key: value(kv.value) for kv in s.attributes}, named or None, content))
            scopes.append((i, j, rows))
    return versions, scopes


def row_record(version, tid, sid, parent, name, start, end, code, message, attrs, evaluations, kept=None,
               content=()):
    """read/rows.py's ``row_record`` as it was: the resource's version on a root or an
    agent, the evaluation events as results, then the conventions."""
    if version and (parent is None or attrs.get("gen_ai.operation.name") == "invoke_agent"):
        attrs.setdefault(SERVICE_VERSION, version)
    if evaluations:
        results = events.from_attributes(evaluations)
        if results:
            attrs[events.EVALUATIONS] = results
    add_event_content(name, attrs, content)
    return conventions_oracle.build_span(tid, sid, parent, name, start, end, code, message, attrs, owned=True,
                                         kept=kept)


def add_event_content(name: str, attrs: dict[str, Any], content: list[tuple[str, dict[str, Any]]]) -> None:
    """The GenAI content of a span's events (read/content_events.py) where the span has no
    attribute of that name."""
    if content:
        for k, v in content_events.content_attributes(name, attrs.get("gen_ai.operation.name"), content).items():
            attrs.setdefault(k, v)


def upb_records(data: bytes, kept: frozenset[str] | None = None):
    """(records, rejected, first problem) as read/otlp_proto.py's ``read`` gave them, with
    the projection of ``kept`` (read/projection.py) when given."""
    names = None if kept is None else kept | conventions_oracle.READ_NAMES
    versions, scopes = upb_rows(data)
    spans, rejected, first = [], 0, ""
    for i, j, rows in scopes:
        for k, (tid, sid, parent, name, start, end, code, message, attrs, evaluations, content) in enumerate(rows):
            problem = ("trace_id is not 16 bytes, or is all zero" if not tid else
                       "span_id is not 8 bytes, or is all zero" if not sid else
                       "parent_span_id is not 8 bytes" if parent is None else "")
            if problem:
                rejected += 1
                first = first or f"resource_spans[{i}].scope_spans[{j}].spans[{k}]: {problem}"
                continue
            if names is not None:
                attrs = {a: v for a, v in attrs.items()
                         if a in names or a.startswith(conventions_oracle.READ_PREFIXES)}
            spans.append(row_record(versions[i], tid, sid, parent or None, name, start, end, code, message, attrs,
                                    evaluations, kept, content))
    return spans, rejected, first
