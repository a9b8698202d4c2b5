"""Defect 2 of issue 9: one regression test per crash site the fuzzer found in reading and
completion. Each input once raised TypeError, ValueError, AttributeError, OverflowError or
RecursionError inside a reader, which a receiver answered ``UNAVAILABLE: internal error``
(retried forever) and ``check`` with a traceback. Now a span that cannot be understood is
read as far as it goes, or rejected with a message; never an internal error."""
from __future__ import annotations

import json
import math

import pytest

from faultgate_stream.model.errors import InputError
from faultgate_stream.read import otlp_json, payload
from faultgate_stream.read.conventions import build_span

T, S = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"


def _span(attrs):
    return build_span(T, S, None, "invoke_agent a", 1, 2, 0, "", {"gen_ai.operation.name": "invoke_agent", **attrs})


def _doc(span=None, **over):
    s = {"traceId": T, "spanId": S, "name": "invoke_agent a",
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}]}
    s.update(span or {})
    return {"resourceSpans": [{"scopeSpans": [{"spans": [s]}]}], **over}


@pytest.mark.parametrize("key", ["gen_ai.input.messages", "gen_ai.output.messages"])
def test_messages_whose_parts_are_not_a_list_are_read_as_having_none(key):
    rec = _span({key: json.dumps([{"role": "assistant", "parts": 5}, {"role": "user", "parts": True}])})
    assert rec.calls == () and rec.responses == ()


def test_messages_nested_thousands_deep_are_text_not_a_recursion_error():
    deep = "[" * 5000 + "]" * 5000
    rec = _span({"gen_ai.output.messages": deep, "gen_ai.input.messages": deep})
    assert rec.answer == deep and rec.prompt == deep
    with pytest.raises(ValueError):
        payload.loads(deep)


def test_bytes_inside_a_value_are_written_as_base64_where_text_is_expected():
    assert payload.render([b"\x00\x01", 1]) == '["AAE=", 1]'
    assert payload.tool_payload({"a": b"hi"}) == '{"a": "aGk="}'
    rec = build_span(T, S, None, "t", 1, 2, 0, "", {"traceloop.span.kind": "agent", "traceloop.entity.input": b"x",
                                                    "traceloop.entity.output": [b"y"]})
    assert rec.prompt == '"eA=="' and rec.answer == '["eQ=="]'


@pytest.mark.parametrize("key", ["gen_ai.prompt.{}.content", "llm.output_messages.{}.message.content",
                                 "gen_ai.completion.0.tool_calls.{}.name"])
def test_an_index_of_5000_digits_is_an_attribute_not_an_int_conversion_error(key):
    attrs = {key.format("7" * 5000): "hello", "traceloop.span.kind": "llm", "openinference.span.kind": "LLM"}
    build_span(T, S, "eee19b7ec3c1b175", "chat", 1, 2, 0, "", attrs)
    del attrs["openinference.span.kind"]
    build_span(T, S, "eee19b7ec3c1b175", "chat", 1, 2, 0, "", attrs)


@pytest.mark.parametrize("tokens", [math.inf, -math.inf, math.nan])
def test_a_non_finite_openinference_token_count_is_no_count(tokens):
    rec = build_span(T, S, "eee19b7ec3c1b175", "chat", 1, 2, 0, "",
                     {"openinference.span.kind": "LLM", "llm.token_count.prompt": tokens})
    assert "gen_ai.usage.input_tokens" not in rec.attrs


@pytest.mark.parametrize("bad", [{"scopeSpans": {"spans": []}}, [1], "x", {"scopeSpans": [{"spans": 3}]},
                                 {"scopeSpans": [[]]}])
def test_a_container_of_the_wrong_shape_is_an_input_error_naming_it(bad):
    with pytest.raises(InputError, match=r"resourceSpans\[0\]"):
        otlp_json.read({"resourceSpans": [bad]})
    with pytest.raises(InputError, match=r"resourceSpans\[0\]"):
        otlp_json.to_request({"resourceSpans": [bad]})


@pytest.mark.parametrize("value", [{"intValue": "9" * 5000}, {"intValue": "x"}, {"doubleValue": "abc"},
                                   {"bytesValue": "!!not base64"}, {"arrayValue": {"values": 3}},
                                   {"kvlistValue": {"values": [{"value": 1}]}},
                                   {"kvlistValue": {"values": [[1]]}}])
def test_an_attribute_value_of_the_wrong_shape_is_an_input_error_naming_the_attribute(value):
    doc = _doc({"attributes": [{"key": "k", "value": value}]})
    with pytest.raises(InputError, match=r"spans\[0\]\.attributes\['k'\]"):
        otlp_json.read(doc)


def test_an_attribute_value_nested_deeper_than_the_stack_is_an_input_error():
    v: dict = {"stringValue": "x"}
    for _ in range(3000):
        v = {"arrayValue": {"values": [v]}}
    with pytest.raises(InputError):
        otlp_json.read(_doc({"attributes": [{"key": "k", "value": v}]}))


@pytest.mark.parametrize("key", [5, None, True, [1]])
def test_an_attribute_key_that_is_not_a_string_is_an_input_error(key):
    with pytest.raises(InputError, match="attributes"):
        otlp_json.read(_doc({"attributes": [{"key": key, "value": {"stringValue": "x"}}]}))


@pytest.mark.parametrize("status", [[1], "error", 3])
def test_a_status_that_is_not_an_object_is_an_input_error(status):
    with pytest.raises(InputError, match="status"):
        otlp_json.read(_doc({"status": status}))


@pytest.mark.parametrize("code", ["9" * 5000, "²"])
def test_a_status_code_of_digits_int_cannot_read_is_an_input_error(code):
    with pytest.raises(InputError, match="status.code"):
        otlp_json.read(_doc({"status": {"code": code}}))


@pytest.mark.parametrize("events", [3, [{"name": "gen_ai.evaluation.result", "attributes": 5}],
                                    [{"name": "gen_ai.evaluation.result", "attributes": [{"key": [1]}]}]])
def test_evaluation_events_of_the_wrong_shape_are_skipped(events):
    assert len(otlp_json.read(_doc({"events": events}))) == 1


@pytest.mark.parametrize("attributes", [1.5, "x", {"key": "k"}])
def test_attributes_that_are_not_a_list_are_an_input_error(attributes):
    """Found by the soak (bench/fuzz_soak.py, input 8,984): a float as ``attributes``."""
    with pytest.raises(InputError, match="attributes"):
        otlp_json.read(_doc({"attributes": attributes}))


# Found by the mutation soak (bench/fuzz_soak.py), which re-runs these shapes at depth.
@pytest.mark.parametrize("field,value", [("startTimeUnixNano", float("inf")), ("endTimeUnixNano", float("-inf")),
                                         ("startTimeUnixNano", str(2**64)), ("endTimeUnixNano", "-1"),
                                         ("startTimeUnixNano", 10**400)])
def test_a_span_time_that_is_not_a_fixed64_nanosecond_is_rejected_naming_the_field(field, value):
    with pytest.raises(InputError, match=rf"spans\[0\]\.{field}"):
        otlp_json.read(_doc({field: value}))


def test_a_resource_that_is_not_an_object_is_read_as_having_no_attributes():
    doc = _doc()
    doc["resourceSpans"][0]["resource"] = [{"attributes": []}]
    assert len(otlp_json.read(doc)) == 1


@pytest.mark.parametrize("doc", [{"resourceSpans": [{"\udcff": 1}]},
                                 {"resourceSpans": [{"scopeSpans": [{"spans": [{"droppedEventsCount": float("inf")}]}]}]}])
def test_documents_protobuf_json_format_chokes_on_are_input_errors(doc):
    with pytest.raises(InputError, match="not a valid OTLP/JSON trace export"):
        otlp_json.to_request(doc)
