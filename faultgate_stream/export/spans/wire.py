"""Protobuf wire framing for spans that are already bytes.

A held root is kept serialized (``held``); parsing it back into a message only to wrap it
in a ``ResourceSpans`` and serialize it again cost more per root than every check of its
run. The wrappers are three length-delimited fields, so they are written here directly.
Two encodings of one message concatenated decode as their merge (repeated fields are
appended: the protobuf encoding guide, "Last One Wins" and repeated fields), which is how
a root gets its verdict attributes and events without being decoded (``annotate``'s
``VerdictBytes``, written by native/src/export/annex.rs).

What is written here is what upb writes for the same message: fields in field-number
order, lengths as minimal varints (``tests/export/test_span_export_bytes.py`` compares
the two).
"""
from __future__ import annotations

# Field numbers of opentelemetry/proto/trace/v1/trace.proto and trace_service.proto.
REQUEST_RESOURCE_SPANS = 1
RESOURCE_SPANS_RESOURCE, RESOURCE_SPANS_SCOPE_SPANS, RESOURCE_SPANS_SCHEMA_URL = 1, 2, 3
SCOPE_SPANS_SCOPE, SCOPE_SPANS_SPANS, SCOPE_SPANS_SCHEMA_URL = 1, 2, 3

_ONE_BYTE = [bytes((n,)) for n in range(0x80)]


def varint(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]
    if n < 0x4000:  # every length framed here but a huge request's
        return bytes((n & 0x7F | 0x80, n >> 7))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def tag(number: int) -> bytes:
    """The key of a length-delimited field (wire type 2)."""
    return varint(number << 3 | 2)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): a message, bytes or a string."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


class Framing:
    """One ``ExportTraceServiceRequest.resource_spans`` entry holding one span under its
    resource and scope, the fields around the span written once per (resource, scope).

    A request's root candidates share their resource and scope, and the roots of one
    source share them from request to request, so the fields around a span are kept, by
    the (resource, scope) they frame, in a table cleared when full. Bytes keep their hash,
    so a held root's lookup hashes nothing again."""

    MAX = 1024

    def __init__(self) -> None:
        self._frames: dict[tuple[bytes, str, bytes, str], tuple[bytes, bytes, bytes, bytes]] = {}

    def entry(self, resource: bytes, resource_schema: str, scope: bytes, scope_schema: str, span: bytes) -> bytes:
        key = (resource, resource_schema, scope, scope_schema)
        frame = self._frames.get(key)
        if frame is None:
            if len(self._frames) >= self.MAX:
                self._frames.clear()
            frame = self._frames[key] = (
                field(RESOURCE_SPANS_RESOURCE, resource),
                field(RESOURCE_SPANS_SCHEMA_URL, resource_schema.encode()) if resource_schema else b"",
                field(SCOPE_SPANS_SCOPE, scope),
                field(SCOPE_SPANS_SCHEMA_URL, scope_schema.encode()) if scope_schema else b"")
        res_head, res_tail, scope_head, scope_tail = frame
        span_len = varint(len(span))
        scope_spans = len(scope_head) + 1 + len(span_len) + len(span) + len(scope_tail)
        scope_spans_len = varint(scope_spans)
        rs = len(res_head) + 1 + len(scope_spans_len) + scope_spans + len(res_tail)
        return b"".join((_REQUEST_RESOURCE_SPANS, varint(rs), res_head, _RS_SCOPE_SPANS, scope_spans_len, scope_head,
                         _SS_SPANS, span_len, span, scope_tail, res_tail))


_REQUEST_RESOURCE_SPANS = tag(REQUEST_RESOURCE_SPANS)
_RS_SCOPE_SPANS = tag(RESOURCE_SPANS_SCOPE_SPANS)
_SS_SPANS = tag(SCOPE_SPANS_SPANS)
