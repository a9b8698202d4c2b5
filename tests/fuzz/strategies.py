"""Hypothesis strategies for hostile OTLP: documents shaped like traces, with every field
a place where a sender may write the wrong thing.

The shapes come from where readers look (``read/conventions.py``, ``read/otlp_json.py``,
the vendor readers): the attribute keys they read, the message ``parts`` they walk, the
indexed keys they parse, and the value types OTLP allows and JSON does not forbid.
"""
from __future__ import annotations

import json

from hypothesis import strategies as st

# JSON values of any shape, nested a little; deep nesting has its own strategy below.
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=20), st.sampled_from(["", "text", "tool_call", "tool_call_response", "user",
                                                          "assistant", "tool", "Error: x", "{", "[1]"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)


def mostly(good, bad, weight: int = 15):
    """``good`` about ``weight`` times in ``weight + 1``: deep enough into the readers to
    reach their leaves, and still the wrong shape at every level now and then."""
    return st.integers(0, weight).flatmap(lambda i: bad if i == weight else good)


huge_int = st.integers(min_value=1, max_value=9).map(lambda d: str(d) * 5000)
deep = st.integers(min_value=900, max_value=6000).map(lambda n: "[" * n + "]" * n)
deep_obj = st.integers(min_value=900, max_value=6000).map(lambda n: '{"a":' * n + "1" + "}" * n)

part = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_call", "tool_call_response"])},
                          optional={"content": json_values, "text": json_values, "id": json_values,
                                    "name": json_values, "arguments": json_values, "result": json_values,
                                    "response": json_values, "is_error": json_values, "error": json_values,
                                    "status": json_values}),
    json_values,
)
message = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool", "system"])},
                          optional={"parts": st.one_of(st.lists(part, max_size=4), json_values),
                                    "content": json_values}),
    json_values,
)
messages_text = st.one_of(st.lists(message, max_size=4).map(json.dumps), deep, deep_obj, st.text(max_size=30),
                          huge_int)

KEYS = [
    "gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.agent.version", "gen_ai.agent.id", "gen_ai.tool.name",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.tool.call.id", "gen_ai.input.messages",
    "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.completion", "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "faultgate.cost_usd", "faultgate.scenario",
    "faultgate.outcome", "faultgate.termination", "faultgate.confirmed", "enduser.id", "error.type",
    "openinference.span.kind", "input.value", "output.value", "metadata", "tool.name", "tool.parameters",
    "llm.token_count.prompt", "llm.finish_reason", "traceloop.span.kind", "traceloop.entity.name",
    "traceloop.entity.input", "traceloop.entity.output", "llm.response.finish_reason",
    "llm.input_messages.0.message.role", "llm.output_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "gen_ai.prompt.0.content", "gen_ai.completion.0.tool_calls.0.name", "gen_ai.completion.0.finish_reason",
]
INDEXED = st.builds(lambda a, n, b: f"{a}.{n}.{b}",
                    st.sampled_from(["gen_ai.prompt", "gen_ai.completion", "llm.input_messages",
                                     "llm.output_messages"]),
                    st.one_of(st.integers(0, 3).map(str), huge_int),
                    st.sampled_from(["content", "role", "message.content", "message.role",
                                     "message.tool_calls.1.tool_call.id", "tool_calls.0.arguments",
                                     "tool_calls." + "9" * 5000 + ".name", "finish_reason", "tool_call_id"]))
OPERATIONS = st.sampled_from(["invoke_agent", "execute_tool", "chat", "AGENT", "TOOL", "LLM", "CHAIN", "agent",
                              "tool", "workflow", "task"])


def _nested_any_value(depth: int) -> dict:
    v: dict = {"stringValue": "x"}
    for n in range(depth):
        v = {"arrayValue": {"values": [v]}} if n % 2 else {"kvlistValue": {"values": [{"key": "k", "value": v}]}}
    return v


any_value = st.one_of(
    st.builds(lambda s: {"stringValue": s}, st.one_of(messages_text, OPERATIONS, st.text(max_size=20))),
    st.builds(lambda i: {"intValue": i}, st.one_of(st.integers(-2**63, 2**63 - 1).map(str), huge_int,
                                                   st.text(max_size=5))),
    st.builds(lambda f: {"doubleValue": f}, st.one_of(st.floats(), st.sampled_from(["Infinity", "NaN", "-Infinity"]))),
    st.builds(lambda b: {"boolValue": b}, st.booleans()),
    st.builds(lambda b: {"bytesValue": b}, st.sampled_from(["aGVsbG8=", "!!notbase64", "", "AAEC"])),
    st.builds(lambda xs: {"arrayValue": {"values": xs}},
              st.lists(st.one_of(st.builds(lambda s: {"stringValue": s}, st.text(max_size=10)),
                                 st.builds(lambda i: {"intValue": str(i)}, st.integers(-10, 10)),
                                 st.just({"bytesValue": "aGk="}), json_values), max_size=3)),
    st.builds(lambda kv: {"kvlistValue": {"values": kv}},
              st.lists(st.one_of(st.fixed_dictionaries({"key": st.text(max_size=5),
                                                        "value": st.just({"stringValue": "v"})}), json_values),
                       max_size=3)),
    st.integers(min_value=50, max_value=250).map(_nested_any_value),
    json_values,
)
attribute = mostly(st.one_of(
    st.fixed_dictionaries({"key": st.one_of(st.sampled_from(KEYS), INDEXED), "value": any_value}),
    st.fixed_dictionaries({"key": st.sampled_from(KEYS), "value": st.builds(lambda o: {"stringValue": o},
                                                                              OPERATIONS)}),
    st.fixed_dictionaries({"key": st.one_of(st.integers(), st.none(), st.booleans()),
                           "value": st.just({"stringValue": "x"})})),
    json_values)

HEX32 = st.sampled_from(["5b8efff798038103d269b633813fc60c", "0af7651916cd43dd8448eb211c80319c"])
HEX16 = st.sampled_from(["eee19b7ec3c1b174", "eee19b7ec3c1b175", "eee19b7ec3c1b176", "aaaaaaaaaaaaaaaa"])
ids = st.one_of(HEX32, HEX16, st.text(max_size=40), st.integers(), st.none(), json_values)


def span_strategy():
    return st.fixed_dictionaries(
        {"traceId": mostly(HEX32, ids), "spanId": mostly(HEX16, ids)},
        optional={
            "parentSpanId": mostly(st.one_of(HEX16, st.just("")), ids),
            "name": mostly(st.sampled_from(["invoke_agent a", "execute_tool t", "execute_tool u", "chat",
                                            "execute_tool"]), json_values),
            "startTimeUnixNano": mostly(st.integers(0, 2**64).map(str), st.one_of(st.integers(), huge_int,
                                                                                  json_values)),
            "endTimeUnixNano": mostly(st.integers(0, 2**64).map(str), st.one_of(huge_int, json_values)),
            "attributes": mostly(st.lists(attribute, max_size=8), json_values),
            "status": st.one_of(st.fixed_dictionaries({}, optional={"code": st.one_of(
                st.integers(), st.sampled_from(["STATUS_CODE_ERROR", "2", "bad", "9" * 5000]), json_values),
                "message": json_values}), json_values),
            "events": st.one_of(st.lists(st.one_of(st.fixed_dictionaries(
                {"name": st.just("gen_ai.evaluation.result"),
                 "attributes": st.lists(attribute, max_size=3)}), json_values), max_size=2), json_values),
            "kind": st.one_of(st.integers(), json_values),
        })


def otlp_document():
    spans = mostly(st.lists(mostly(span_strategy(), json_values), min_size=1, max_size=6), json_values)
    scope = mostly(st.fixed_dictionaries({"spans": spans}), json_values)
    resource = mostly(st.fixed_dictionaries({"scopeSpans": mostly(st.lists(scope, min_size=1, max_size=2),
                                                                  json_values)}), json_values)
    return st.fixed_dictionaries({"resourceSpans": mostly(st.lists(resource, min_size=1, max_size=2),
                                                          json_values)})


def dumps(doc) -> bytes:
    """JSON text, NaN and Infinity included (as Python and many exporters write them)."""
    return json.dumps(doc, allow_nan=True).encode()


def any_document():
    """A document for the offline readers: OTLP-shaped, vendor-shaped (lists of records
    with the keys vendor readers detect), or anything."""
    vendor_keys = ["id", "trace_id", "traceId", "run_id", "parent_run_id", "parentObservationId", "type",
                   "run_type", "name", "input", "output", "inputs", "outputs", "start_time", "end_time",
                   "startTime", "endTime", "span_id", "span_parents", "root_span_id", "metrics", "metadata",
                   "error", "status", "extra", "child_runs", "observations", "data", "resultData", "runData",
                   "nodes", "tasks", "agent", "context", "parent_id", "attributes", "events", "kind",
                   "start_time_unix_nano", "spans", "steps", "usage", "tool_calls", "messages"]
    record = st.dictionaries(st.sampled_from(vendor_keys), st.one_of(json_values, HEX32, HEX16,
                                                                     st.sampled_from(["2024-01-01T00:00:00Z",
                                                                                      "llm", "tool", "chain"])),
                             max_size=10)
    return st.one_of(otlp_document(), st.lists(record, max_size=5), record,
                     st.dictionaries(st.sampled_from(vendor_keys), st.lists(record, max_size=4), max_size=3),
                     json_values)


