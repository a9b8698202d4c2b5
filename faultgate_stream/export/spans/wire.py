"""Protobuf wire framing for spans that are already bytes.

A held root is kept serialized (``held``); parsing it back into a message only to wrap it
in a ``ResourceSpans`` and serialize it again cost more per root than every check of its
run. The wrappers are three length-delimited fields, so they are written here directly.
Two encodings of one message concatenated decode as their merge (repeated fields are
appended: the protobuf encoding guide, "Last One Wins" and repeated fields), which is how
a root gets its verdict attributes and events without being decoded.
"""
from __future__ import annotations

# Field numbers of opentelemetry/proto/trace/v1/trace.proto and trace_service.proto.
REQUEST_RESOURCE_SPANS = 1
RESOURCE_SPANS_RESOURCE, RESOURCE_SPANS_SCOPE_SPANS, RESOURCE_SPANS_SCHEMA_URL = 1, 2, 3
SCOPE_SPANS_SCOPE, SCOPE_SPANS_SPANS, SCOPE_SPANS_SCHEMA_URL = 1, 2, 3
SPAN_EVENTS = 11


def varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): a message, bytes or a string."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def resource_spans_entry(resource: bytes, resource_schema: str, scope: bytes, scope_schema: str,
                         spans: bytes) -> bytes:
    """One ``ExportTraceServiceRequest.resource_spans`` entry holding ``spans`` (the
    already framed ``ScopeSpans.spans`` fields) under their resource and scope."""
    scope_spans = field(SCOPE_SPANS_SCOPE, scope) + spans
    if scope_schema:
        scope_spans += field(SCOPE_SPANS_SCHEMA_URL, scope_schema.encode())
    rs = field(RESOURCE_SPANS_RESOURCE, resource) + field(RESOURCE_SPANS_SCOPE_SPANS, scope_spans)
    if resource_schema:
        rs += field(RESOURCE_SPANS_SCHEMA_URL, resource_schema.encode())
    return field(REQUEST_RESOURCE_SPANS, rs)
