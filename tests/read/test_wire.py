"""The compiled reader (native/core/src/read/otlp_proto.rs) against upb, the parser that
accepted the bytes.

For every request upb parses, the records ``otlp_proto.read`` builds (and the rows
``_native.read_logs`` gives) must be what upb's own reading of the same bytes gives: the
oracle (tests/read/parity.py) reads the parsed message field by field through upb's Python
objects (what read/otlp_proto.py did before the compiled reader) and builds each record with
the Python conventions the compiled ones replaced. The requests are generated
(hypothesis), written by hand at the wire level where protobuf's merging rules decide the
answer, and byte-mutated so that upb's edge cases are met without anyone choosing them.
"""
from __future__ import annotations

import gc
import json
import math
import random

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from faultgate_stream import _native
from faultgate_stream.model.records import SpanAttributes
from faultgate_stream.read import events, otlp_proto
from faultgate_stream.read.projection import Projection
from tests.fuzz.mutate import byte_mutant
from tests.read.parity import _id, comparable, upb_records, value

VERSION = "service.version"


def _plain(x):
    """NaN made comparable: it is the same value on both sides, but NaN != NaN."""
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    if isinstance(x, list):
        return [_plain(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_plain(v) for v in x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


def native(data: bytes, kept: frozenset[str] | None = None):
    d = otlp_proto.read(data, None if kept is None else Projection(kept))
    return comparable((d.spans, d.rejected, d.first_problem))


def oracle(data: bytes, kept: frozenset[str] | None = None):
    return comparable(upb_records(data, kept))


def assert_agrees(data: bytes) -> None:
    assert native(data) == oracle(data)


def accepted_mutants(body: bytes, parse, seed: int, n: int):
    """Byte mutants of ``body`` (flipped, cut, repeated) that upb's ``parse`` still takes."""
    rng = random.Random(seed)
    for _ in range(n):
        mutant = byte_mutant(body, rng)
        try:
            parse(mutant)
        except DecodeError:
            continue
        yield mutant


# ------------------------------------------------------------------ generated requests

scalars = st.one_of(
    st.text(max_size=20).map(lambda s: AnyValue(string_value=s)),
    st.booleans().map(lambda b: AnyValue(bool_value=b)),
    st.integers(-(2**63), 2**63 - 1).map(lambda i: AnyValue(int_value=i)),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: AnyValue(double_value=f)),
    st.binary(max_size=10).map(lambda b: AnyValue(bytes_value=b)),
    st.just(AnyValue()),
)
keys = st.sampled_from(["a", "b", "gen_ai.operation.name", VERSION, "é", "", "gen_ai.evaluation.name"])


def _nest(children):
    return st.one_of(
        st.lists(children, max_size=3).map(lambda vs: AnyValue(array_value=ArrayValue(values=vs))),
        st.lists(st.tuples(keys, children), max_size=3).map(
            lambda kvs: AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kvs]))),
    )


any_values = st.recursive(scalars, _nest, max_leaves=8)
key_values = st.lists(st.tuples(keys, any_values), max_size=6).map(
    lambda kvs: [KeyValue(key=k, value=v) for k, v in kvs])
ids = st.one_of(st.binary(min_size=16, max_size=16), st.binary(max_size=17))


@st.composite
def spans(draw):
    s = Span(trace_id=draw(ids), span_id=draw(st.binary(max_size=9)), parent_span_id=draw(st.binary(max_size=9)),
             name=draw(st.text(max_size=12)), start_time_unix_nano=draw(st.integers(0, 2**64 - 1)),
             end_time_unix_nano=draw(st.integers(0, 2**64 - 1)), attributes=draw(key_values),
             status=Status(code=draw(st.sampled_from([0, 1, 2, 7, -1])), message=draw(st.text(max_size=8))),
             kind=draw(st.integers(0, 5)), trace_state=draw(st.text(max_size=5)))
    for _ in range(draw(st.integers(0, 3))):
        e = s.events.add()
        e.name = draw(st.sampled_from([events.EVENT, "exception", ""]))
        e.time_unix_nano = draw(st.integers(0, 2**64 - 1))
        e.attributes.extend(draw(key_values))
    return s


requests = st.lists(
    st.tuples(key_values, st.lists(st.lists(spans(), max_size=3), max_size=2)), max_size=3,
).map(lambda rss: ExportTraceServiceRequest(resource_spans=[
    ResourceSpans(resource=Resource(attributes=attrs), scope_spans=[ScopeSpans(spans=ss) for ss in scopes])
    for attrs, scopes in rss]))


@settings(max_examples=300, deadline=None)
@given(requests)
def test_generated_requests_read_as_upb_reads_them(request):
    assert_agrees(request.SerializeToString())


@settings(max_examples=300, deadline=None)
@given(requests, st.integers(0, 2**32))
def test_byte_mutants_that_upb_accepts_read_as_upb_reads_them(request, seed):
    """Flipped, cut and repeated bytes: most no longer parse; those that do meet upb's
    rules for unknown fields, odd wire types and merged fields without being chosen."""
    for mutant in accepted_mutants(request.SerializeToString(), ExportTraceServiceRequest.FromString, seed, 20):
        assert_agrees(mutant)


# ------------------------------------------------------------------ logs

def logs_oracle(data: bytes):
    req = ExportLogsServiceRequest.FromString(data)
    return _plain([
        (i, j, [(_id(r.trace_id, 16), _id(r.span_id, 8), r.time_unix_nano, r.observed_time_unix_nano, r.event_name,
                 {kv.key: value(kv.value) for kv in r.attributes}, value(r.body) if r.HasField("body") else None,
                 "")  # within the bounds (read/bounds.py): the strategies nest a few levels
                for r in sl.log_records])
        for i, rl in enumerate(req.resource_logs) for j, sl in enumerate(rl.scope_logs)])


@st.composite
def log_records(draw):
    r = LogRecord(trace_id=draw(ids), span_id=draw(st.binary(max_size=9)),
                  time_unix_nano=draw(st.integers(0, 2**64 - 1)), observed_time_unix_nano=draw(st.integers(0, 2**64 - 1)),
                  event_name=draw(st.sampled_from(["", "gen_ai.user.message", "gen_ai.choice", "é"])),
                  attributes=draw(key_values), severity_text=draw(st.text(max_size=5)))
    if draw(st.booleans()):
        r.body.CopyFrom(draw(any_values))
    return r


logs_requests = st.lists(st.lists(st.lists(log_records(), max_size=3), max_size=2), max_size=3).map(
    lambda rls: ExportLogsServiceRequest(resource_logs=[
        ResourceLogs(scope_logs=[ScopeLogs(log_records=rs) for rs in scopes]) for scopes in rls]))


@settings(max_examples=200, deadline=None)
@given(logs_requests, st.integers(0, 2**32))
def test_logs_requests_and_their_byte_mutants_read_as_upb_reads_them(request, seed):
    body = request.SerializeToString()
    for data in (body, *accepted_mutants(body, ExportLogsServiceRequest.FromString, seed, 10)):
        assert _plain(_native.read_logs(data)) == logs_oracle(data)


# ------------------------------------------------------------------ the wire, by hand

def _tag(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _len(number: int, payload: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(payload)) + payload


def _request_of_span(span_bytes: bytes, resource: bytes = b"") -> bytes:
    rs = _len(1, resource) if resource else b""
    return _len(1, rs + _len(2, _len(2, span_bytes)))


BASE = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="root").SerializeToString()


def _kv(key: str, *values: AnyValue) -> bytes:
    """A KeyValue whose value field appears once per ``values``: protobuf merges them."""
    return _len(9, _len(1, key.encode()) + b"".join(_len(2, v.SerializeToString()) for v in values))


WIRE_CASES = {
    "a status written twice is merged": BASE + _len(15, Status(code=2).SerializeToString())
    + _len(15, Status(message="late").SerializeToString()),
    "a value of another kind replaces the first": BASE + _kv("k", AnyValue(string_value="a"), AnyValue(int_value=3)),
    "two kvlists merge into one": BASE + _kv(
        "k", AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key="x", value=AnyValue(int_value=1))])),
        AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key="y", value=AnyValue(bool_value=True))]))),
    "two arrays append": BASE + _kv("k", AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1)])),
                                     AnyValue(array_value=ArrayValue(values=[AnyValue(string_value="2")]))),
    "a repeated key keeps the last value": BASE + _kv("k", AnyValue(int_value=1)) + _kv("k", AnyValue(int_value=2)),
    "a scalar field written twice keeps the last": BASE + _len(5, b"second") + _tag(7, 1) + (5).to_bytes(8, "little")
    + _tag(7, 1) + (9).to_bytes(8, "little"),
    "a known field with the wrong wire type is unknown": BASE + _tag(5, 0) + _varint(42) + _tag(7, 0) + _varint(3),
    "an unknown group is skipped, nested groups too": BASE + _tag(99, 3) + _tag(1, 0) + _varint(1) + _tag(7, 3)
    + _tag(7, 4) + _tag(99, 4) + _len(5, b"after the group"),
    "unknown fixed32 and fixed64 fields are skipped": BASE + _tag(50, 5) + b"abcd" + _tag(51, 1) + b"abcdefgh",
    "a status code past 32 bits keeps its low 32": BASE + _len(15, _tag(3, 0) + _varint(2**32 + 2)),
    "a negative status code": BASE + _len(15, _tag(3, 0) + _varint(2**64 - 5)),
    "an int past 63 bits wraps as int64": BASE + _len(9, _len(1, b"k") + _len(2, _tag(3, 0) + _varint(2**64 - 1))),
    "an empty AnyValue is None": BASE + _len(9, _len(1, b"k") + _len(2, b"")),
    "a KeyValue without a value": BASE + _len(9, _len(1, b"k")),
}


@pytest.mark.parametrize("span", WIRE_CASES.values(), ids=WIRE_CASES.keys())
def test_protobufs_merging_rules_read_as_upb_reads_them(span):
    data = _request_of_span(span)
    ExportTraceServiceRequest.FromString(data)  # upb takes it: this is a valid request
    assert_agrees(data)


def test_the_merged_status_and_values_are_what_protobuf_says():
    """The cases above agree with upb; these say what that agreement means."""
    [span] = otlp_proto.read(_request_of_span(WIRE_CASES["a status written twice is merged"])).spans
    assert (span.status_code, span.status_message) == (2, "late")
    [span] = otlp_proto.read(_request_of_span(WIRE_CASES["two kvlists merge into one"])).spans
    assert span.attrs == {"k": {"x": 1, "y": True}}


def test_a_resource_written_twice_is_merged_and_its_first_version_read():
    first = Resource(attributes=[KeyValue(key="other", value=AnyValue(int_value=1))]).SerializeToString()
    second = Resource(attributes=[KeyValue(key=VERSION, value=AnyValue(string_value="2.0")),
                                  KeyValue(key=VERSION, value=AnyValue(string_value="3.0"))]).SerializeToString()
    rs = _len(1, first) + _len(2, _len(2, BASE)) + _len(1, second)  # the resource after the spans, in two parts
    data = _len(1, rs)
    assert_agrees(data)
    [root] = otlp_proto.read(data).spans
    assert root.attrs[VERSION] == "2.0"


def test_bytes_that_are_not_protobuf_are_an_input_error_not_a_guess():
    """Only bytes upb parsed reach the compiled reader; if others ever did, it says so."""
    for junk in (b"\x0a\xff\xff\xff\xff\x0f", b"\x0b", b"\x0c", _tag(1, 7), b"\x80" * 11):
        with pytest.raises(ValueError):
            _native.read_spans(junk, VERSION, events.EVENT)
        with pytest.raises(otlp_proto.InputError):
            otlp_proto.read(junk)


def test_strings_that_are_not_utf8_are_refused():
    """upb refuses them first; the compiled reader does not make a str of them either."""
    data = _request_of_span(Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8).SerializeToString() + _len(5, b"\xff"))
    with pytest.raises(DecodeError):
        ExportTraceServiceRequest.FromString(data)
    with pytest.raises(ValueError):
        _native.read_spans(data, VERSION, events.EVENT)


def test_values_nested_past_upbs_limit_never_reach_the_stack():
    """upb refuses messages nested deeper than its limit; bytes nested 300 deep given to
    the compiled reader directly have their span rejected at the nesting bound, before
    anything walks them, not a stack overflow."""
    v = b""
    for _ in range(300):
        v = _len(5, _len(1, v))  # AnyValue.array_value -> ArrayValue.values -> AnyValue ...
    data = _request_of_span(BASE + _len(9, _len(1, b"k") + _len(2, v)))
    with pytest.raises(DecodeError):
        ExportTraceServiceRequest.FromString(data)
    records, rejected, first = _native.read_spans(data, VERSION, events.EVENT)
    assert records == [] and rejected == [(0, 0, 0, "too_deep")]
    assert "nested more than 24 levels" in first


# ------------------------------------------------------------------ the record's size

def _size_by_hand(name, attrs, kept):
    def value_size(v):
        if isinstance(v, str):
            return len(v)
        return _native.SCALAR_BYTES if type(v) is float or (type(v) is int and -(2**63) <= v < 2**63) \
            else _native.VALUE_BYTES

    kept_copy = 0 if not kept else _native.ATTRIBUTES_BYTES + sum(
        _native.ATTRIBUTE_BYTES + len(k) + value_size(v) for k, v in kept.items())
    return _native.RECORD_BYTES + len(name) + sum(len(k) + (len(v) if isinstance(v, str) else 8)
                                                  for k, v in attrs.items()) + kept_copy


attribute_keys = st.one_of(st.text(max_size=12), st.sampled_from(
    ["gen_ai.prompt.0.content", "gen_ai.completion.3.role", "llm.input_messages.0.message.role",
     "llm.output_messages.1.message.content", "gen_ai.prompt", "llm.input_messages", "gen_ai.prompt.\udcff"]))
attribute_values = st.one_of(st.text(), st.integers(), st.floats(), st.booleans(), st.none(),
                             st.lists(st.text(max_size=3), max_size=3), st.just("\udcff é 😀"))


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=10), st.dictionaries(attribute_keys, attribute_values, max_size=8))
def test_a_records_size_counts_its_name_keys_and_string_values_in_code_points(name, attrs):
    """The assembler's memory bound counts ``size``: ``RECORD_BYTES``, the name's length,
    every key's and every string value's (other values 8), as Python's ``len`` counts, and
    the attributes the record keeps, a copy besides: ``ATTRIBUTES_BYTES``, and each one's
    ``ATTRIBUTE_BYTES``, key, and value (its length if a str, ``SCALAR_BYTES`` if an int of
    64 bits or a float, else ``VALUE_BYTES``)."""
    from faultgate_stream.read.conventions import build_span

    plain = {k: v for k, v in attrs.items() if not k.startswith(("gen_ai.prompt.", "gen_ai.completion."))
             and k not in ("openinference.span.kind", "traceloop.span.kind")}
    record = build_span("t" * 32, "s" * 16, None, name, 1, 2, 0, "", plain)
    assert record.size == _size_by_hand(name, plain, record.attrs)


def test_ids_are_one_object_per_request_and_attributes_are_the_cores_until_read():
    """What the records of a request share instead of holding copies (memory:
    bench/held_memory.py): ids are one object; attributes are held by the core, no Python
    object at all, each value made when it is read (model/records.py's ``SpanAttributes``)."""
    long = "x" * 200
    spans = [Span(trace_id=b"\x01" * 16, span_id=bytes([0, 0, 0, 0, 0, 0, 0, i]), parent_span_id=b"\x09" * 8,
                  attributes=[KeyValue(key="gen_ai.tool.name", value=AnyValue(string_value="lookup")),
                              KeyValue(key="result", value=AnyValue(string_value=long))]) for i in (1, 2)]
    data = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])]
                                     ).SerializeToString()
    a, b = otlp_proto.read(data).spans
    assert a.trace_id is b.trace_id and a.parent_id is b.parent_id
    assert type(a.attrs) is type(b.attrs) is SpanAttributes
    assert list(a.attrs) == list(b.attrs) == ["gen_ai.tool.name", "result"]
    assert a.attrs["gen_ai.tool.name"] == b.attrs["gen_ai.tool.name"] == "lookup"
    assert a.attrs["result"] == b.attrs["result"] == long


@settings(max_examples=200, deadline=None)
@given(requests, st.sampled_from([frozenset(), frozenset({"a"}), frozenset({"a", "gen_ai.operation.name"}),
                                  frozenset({"é", "", VERSION, events.EVALUATIONS})]))
def test_with_a_projection_the_records_are_upbs_read_with_that_projection(request, kept):
    """The live service's reader: only the wanted attributes read, only the kept ones kept."""
    data = request.SerializeToString()
    assert native(data, kept) == oracle(data, kept)


def test_an_attribute_named_as_a_messages_tool_calls_is_one_more_field():
    """OpenInference flattens a message's calls into ``...message.tool_calls.N.tool_call.*``;
    an attribute ``...message.calls`` once took their place, and every request holding one
    was refused as our internal error (UNAVAILABLE, retried for ever)."""
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="llm", start_time_unix_nano=1,
                end_time_unix_nano=2)
    for key, text in (("openinference.span.kind", "LLM"),
                      ("llm.output_messages.0.message.tool_calls.0.tool_call.id", "c1"),
                      ("llm.output_messages.0.message.calls", "x"),
                      ("llm.output_messages.0.message.tool_calls.0.tool_call.function.name", "lookup")):
        span.attributes.add(key=key, value=AnyValue(string_value=text))
    data = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])]
                                     ).SerializeToString()
    decoded = otlp_proto.read(data)
    assert decoded.rejected == 0
    [record] = decoded.spans
    assert [(c.call_id, c.name) for c in record.calls] == [("c1", "lookup")]
    assert_agrees(data)


def test_the_records_read_are_left_to_reference_counting_not_the_cycle_collector():
    """A record and the tuples in it cannot take part in a cycle (they hold only what the
    reader made), so they are kept off the collector's lists: tracked, every span in flight
    was walked by every young and middle collection (issue 12). ``gc.is_tracked`` reports it."""
    def attr(key, text):
        return KeyValue(key=key, value=AnyValue(string_value=text))

    output = [{"role": "assistant", "finish_reason": "tool_call",
               "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"q": 1}}]}]
    given_back = [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "ok"}]}]
    chat = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="chat m",
                attributes=[attr("gen_ai.operation.name", "chat"), attr("gen_ai.request.model", "m"),
                            attr("gen_ai.input.messages", json.dumps(given_back)),
                            attr("gen_ai.output.messages", json.dumps(output)),
                            KeyValue(key="gen_ai.response.finish_reasons",
                                     value=AnyValue(array_value=ArrayValue(values=[AnyValue(string_value="tool_call")])))])
    tool = Span(trace_id=b"\x01" * 16, span_id=b"\x03" * 8, name="execute_tool lookup",
                attributes=[attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", "lookup"),
                            attr("gen_ai.tool.call.id", "c1"), attr("gen_ai.tool.call.arguments", '{"q": 1}'),
                            attr("gen_ai.tool.call.result", "ok")])
    data = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[chat, tool])])]
                                     ).SerializeToString()
    chat_record, tool_record = otlp_proto.read(data).spans
    assert chat_record.calls and chat_record.responses and chat_record.finish_reasons and tool_record.tool
    assert gc.is_tracked(chat_record._replace(name="x"))  # made by Python: a tuple subclass stays tracked
    for record in (chat_record, tool_record):
        for item in (record, record.tool, record.calls, *record.calls, record.responses, *record.responses,
                     record.finish_reasons, record.attrs):
            if item is not None:
                assert not gc.is_tracked(item), (type(item).__name__, item)
