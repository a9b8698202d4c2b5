"""Which bytes are a trace request (native/core/src/read/accept.rs) against upb, whose acceptance
it replaced: for every input, ``_native.check_traces`` refuses exactly what upb's parse of
an ``ExportTraceServiceRequest`` refuses.

Inputs: the wire format's edges written by hand (tags, lengths and varints at their
limits, groups, nesting at upb's depth limit, strings that are not UTF-8, known fields of
another wire type); requests using every field of the schema, generated; and their
mutants, flipped, cut and repeated bytes, and one field's bytes replaced at the wire level
(a tag of any wire type, a string made invalid), so that most of the schema's branches
meet both a valid and an invalid input.
"""
from __future__ import annotations

import random

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue, ArrayValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from faultgate_stream import _native
from faultgate_stream.model.errors import InputError
from faultgate_stream.read import otlp_proto
from tests.fuzz.mutate import byte_mutant


def upb_accepts(data: bytes) -> bool:
    try:
        ExportTraceServiceRequest.FromString(data)
    except DecodeError:
        return False
    return True


def native_accepts(data: bytes) -> bool:
    try:
        _native.check_traces(data)
    except ValueError:
        return False
    return True


def assert_agrees(data: bytes) -> None:
    assert native_accepts(data) == upb_accepts(data), data.hex()


def varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def ld(number: int, body: bytes) -> bytes:
    return tag(number, 2) + varint(len(body)) + body


def value(body: bytes) -> bytes:
    """An ``AnyValue`` as the first attribute of a span, deep in a request: the request's
    bytes around ``body``."""
    kv = ld(1, b"k") + ld(2, body)
    return ld(1, ld(2, ld(2, ld(9, kv))))


def nested(levels: int, inner: bytes = b"") -> bytes:
    """``levels`` messages below an attribute's ``AnyValue``: ArrayValue, AnyValue, ..."""
    b = inner
    for level in range(levels, 0, -1):
        b = ld(5, b) if level % 2 else ld(1, b)
    return b


def groups(n: int) -> bytes:
    return tag(99, 3) * n + tag(99, 4) * n


# the request's own depth: an attribute's AnyValue is 5 messages below it
DEPTH_OF_VALUE = 5

EDGES = {
    "empty request": b"",
    "field 0": tag(0, 0) + b"\x01",
    "wire type 6": tag(5, 6),
    "wire type 7": tag(5, 7),
    "end group at the top": tag(1, 4),
    "tag of 5 bytes, 32 bits": b"\x88\x80\x80\x80\x0f\x01",
    "tag of 5 bytes past 32 bits": b"\x88\x80\x80\x80\x10\x01",
    "tag of 6 bytes": b"\x88\x80\x80\x80\x80\x00\x01",
    "varint of 10 bytes": tag(99, 0) + b"\xff" * 9 + b"\x7f",
    "varint of 11 bytes": tag(99, 0) + b"\xff" * 10 + b"\x01",
    "length of 5 bytes": tag(99, 2) + b"\x81\x80\x80\x80\x00x",
    "length of 6 bytes": tag(99, 2) + b"\x81\x80\x80\x80\x80\x00x",
    "length past the end": tag(99, 2) + b"\x05x",
    "fixed64 cut short": tag(99, 1) + b"\x00" * 7,
    "fixed32 cut short": tag(99, 5) + b"\x00" * 3,
    "unknown group": groups(1),
    "unknown group, other end": tag(99, 3) + tag(98, 4),
    "unknown group, no end": tag(99, 3),
    "group holding field 0": tag(99, 3) + b"\x00\x01" + tag(99, 4),
    "group holding a start of field 0": tag(99, 3) + tag(0, 3) + tag(0, 4) + tag(99, 4),
    "group holding wire type 7": tag(99, 3) + tag(5, 7) + tag(99, 4),
    "group holding an end of field 0": tag(99, 3) + tag(0, 4) + tag(99, 4),
    "group ending past its message": ld(1, tag(99, 3)) + tag(99, 4),
    "resource_spans as a varint": tag(1, 0) + b"\x05",
    "resource_spans as a group": tag(1, 3) + tag(1, 4),
    "resource_spans holding garbage": ld(1, b"\xff\xff"),
    "unknown field holding garbage": ld(99, b"\xff\xff"),
    "a name not UTF-8": ld(1, ld(2, ld(2, ld(5, b"\xff")))),
    "a name with a surrogate": ld(1, ld(2, ld(2, ld(5, b"\xed\xa0\x80")))),
    "a name overlong": ld(1, ld(2, ld(2, ld(5, b"\xc0\x80")))),
    "a name with NUL": ld(1, ld(2, ld(2, ld(5, b"a\x00b")))),
    "a trace id not UTF-8 (bytes)": ld(1, ld(2, ld(2, ld(1, b"\xff" * 16)))),
    "a string value not UTF-8": value(ld(1, b"\xff")),
    "a bytes value not UTF-8": value(ld(7, b"\xff")),
    "a string value as a varint": value(tag(1, 0) + b"\x01"),
    "a schema URL not UTF-8": ld(1, ld(3, b"\xff")),
    "an entity ref's id key not UTF-8": ld(1, ld(1, ld(3, ld(3, b"\xff")))),
    "a status message not UTF-8": ld(1, ld(2, ld(2, ld(15, ld(2, b"\xff"))))),
    "a status's reserved field 1 not UTF-8": ld(1, ld(2, ld(2, ld(15, ld(1, b"\xff"))))),
    "a link's trace state not UTF-8": ld(1, ld(2, ld(2, ld(13, ld(3, b"\xff"))))),
    "an event name not UTF-8": ld(1, ld(2, ld(2, ld(11, ld(2, b"\xff"))))),
    "a scope version not UTF-8": ld(1, ld(2, ld(1, ld(2, b"\xff")))),
    "flags as a varint": ld(1, ld(2, ld(2, tag(16, 0) + b"\x01"))),
}
for extra in (-1, 0, 1):
    below = 100 - DEPTH_OF_VALUE + extra
    EDGES[f"messages nested {100 + extra} deep"] = value(nested(below))
    EDGES[f"groups nested {100 + extra} deep"] = groups(100 + extra)
    EDGES[f"messages and groups nested {100 + extra} deep"] = value(nested(below - 3, groups(3)))

# a plain attribute (a key, a one-string value: the walk's fast path) at the bottom of
# key-value lists, each level three messages (KeyValue, AnyValue, KeyValueList): its value's
# AnyValue at 100 (a resource's attributes) and at 101 (a span's), and, at 101, no value
def in_kvlists(levels: int, inner: bytes) -> bytes:
    for _ in range(levels):
        inner = ld(1, b"k") + ld(2, ld(6, ld(1, inner)))
    return inner


PLAIN = ld(1, b"k") + ld(2, ld(1, b"v"))
EDGES["a plain attribute's value 100 deep"] = ld(1, ld(1, ld(1, in_kvlists(32, PLAIN))))
EDGES["a plain attribute's value 101 deep"] = ld(1, ld(2, ld(2, ld(9, in_kvlists(32, PLAIN)))))
EDGES["a plain attribute's empty value 101 deep"] = ld(1, ld(2, ld(2, ld(9, in_kvlists(32, ld(1, b"k") + ld(2, b""))))))
EDGES["a key without a value 100 deep"] = ld(1, ld(2, ld(2, ld(9, in_kvlists(32, ld(1, b"k"))))))


@pytest.mark.parametrize("data", EDGES.values(), ids=EDGES.keys())
def test_the_wire_formats_edges_are_refused_as_upb_refuses_them(data):
    assert_agrees(data)


def test_the_edges_hold_both_answers():
    """Without this, edges that upb all accepted (or all refused) would pass anything."""
    answers = [upb_accepts(d) for d in EDGES.values()]
    assert answers.count(True) >= 12 and answers.count(False) >= 20


def test_a_refusal_names_the_field_and_where_it_is():
    with pytest.raises(ValueError, match=r"^resource_spans\[0\]\.scope_spans\[0\]\.spans\[1\]\.name: a string is not UTF-8$"):
        _native.check_traces(ld(1, ld(2, ld(2, b"") + ld(2, ld(5, b"\xff")))))
    with pytest.raises(InputError, match=r"not an ExportTraceServiceRequest: .*attributes\[0\]\.value\.string_value"):
        otlp_proto.decode(value(ld(1, b"\xff")))


# ------------------------------------------------------------------ every field, generated

text = st.text(max_size=6)
scalars = st.one_of(text.map(lambda s: AnyValue(string_value=s)), st.booleans().map(lambda b: AnyValue(bool_value=b)),
                    st.integers(-(2**63), 2**63 - 1).map(lambda i: AnyValue(int_value=i)),
                    st.floats().map(lambda f: AnyValue(double_value=f)),
                    st.binary(max_size=4).map(lambda b: AnyValue(bytes_value=b)),
                    st.integers(0, 9).map(lambda i: AnyValue(string_value_strindex=i)), st.just(AnyValue()))
any_values = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=2).map(lambda vs: AnyValue(array_value=ArrayValue(values=vs))),
    st.lists(st.tuples(text, kids), max_size=2).map(
        lambda kvs: AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kvs])))),
    max_leaves=4)
attributes = st.lists(st.builds(KeyValue, key=text, value=any_values, key_strindex=st.integers(0, 3)), max_size=2)
counts = st.integers(0, 2**32 - 1)
ids = st.binary(max_size=17)


@st.composite
def spans(draw):
    s = Span(trace_id=draw(ids), span_id=draw(ids), trace_state=draw(text), parent_span_id=draw(ids),
             flags=draw(counts), name=draw(text), kind=draw(st.integers(0, 5)),
             start_time_unix_nano=draw(st.integers(0, 2**64 - 1)), end_time_unix_nano=draw(st.integers(0, 2**64 - 1)),
             attributes=draw(attributes), dropped_attributes_count=draw(counts), dropped_events_count=draw(counts),
             dropped_links_count=draw(counts), status=Status(message=draw(text), code=draw(st.integers(0, 2))))
    for _ in range(draw(st.integers(0, 2))):
        s.events.add(time_unix_nano=draw(st.integers(0, 2**64 - 1)), name=draw(text), attributes=draw(attributes),
                     dropped_attributes_count=draw(counts))
    for _ in range(draw(st.integers(0, 2))):
        s.links.add(trace_id=draw(ids), span_id=draw(ids), trace_state=draw(text), attributes=draw(attributes),
                    dropped_attributes_count=draw(counts), flags=draw(counts))
    return s


resources = st.builds(Resource, attributes=attributes, dropped_attributes_count=counts,
                      entity_refs=st.lists(st.builds(EntityRef, schema_url=text, type=text, id_keys=st.lists(text, max_size=2),
                                                     description_keys=st.lists(text, max_size=2)), max_size=2))
scopes = st.builds(InstrumentationScope, name=text, version=text, attributes=attributes, dropped_attributes_count=counts)
requests = st.lists(st.builds(
    ResourceSpans, resource=resources, schema_url=text,
    scope_spans=st.lists(st.builds(ScopeSpans, scope=scopes, schema_url=text, spans=st.lists(spans(), max_size=2)),
                         max_size=2)), max_size=2).map(lambda rss: ExportTraceServiceRequest(resource_spans=rss))


def _fields(data: bytes) -> list[tuple[int, int, int]]:
    """(start, end, wire type) of every field of the message in ``data`` and, where a
    length-delimited body reads as fields, of its fields too: places to mutate."""
    out, todo = [], [(0, len(data))]
    while todo:
        pos, end = todo.pop()
        try:
            while pos < end:
                start = pos
                t, pos = _read_varint(data, pos)
                wt = t & 7
                if wt == 0:
                    _, pos = _read_varint(data, pos)
                elif wt in (1, 5):
                    pos += 8 if wt == 1 else 4
                elif wt == 2:
                    n, pos = _read_varint(data, pos)
                    if pos + n <= end:
                        todo.append((pos, pos + n))
                    pos += n
                else:
                    break
                if pos > end:
                    break
                out.append((start, pos, wt))
        except (ValueError, IndexError):  # a string's bytes, not fields
            continue
    return out


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    n, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos
        if shift > 63:
            raise ValueError


def wire_mutant(data: bytes, rng: random.Random) -> bytes:
    """One field's bytes replaced: by a tag of a random number and wire type (and a value),
    a length-delimited body made invalid UTF-8, or a field duplicated or dropped."""
    places = _fields(data)
    if not places:
        return bytes([rng.randrange(256) for _ in range(rng.randrange(4))])
    start, end, wt = rng.choice(places)
    op = rng.randrange(5)
    if op == 0:
        number = rng.choice([0, 1, 2, 3, 4, 5, 7, 9, 15, 16, 99])
        filler = rng.choice([b"", b"\x01", b"\x00" * 4, b"\x00" * 8, b"\x02\xff\xff", b"\x01x"])
        return data[:start] + tag(number, rng.randrange(8)) + filler + data[end:]
    if op == 1 and wt == 2:
        n, body_at = _read_varint(data, _read_varint(data, start)[1])
        if n:
            i = body_at + rng.randrange(n)
            return data[:i] + rng.choice([b"\xff", b"\xc0", b"\xed"]) + data[i + 1:]
    if op == 2:
        return data[:end] + data[start:end] + data[end:]
    if op == 3:
        return data[:start] + data[end:]
    return data[:start] + tag(99, 3) + data[start:end] + tag(rng.choice([99, 98]), 4) + data[end:]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(requests)
def test_generated_requests_of_every_field_are_accepted_as_upb_accepts_them(request):
    data = request.SerializeToString()
    assert native_accepts(data)
    assert_agrees(data)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(requests, st.integers(0, 2**32))
def test_their_mutants_are_refused_as_upb_refuses_them(request, seed):
    rng = random.Random(seed)
    data = request.SerializeToString()
    for _ in range(20):
        assert_agrees(byte_mutant(data, rng))
        assert_agrees(wire_mutant(data, rng))


def test_the_mutants_meet_both_answers():
    """The mutations reach refusals and acceptances alike (a generator whose mutants upb
    always refused would test only the refusing half). Derandomized: a count over random
    examples fell under its bound once in many runs (39 of 600 accepted), which said
    nothing about the generator."""
    seen = {True: 0, False: 0}

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None,
              derandomize=True)
    @given(requests, st.integers(0, 2**32))
    def count(request, seed):
        rng = random.Random(seed)
        data = request.SerializeToString()
        for _ in range(20):
            seen[upb_accepts(wire_mutant(data, rng))] += 1

    count()
    assert min(seen.values()) >= 40, seen
