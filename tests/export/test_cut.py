"""Span export's cut (native/py/src/export/cut.rs): a received request forwarded as its bytes,
less the roots held for their verdict, against upb: the request upb parsed, those spans
deleted from it, serialized.

Requests are written at the wire level, so that what upb would never write is met too:
fields out of order, a resource or scope in two occurrences (merged when parsed), unknown
fields and groups between and inside the entries, non-minimal tags and lengths, known
fields with another wire type (unknown to upb and to the reader), empty entries. For a
request upb writes itself the cut is upb's bytes exactly; for any other it decodes to the
message upb's would.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream import _native
from faultgate_stream.read.otlp_proto import read


def varint(n: int, pad: int = 0) -> bytes:
    """``n`` as a varint, ``pad`` bytes longer than it needs (upb accepts up to 5 for a tag or length)."""
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if n or pad:
            out.append(b | 0x80)
            if not n:
                pad -= 1
                while pad:
                    out.append(0x80)
                    pad -= 1
                out.append(0)
                return bytes(out)
        else:
            out.append(b)
            return bytes(out)


def field(number: int, body: bytes, pad: int = 0) -> bytes:
    return varint(number << 3 | 2, pad) + varint(len(body), pad) + body


ODD = st.sampled_from([
    b"",
    varint(99 << 3) + b"\x05",                        # an unknown varint
    field(99, b"\xff\xfe"),                           # an unknown length-delimited field
    varint(98 << 3 | 3) + varint(98 << 3 | 4),        # an unknown (empty) group
    varint(2 << 3) + b"\x01",                         # field 2 as a varint: unknown to upb and the reader
    varint(97 << 3 | 5) + b"\x00\x00\x00\x00",        # an unknown fixed32
])


@st.composite
def spans(draw, trace: int):
    out = []
    for k in range(draw(st.integers(0, 4))):
        body = (field(1, (trace + 1).to_bytes(16, "big"))
                + field(2, (trace * 100 + k + 1).to_bytes(8, "big"))
                + (field(4, (trace * 100 + 50).to_bytes(8, "big")) if draw(st.booleans()) else b"")
                + field(5, draw(st.sampled_from([b"invoke_agent a", b"execute_tool t", b"chat m"])))
                + b"\x41" + (k + 10).to_bytes(8, "little")   # end_time_unix_nano, fixed64
                + draw(ODD))
        out.append(body)
    return out


@st.composite
def requests(draw):
    """(bytes, canonical): a request at the wire level, and whether upb would write it so."""
    canonical = draw(st.booleans())
    odd = st.just(b"") if canonical else ODD
    pad = st.just(0) if canonical else st.integers(0, 2)
    body = b""
    for r in range(draw(st.integers(0, 3))):
        rs = b""
        resource = field(1, field(1, b"service.name") + field(2, field(1, b"svc%d" % r)))
        if draw(st.booleans()):
            rs += field(1, resource, draw(pad))
            if not canonical and draw(st.booleans()):  # a second occurrence: merged
                rs += field(1, field(1, field(1, b"more") + field(2, field(1, b"x"))))
        for s in range(draw(st.integers(0, 3))):
            ss = field(1, field(1, b"scope%d" % s)) if draw(st.booleans()) else b""
            ss += draw(odd)
            for span in draw(spans(r * 10 + s)):
                ss += field(2, span, draw(pad)) + draw(odd)
            if draw(st.booleans()):
                ss += field(3, b"https://scope.example/%d" % s)
            rs += field(2, ss, draw(pad)) + draw(odd)
        if draw(st.booleans()):
            rs += field(3, b"https://opentelemetry.io/schemas/1.30.0")
        if not canonical and draw(st.booleans()):
            rs = draw(odd) + rs
        body += field(1, rs, draw(pad)) + draw(odd)
    return body, canonical


def upb_without(data: bytes, drop: list[int]) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest.FromString(data)
    places = [(ss, k) for rs in req.resource_spans for ss in rs.scope_spans for k in range(len(ss.spans))]
    for ss, k in reversed([places[i] for i in drop]):
        del ss.spans[k]
    return req


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(requests(), st.randoms(use_true_random=False))
def test_the_cut_request_is_upbs_request_without_those_spans(request, rnd):
    data, canonical = request
    total = len(read(data).spans)
    drop = sorted(rnd.sample(range(total), rnd.randint(0, total)))
    payload = _native.cut(data, drop)
    expected = upb_without(data, drop)
    assert ExportTraceServiceRequest.FromString(payload) == expected
    if canonical:
        assert payload == expected.SerializeToString()
    if not drop:
        assert payload == data  # nothing cut: the bytes as received


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(requests(), st.randoms(use_true_random=False))
def test_a_held_spans_pieces_are_what_upb_parsed(request, rnd):
    data, _ = request
    req = ExportTraceServiceRequest.FromString(data)
    places = [(rs, ss, s) for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
    at = sorted(rnd.sample(range(len(places)), rnd.randint(0, len(places))))
    total, pieces = _native.spans_at(data, at)
    assert total == len(places)
    assert len(pieces) == len(at)
    for i, (resource, resource_schema, scope, scope_schema, span, end_ns, trace_id, span_id) in zip(at, pieces):
        rs, ss, s = places[i]
        assert type(rs.resource).FromString(resource) == rs.resource
        assert type(ss.scope).FromString(scope) == ss.scope
        assert (resource_schema, scope_schema) == (rs.schema_url, ss.schema_url)
        assert type(s).FromString(span) == s
        assert (end_ns, trace_id, span_id) == (s.end_time_unix_nano, s.trace_id, s.span_id)


def test_spans_out_of_order_or_past_the_end_are_refused_not_guessed():
    data = ExportTraceServiceRequest.FromString(
        field(1, field(2, field(2, field(1, b"\x01" * 16) + field(2, b"\x02" * 8))))).SerializeToString()
    with pytest.raises(ValueError, match="ascending"):
        _native.cut(data, [0, 0])
    with pytest.raises(ValueError, match="holds 1 spans"):
        _native.cut(data, [1])
    with pytest.raises(ValueError, match="holds 1 spans"):
        _native.spans_at(data, [3])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("invoke_agent", "chat", "execute_tool", "", "invoke_agent ", None)),
                          st.sampled_from((None, "", "00f067aa0ba902b7", "x"))), max_size=12))
def test_the_roots_held_are_the_invoke_agent_spans_and_those_without_a_parent(shapes):
    from faultgate_stream.testing import span, trace_id

    t = trace_id()
    spans = [span(t, "s", parent=parent)._replace(operation=op) for op, parent in shapes]
    assert _native.root_candidates(spans) == [i for i, s in enumerate(spans) if s.is_agent or not s.parent_id]
