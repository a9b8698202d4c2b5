"""The bounds on nesting and on values (read/bounds.py, native/src/read/bounds.rs), met the
same way over every reader: OTLP protobuf and OTLP/JSON, spans and log records (issue 42)."""
from __future__ import annotations

import json

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from faultgate_stream.model.errors import InputError
from faultgate_stream.read import bounds, otlp_json
from faultgate_stream.receive import decode
from faultgate_stream.receive.outcome import classify

TRACE, SPAN = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"


def nested(depth: int, kvlist: bool) -> AnyValue:
    v = AnyValue(string_value="x")
    for _ in range(depth):
        outer = AnyValue()
        if kvlist:
            outer.kvlist_value.values.add(key="k").value.CopyFrom(v)
        else:
            outer.array_value.values.add().CopyFrom(v)
        v = outer
    return v


def traces(value: AnyValue, where: str = "span") -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    spans.add(trace_id=bytes.fromhex(TRACE), span_id=b"\x01" * 8, name="fine")
    s = spans.add(trace_id=bytes.fromhex(TRACE), span_id=bytes.fromhex(SPAN), name="deep")
    attrs = s.events.add(name="e").attributes if where == "event" else s.attributes
    attrs.add(key="k").value.CopyFrom(value)
    return req


def as_json(message) -> bytes:
    from google.protobuf import json_format

    doc = json_format.MessageToDict(message)
    for rs in doc.get("resourceSpans", []):  # OTLP/JSON writes ids in hex, not base64
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                s["traceId"], s["spanId"] = TRACE, "01" * 8 if s["name"] == "fine" else SPAN
    return json.dumps(doc).encode()


@pytest.mark.parametrize("where", ["span", "event"])
@pytest.mark.parametrize("kvlist", [False, True], ids=["arrays", "kvlists"])
@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_a_span_nested_one_level_past_the_bound_is_rejected_alone_naming_the_limit(encoding, kvlist, where):
    for depth, rejected in ((bounds.MAX_VALUE_DEPTH, 0), (bounds.MAX_VALUE_DEPTH + 1, 1)):
        req = traces(nested(depth, kvlist), where)
        body = req.SerializeToString() if encoding == "protobuf" else as_json(req)
        _, decoded = decode.protobuf(body) if encoding == "protobuf" else decode.json_body(body)
        assert (len(decoded.spans), decoded.rejected) == (2 - rejected, rejected)
        if rejected:
            assert decoded.rejections == ((0, 0, 1, "too_deep"),)
            assert f"nested more than {bounds.MAX_VALUE_DEPTH} levels deep" in decoded.first_problem
            assert decoded.first_problem.startswith("resource_spans[0].scope_spans[0].spans[1]" if encoding == "protobuf"
                                                    else "resourceSpans[0].scopeSpans[0].spans[1]")


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_a_span_with_more_values_than_the_bound_is_rejected_alone(encoding):
    flat = AnyValue()
    flat.array_value.values.extend(AnyValue(int_value=i) for i in range(bounds.MAX_VALUES))
    req = traces(flat)  # the array and its elements: one value more than the bound
    body = req.SerializeToString() if encoding == "protobuf" else as_json(req)
    _, decoded = decode.protobuf(body) if encoding == "protobuf" else decode.json_body(body)
    assert [s.name for s in decoded.spans] == ["fine"]
    assert decoded.rejections == ((0, 0, 1, "too_deep"),)
    assert f"more than {bounds.MAX_VALUES} values" in decoded.first_problem


def test_every_attribute_is_bounded_whether_or_not_a_check_reads_it():
    """The projection reads only what the checks need; the bound does not depend on it."""
    from faultgate_stream.read.projection import Projection

    body = traces(nested(bounds.MAX_VALUE_DEPTH + 1, False)).SerializeToString()
    reader = decode.Reader(Projection(()))
    _, decoded = reader.protobuf(body)
    assert decoded.rejected == 1


def test_json_nested_past_its_bound_is_refused_before_it_is_parsed_as_a_permanent_error():
    deep = b'{"resourceSpans":' + b"[" * 5000 + b"]" * 5000 + b"}"
    with pytest.raises(bounds.TooDeep) as e:
        decode.json_body(deep)
    refusal = classify(e.value)
    assert (refusal.http_status, refusal.reason, refusal.retryable) == (400, "too_deep", False)
    assert "128 levels" in refusal.message


def test_the_json_bound_takes_every_request_whose_values_are_within_theirs():
    """An event attribute's AnyValue, nested to the bound in key-value lists (the deepest
    OTLP/JSON spelling), fits MAX_JSON_DEPTH; the depth counter sees brackets only."""
    body = as_json(traces(nested(bounds.MAX_VALUE_DEPTH, True), "event"))
    bounds.check_json_depth(body)
    assert bounds.json_problem([json.loads(as_json(traces(nested(bounds.MAX_VALUE_DEPTH, True))))
                                ["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"][0]["value"]]) == ""
    bounds.check_json_depth(b'{"a": "[[[[' + b"[" * 1000 + b'"}')  # inside a string: not nesting


def logs(body: AnyValue, name: str = "gen_ai.choice") -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    records = req.resource_logs.add().scope_logs.add().log_records
    for event in (name, "gen_ai.user.message"):
        r = records.add(trace_id=bytes.fromhex(TRACE), span_id=bytes.fromhex(SPAN), event_name=event)
        r.body.CopyFrom(body if event == name else AnyValue(string_value="hello"))
    return req


def logs_json(req: ExportLogsServiceRequest) -> bytes:
    from google.protobuf import json_format

    doc = json_format.MessageToDict(req)
    for rl in doc["resourceLogs"]:
        for sl in rl["scopeLogs"]:
            for r in sl["logRecords"]:
                r["traceId"], r["spanId"] = TRACE, SPAN
    return json.dumps(doc).encode()


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_a_log_record_nested_past_the_bound_is_rejected_alone(encoding):
    req = logs(nested(bounds.MAX_VALUE_DEPTH + 1, True))
    _, decoded = (decode.logs_protobuf(req.SerializeToString()) if encoding == "protobuf"
                  else decode.logs_json(logs_json(req)))
    assert (decoded.records, decoded.rejected, len(decoded.contents)) == (2, 1, 1)
    assert decoded.rejections == ("too_deep",)
    assert "nested more than" in decoded.first_problem


def _kv(**members: AnyValue) -> AnyValue:
    v = AnyValue()
    for k, m in members.items():
        v.kvlist_value.values.add(key=k).value.CopyFrom(m)
    return v


def _list(*items: AnyValue) -> AnyValue:
    v = AnyValue()
    v.array_value.values.extend(items)
    return v


WRONG_SHAPES = {
    "tool_calls a number": ("gen_ai.assistant.message", _kv(tool_calls=AnyValue(int_value=5)), "body.tool_calls"),
    "a tool call a list": ("gen_ai.assistant.message", _kv(tool_calls=_list(_list())), "body.tool_calls[0]"),
    "function a number": ("gen_ai.tool.message", _kv(tool_calls=_list(_kv(function=AnyValue(int_value=1)))),
                          "body.tool_calls[0].function"),
    "a choice a list": ("gen_ai.choice", _list(AnyValue(string_value="x")), "gen_ai.choice event's body"),
    "a choice's tool_calls a string": ("gen_ai.choice", _kv(message=_kv(tool_calls=AnyValue(string_value="x"))),
                                       "body.message.tool_calls"),
}


@pytest.mark.parametrize("case", list(WRONG_SHAPES))
@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_a_genai_event_body_of_the_wrong_shape_is_rejected_with_its_place(encoding, case):
    name, body, where = WRONG_SHAPES[case]
    req = logs(body, name)
    _, decoded = (decode.logs_protobuf(req.SerializeToString()) if encoding == "protobuf"
                  else decode.logs_json(logs_json(req)))
    assert (decoded.rejected, len(decoded.contents)) == (1, 1)
    assert decoded.rejections == ("invalid_log_record",)
    assert where in decoded.first_problem and "expected" in decoded.first_problem


PROTO_NAMED = {
    "resource_spans": [{"resource": {"attributes": [{"key": "service.name", "value": {"string_value": "s"}}]},
                        "scope_spans": [{"spans": [
                            {"trace_id": TRACE, "span_id": SPAN, "name": "invoke_agent a",
                             "start_time_unix_nano": "1700000000000000000", "end_time_unix_nano": "1700000001000000000",
                             "attributes": [{"key": "gen_ai.operation.name",
                                             "value": {"string_value": "invoke_agent"}},
                                            {"key": "n", "value": {"int_value": "3"}}],
                             "status": {"code": 2}},
                            {"trace_id": TRACE, "span_id": "0" * 15 + "1", "parent_span_id": SPAN, "name": "step"},
                        ]}]}],
}


def test_otlp_json_with_protobufs_field_names_reads_as_with_its_own():
    camel = json.loads(json.dumps(PROTO_NAMED))
    otlp_json.json_names(camel)
    assert "resourceSpans" in camel and "scopeSpans" in camel["resourceSpans"][0]
    _, proto_named = decode.json_body(json.dumps(PROTO_NAMED).encode())
    _, json_named = decode.json_body(json.dumps(camel).encode())
    assert proto_named.rejected == 0 and len(proto_named.spans) == 2
    assert proto_named.spans == json_named.spans
    root = proto_named.spans[0]
    assert (root.start_ns, root.status_code, root.operation) == (1_700_000_000_000_000_000, 2, "invoke_agent")


def test_a_field_written_under_both_names_is_refused():
    doc = {"resourceSpans": [], "resource_spans": []}
    with pytest.raises(InputError, match="'resource_spans' and as 'resourceSpans'"):
        decode.json_body(json.dumps(doc).encode())


def test_attribute_keys_are_values_and_keep_their_spelling():
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": TRACE, "spanId": SPAN, "attributes": [
        {"key": "some_key", "value": {"kvlistValue": {"values": [{"key": "inner_key", "value": {"intValue": "1"}}]}}}
    ]}]}]}]}
    otlp_json.json_names(doc)
    kv = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][0]
    assert kv["key"] == "some_key" and kv["value"]["kvlistValue"]["values"][0]["key"] == "inner_key"


def test_a_trace_file_in_protobufs_field_names_is_read_as_one_in_otlp_jsons(tmp_path):
    from faultgate_stream.read.files import read_file

    camel = json.loads(json.dumps(PROTO_NAMED))
    otlp_json.json_names(camel)
    (tmp_path / "proto.json").write_text(json.dumps(PROTO_NAMED))
    (tmp_path / "json.json").write_text(json.dumps(camel))
    assert read_file(tmp_path / "proto.json") == read_file(tmp_path / "json.json")
    assert len(read_file(tmp_path / "proto.json")[1]) == 2


def test_a_json_span_with_a_malformed_parent_is_rejected_not_read_as_a_root():
    """Issue 42: an OTLP/JSON span whose parentSpanId was 7 bytes lost its parent and was
    taken as a root (the protobuf reader rejects the same span)."""
    span = {"traceId": TRACE, "spanId": SPAN, "parentSpanId": "eee19b7ec3c1b1", "name": "step"}
    _, decoded = decode.json_body(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode())
    assert (decoded.spans, decoded.rejected) == ([], 1)
    assert "parentSpanId: 'eee19b7ec3c1b1' is not a 16-digit hex id" in decoded.first_problem
