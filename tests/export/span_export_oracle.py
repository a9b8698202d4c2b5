"""What span export wrote before it was cut to per-run pieces (issue 12): the oracle that
``test_span_export_bytes.py`` holds the span sink to, byte for byte.

A root's annotation is protobuf's own encoding of a ``Span`` holding only the verdict's
attributes and events (appended to the root's bytes, it decodes as their merge: what
``annotate.write_verdict`` writes), and each released span goes out as one
``resource_spans`` entry framed as ``wire.py`` framed it then, packed as ``split.packed``.
"""
from __future__ import annotations

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from faultgate_stream.export.spans import annotate
from faultgate_stream.export.spans.held import HeldSpan
from faultgate_stream.model.verdict import RunVerdict


def varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def resource_spans_entry(resource: bytes, resource_schema: str, scope: bytes, scope_schema: str,
                         span: bytes) -> bytes:
    scope_spans = field(1, scope) + field(2, span)
    if scope_schema:
        scope_spans += field(3, scope_schema.encode())
    rs = field(1, resource) + field(2, scope_spans)
    if resource_schema:
        rs += field(3, resource_schema.encode())
    return field(1, rs)


def root_annex(v: RunVerdict, end_ns: int, redact) -> bytes:
    when = end_ns or v.last_end_ns or v.decided_ns
    Span.Event(time_unix_nano=when)  # refused out of a fixed64's range, results or not, as it was
    digests = v.rule_digests if len(v.rule_digests) == len(v.results) else ("",) * len(v.results)
    return Span(attributes=annotate.verdict_attributes(v, redact),
                events=[Span.Event(time_unix_nano=when, name=annotate.EVENT,
                                   attributes=annotate._evaluation_attributes(r, redact, d))  # noqa: SLF001
                        for r, d in zip(v.results, digests)]).SerializeToString()


def packed(entries: list[bytes], max_spans: int, max_bytes: int) -> list[tuple[bytes, int]]:
    out, group, size = [], [], 0
    for e in entries:
        if group and (len(group) + 1 > max_spans or size + len(e) > max_bytes):
            out.append((b"".join(group), len(group)))
            group, size = [], 0
        group.append(e)
        size += len(e)
    if group:
        out.append((b"".join(group), len(group)))
    return out


def export_held(held: dict[str, HeldSpan], v: RunVerdict | None, redact, strip: bool, max_spans: int,
                max_bytes: int) -> list[tuple[bytes, int]]:
    entries = []
    for sid, h in held.items():
        is_root = v is not None and sid == v.root_span_id
        if strip or (is_root and b"faultgate." in h.span):
            span = Span.FromString(h.span)
            if strip:
                annotate.strip_content(span)
            if is_root:
                annotate.write_verdict(span, v, redact)
            body = span.SerializeToString()
        elif is_root:
            body = h.span + root_annex(v, h.end_ns, redact)
        else:
            body = h.span
        entries.append(resource_spans_entry(h.resource, h.resource_schema, h.scope, h.scope_schema, body))
    return packed(entries, max_spans, max_bytes)
