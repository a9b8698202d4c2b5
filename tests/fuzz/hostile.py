"""The classes of hostile input issue 42's independent fuzzer found, generated (hypothesis
strategies), each rendered as the same request in OTLP/JSON and in OTLP protobuf:

- ``deep``: AnyValue arrays and key-value lists nested from a few levels to thousands, in a
  span's, an event's or a resource's attributes, or a log record's body or attributes;
- ``wide``: more values in one span or record than its bound (read/bounds.py);
- ``wrong_shape``: GenAI log events whose bodies have unexpected types (a number or a list
  where an object is expected, at every level the reader looks);
- ``proto_names``: OTLP/JSON of a real agent run with protobuf's field names
  (``resource_spans``, ``trace_id``, ``string_value``), some or all of them, and now and then
  a field written under both names;
- ``malformed_copy``: a valid span next to a copy of it (same trace and span id) whose ids
  are malformed (a 7-byte parent, a short span id, an all-zero trace id).

Each ``Hostile`` knows how many spans (or log records) it offers, so a client can say how
many were acknowledged; the deep values are built as text and as wire bytes directly,
since neither json nor upb will build them thousands deep.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass

from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from faultgate_stream.read.bounds import MAX_VALUE_DEPTH, MAX_VALUES
from tests.genai_runs import tool_loop

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT = "eee19b7ec3c1b174"


@dataclass(frozen=True)
class Hostile:
    cls: str            # the class, for counts by class
    signal: str         # "traces" | "logs"
    json: bytes | None  # the request as OTLP/JSON (None: no JSON spelling of it)
    proto: bytes | None  # the request as OTLP protobuf (None: none)
    offered: int        # spans (or log records) in it


# -- wire bytes ------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _len(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _kv_bytes(key: str, value: bytes) -> bytes:
    return _len(1, key.encode()) + _len(2, value)


# -- a nested value, as text and as bytes --------------------------------------------------


@dataclass(frozen=True)
class Nested:
    """``depth`` levels of arrays and key-value lists (``kinds`` repeats: "a" array, "k"
    list), ``width`` scalars at the bottom."""

    depth: int
    kinds: str
    width: int = 1

    def kind(self, level: int) -> str:
        return self.kinds[level % len(self.kinds)]

    def json(self) -> str:
        leaf = '{"stringValue":"x"}' if self.width == 1 else \
            '{"arrayValue":{"values":[' + ",".join(['{"intValue":"1"}'] * self.width) + "]}}"
        heads, tails = [], []
        for level in range(self.depth):
            if self.kind(level) == "a":
                heads.append('{"arrayValue":{"values":[')
                tails.append("]}}")
            else:
                heads.append('{"kvlistValue":{"values":[{"key":"k","value":')
                tails.append("}]}}")
        return "".join(heads) + leaf + "".join(reversed(tails))

    def proto(self) -> bytes:
        v = _len(1, b"x")
        if self.width > 1:
            v = _len(5, b"".join(_len(1, b"\x18\x01") for _ in range(self.width)))  # int_value 1
        for level in reversed(range(self.depth)):
            if self.kind(level) == "a":
                v = _len(5, _len(1, v))
            else:
                v = _len(6, _len(1, _kv_bytes("k", v)))
        return v


depths = st.one_of(st.integers(0, MAX_VALUE_DEPTH + 3),           # at the bound, each side
                   st.integers(MAX_VALUE_DEPTH + 4, 60),           # past it, within what protobuf carries
                   st.integers(300, 3000))                         # a recursion bomb
nested = st.builds(Nested, depths, st.sampled_from(["a", "k", "ak", "kka"]))
wide = st.builds(lambda w, d: Nested(d, "a", w), st.sampled_from([MAX_VALUES - 8, MAX_VALUES + 1, 3 * MAX_VALUES]),
                 st.integers(0, 2))

SPAN_PLACES = ("span", "event", "resource")
LOG_PLACES = ("body", "attribute")


def _span_json(span_id: str, parent: str | None, name: str, attrs: list[str], events: list[str]) -> str:
    fields = [f'"traceId":"{TRACE}"', f'"spanId":"{span_id}"', f'"name":"{name}"',
              '"startTimeUnixNano":"1700000000000000000"', '"endTimeUnixNano":"1700000001000000000"']
    if parent:
        fields.append(f'"parentSpanId":"{parent}"')
    if attrs:
        fields.append('"attributes":[' + ",".join(attrs) + "]")
    if events:
        fields.append('"events":[' + ",".join(events) + "]")
    return "{" + ",".join(fields) + "}"


def _op(name: str) -> str:
    return '{"key":"gen_ai.operation.name","value":{"stringValue":"%s"}}' % name


def _span_proto(span_id: str, parent: str | None, name: str, op: str, raw_attrs: bytes = b"",
                raw_events: bytes = b"") -> bytes:
    s = Span(trace_id=bytes.fromhex(TRACE), span_id=bytes.fromhex(span_id), name=name,
             start_time_unix_nano=1_700_000_000_000_000_000, end_time_unix_nano=1_700_000_001_000_000_000)
    if parent:
        s.parent_span_id = bytes.fromhex(parent)
    s.attributes.add(key="gen_ai.operation.name").value.string_value = op
    return s.SerializeToString() + raw_attrs + raw_events


def traces_with(value: Nested, place: str, cls: str) -> Hostile:
    """An agent run of two spans whose tool span carries ``value`` at ``place``."""
    attr_json = '{"key":"gen_ai.tool.call.result","value":%s}' % value.json()
    tool_id = "00000000000000a1"
    tool_json = _span_json(tool_id, ROOT, "execute_tool lookup",
                           [_op("execute_tool")] + ([attr_json] if place == "span" else []),
                           ['{"name":"e","attributes":[%s]}' % attr_json] if place == "event" else [])
    root_json = _span_json(ROOT, None, "invoke_agent a", [_op("invoke_agent")], [])
    resource = '"resource":{"attributes":[%s]},' % attr_json if place == "resource" else ""
    text = '{"resourceSpans":[{%s"scopeSpans":[{"spans":[%s,%s]}]}]}' % (resource, tool_json, root_json)

    proto = None
    if value.depth <= 200:  # deeper is refused by upb all the same, and costly to build
        kv = _kv_bytes("gen_ai.tool.call.result", value.proto())
        tool = _span_proto(tool_id, ROOT, "execute_tool lookup", "execute_tool",
                           _len(9, kv) if place == "span" else b"",
                           _len(11, _len(2, b"e") + _len(3, kv)) if place == "event" else b"")
        root = _span_proto(ROOT, None, "invoke_agent a", "invoke_agent")
        scope = _len(2, _len(2, tool) + _len(2, root))
        resource_bytes = _len(1, _len(1, kv)) if place == "resource" else b""
        proto = _len(1, resource_bytes + scope)
    return Hostile(cls, "traces", text.encode(), proto, 2)


def _log_json(event: str, body: str | None, attrs: list[str]) -> str:
    fields = [f'"traceId":"{TRACE}"', f'"spanId":"{ROOT}"', f'"eventName":"{event}"',
              '"timeUnixNano":"1700000000500000000"']
    if body is not None:
        fields.append(f'"body":{body}')
    if attrs:
        fields.append('"attributes":[' + ",".join(attrs) + "]")
    return "{" + ",".join(fields) + "}"


def _log_proto(event: str, raw_body: bytes | None, raw_attrs: bytes = b"") -> bytes:
    r = LogRecord(trace_id=bytes.fromhex(TRACE), span_id=bytes.fromhex(ROOT), event_name=event,
                  time_unix_nano=1_700_000_000_500_000_000)
    return r.SerializeToString() + (_len(5, raw_body) if raw_body is not None else b"") + raw_attrs


def _logs(records_json: list[str], records_proto: list[bytes] | None, cls: str) -> Hostile:
    text = '{"resourceLogs":[{"scopeLogs":[{"logRecords":[' + ",".join(records_json) + "]}]}]}"
    proto = None
    if records_proto is not None:
        proto = _len(1, _len(2, b"".join(_len(2, r) for r in records_proto)))
    return Hostile(cls, "logs", text.encode(), proto, len(records_json))


def logs_with(value: Nested, place: str, cls: str) -> Hostile:
    """A details event carrying ``value`` in its body or an attribute, beside a plain one."""
    details = "gen_ai.client.inference.operation.details"
    attr = '{"key":"gen_ai.input.messages","value":%s}' % value.json()
    plain = _log_json("gen_ai.user.message", '{"stringValue":"hello"}', [])
    hostile = _log_json(details, value.json() if place == "body" else None, [attr] if place == "attribute" else [])
    protos = None
    if value.depth <= 200:
        raw = value.proto()
        protos = [_log_proto("gen_ai.user.message", AnyValue(string_value="hello").SerializeToString()),
                  _log_proto(details, raw if place == "body" else None,
                             _len(6, _kv_bytes("gen_ai.input.messages", raw)) if place == "attribute" else b"")]
    return _logs([plain, hostile], protos, cls)


@st.composite
def deep(draw) -> Hostile:
    if draw(st.booleans()):
        return traces_with(draw(nested), draw(st.sampled_from(SPAN_PLACES)), "deep")
    return logs_with(draw(nested), draw(st.sampled_from(LOG_PLACES)), "deep")


@st.composite
def too_many(draw) -> Hostile:
    if draw(st.booleans()):
        return traces_with(draw(wide), draw(st.sampled_from(("span", "event"))), "wide")
    return logs_with(draw(wide), draw(st.sampled_from(LOG_PLACES)), "wide")


# -- GenAI event bodies of the wrong shape --------------------------------------------------

# what the readers of GenAI events look at, and the types that do not belong there
BODY_KEYS = ("content", "tool_calls", "id", "message", "finish_reason", "function", "name", "arguments", "role",
             "parts", "index")
scalar_values = st.one_of(st.builds(lambda i: {"intValue": str(i)}, st.integers(-5, 5)),
                          st.builds(lambda f: {"doubleValue": f}, st.floats(allow_nan=False, allow_infinity=False)),
                          st.builds(lambda b: {"boolValue": b}, st.booleans()),
                          st.builds(lambda s: {"stringValue": s}, st.sampled_from(["", "x", "[1]", "{}", "stop"])),
                          st.just({"bytesValue": "AAE="}), st.just({}))
shaped_values = st.recursive(
    scalar_values,
    lambda inner: st.one_of(
        st.builds(lambda xs: {"arrayValue": {"values": xs}}, st.lists(inner, max_size=3)),
        st.builds(lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}},
                  st.lists(st.tuples(st.sampled_from(BODY_KEYS), inner), max_size=4))),
    max_leaves=10)
GENAI_EVENTS = ("gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message", "gen_ai.choice",
                "gen_ai.system.message", "gen_ai.client.inference.operation.details")
DETAILS_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                "gen_ai.response.finish_reasons")


@st.composite
def wrong_shape(draw) -> Hostile:
    records_json, records_proto = [], []
    for _ in range(draw(st.integers(1, 4))):
        event = draw(st.sampled_from(GENAI_EVENTS))
        body = draw(st.one_of(st.none(), shaped_values))
        attrs = []
        if event.endswith("details"):
            attrs = [{"key": k, "value": draw(shaped_values)} for k in draw(st.lists(st.sampled_from(DETAILS_KEYS),
                                                                                        max_size=3, unique=True))]
        records_json.append(_log_json(event, json.dumps(body) if body is not None else None,
                                      [json.dumps(a) for a in attrs]))
        records_proto.append(_log_proto(event, _any_value_bytes(body) if body is not None else None,
                                        b"".join(_len(6, _kv_bytes(a["key"], _any_value_bytes(a["value"])))
                                                 for a in attrs)))
    return _logs(records_json, records_proto, "wrong_shape")


def _any_value_bytes(v: dict) -> bytes:
    from google.protobuf import json_format

    return json_format.ParseDict(v, AnyValue()).SerializeToString()


# -- OTLP/JSON in protobuf's field names -------------------------------------------------------


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _renamed(doc, rename, both: bool):
    """``doc`` with each key ``rename(key)`` says to rename in protobuf's spelling (and, when
    ``both``, the first one renamed written under both names)."""
    doc = copy.deepcopy(doc)
    todo, wrote_both = [doc], False
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, dict):
            for key in [k for k in node if _snake(k) != k and rename(k)]:
                if both and not wrote_both:
                    node[_snake(key)] = copy.deepcopy(node[key])
                    wrote_both = True
                else:
                    node[_snake(key)] = node.pop(key)
            todo.extend(node.values())
    return doc


@st.composite
def proto_names(draw) -> Hostile:
    traces, logs = tool_loop(draw(st.sampled_from(["span_only", "event_only", "legacy"])))
    signal = draw(st.sampled_from(["traces", "logs"])) if logs.get("resourceLogs") else "traces"
    doc = traces if signal == "traces" else logs
    everywhere = draw(st.booleans())
    seed = draw(st.integers(0, 2**32))
    rename = (lambda k: True) if everywhere else (lambda k: (hash(k) ^ seed) % 2 == 0)
    both = draw(st.sampled_from([False] * 9 + [True]))  # mostly a request to take
    offered = sum(len(ss.get("spans", ())) for rs in doc.get("resourceSpans", ()) for ss in rs.get("scopeSpans", ())) \
        if signal == "traces" else sum(len(sl.get("logRecords", ())) for rl in doc["resourceLogs"]
                                       for sl in rl.get("scopeLogs", ()))
    return Hostile("proto_names", signal, json.dumps(_renamed(doc, rename, both)).encode(), None, offered)


# -- a valid span beside a malformed copy of itself -----------------------------------------

MALFORMED = {"parent of 7 bytes": ("parentSpanId", "eee19b7ec3c1b1"), "span id of 3 bytes": ("spanId", "0a0b0c"),
             "trace id all zero": ("traceId", "0" * 32)}


@st.composite
def malformed_copy(draw) -> Hostile:
    field, value = MALFORMED[draw(st.sampled_from(sorted(MALFORMED)))]
    n = draw(st.integers(0, 2**16))
    span_id = f"{n:016x}" if n else "00000000000000c1"
    good = {"traceId": TRACE, "spanId": span_id, "parentSpanId": ROOT, "name": "execute_tool lookup",
            "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]}
    bad = {**copy.deepcopy(good), field: value}
    spans = [good, bad] if draw(st.booleans()) else [bad, good]
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    from faultgate_stream.read.otlp_json import to_request

    # the protobuf spelling: to_request empties the malformed ids, the wire keeps them as sent
    request, _, _ = to_request(json.loads(json.dumps(doc)))
    for s, raw in zip(request.resource_spans[0].scope_spans[0].spans, spans):
        s.trace_id, s.span_id, s.parent_span_id = (bytes.fromhex(raw[k]) for k in ("traceId", "spanId", "parentSpanId"))
    return Hostile("malformed_copy", "traces", json.dumps(doc).encode(), request.SerializeToString(), 2)


CLASSES = {"deep": deep(), "wide": too_many(), "wrong_shape": wrong_shape(), "proto_names": proto_names(),
           "malformed_copy": malformed_copy()}
any_hostile = st.one_of(*CLASSES.values())
