"""The reader's shortcuts give exactly what the plain code they stand in for gives."""
from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultgate_stream.model.errors import InputError
from faultgate_stream.read import files, payload
from faultgate_stream.read.formats import READERS
from faultgate_stream.read.ids import hex_id

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(min_value=-(10**30), max_value=10**30) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _same(a, b) -> bool:
    # repr tells 1 from 1.0 and -0.0 from 0.0, which == does not
    return type(a) is type(b) and repr(a) == repr(b)


@settings(max_examples=400)
@given(JSON_VALUES, st.sampled_from([None, 1]), st.booleans(), st.booleans())
def test_loads_gives_what_json_loads_gives(value, indent, ascii_only, as_bytes):
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    raw = text.encode() if as_bytes else text
    assert _same(payload.loads(raw), json.loads(raw))


@pytest.mark.parametrize("text", [
    "[NaN, Infinity, -Infinity]", '["\\ud800"]', "1e400", "123456789012345678901234567890",
    "-9999999999999999999", '{"a": 1, "a": 2}', b'\xef\xbb\xbf{"a": 1}', '{"a": 1}'.encode("utf-16"),
    b'"\xed\xa0\x80"',
    # the compiled decoder's own cases: numbers it reads from their text, nesting past its 128 levels
    "-0", "[-0.0, 1E5, 1e-400, 2.5e+3, 18446744073709551616, -9223372036854775809]", '"\\ud83d\\ude00 \\u00e9"',
    "[" * 200 + "]" * 200, '{"$serde_json::private::Number": "1"}', '{"a": {"b": []}, "": null} ',
])
def test_loads_accepts_what_json_loads_accepts(text):
    assert _same(payload.loads(text), json.loads(text))


@pytest.mark.parametrize("text", ["", "[1, 2", "{'a': 1}", "[1,]", "\ufeff[1]", b'"\xff"', '"\t"', "[01]"])
def test_loads_refuses_with_json_loads_error(text):
    with pytest.raises(ValueError) as ours:
        payload.loads(text)
    with pytest.raises(ValueError) as theirs:
        json.loads(text)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


def test_vendor_format_names_are_the_readers_in_order():
    assert files.VENDOR_FORMATS == tuple(READERS)


def test_an_unreadable_file_keeps_its_json_error(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"resourceSpans": [1,]}', encoding="utf-8")
    with pytest.raises(InputError, match=r"not valid JSON \(Expecting value: line 1 column 22 \(char 21\)\)"):
        files.read_file(p)


def _hex_id_without_shortcut(raw: str, nbytes: int) -> str | None:
    s = raw.strip().lower()
    if len(s) == 2 * nbytes and set(s) <= set("0123456789abcdef"):
        h = s
    else:
        try:
            b = base64.b64decode(raw, validate=True)
        except ValueError:
            return None
        h = b.hex() if len(b) == nbytes else ""
    return h if h and h.strip("0") else None


@settings(max_examples=400)
@given(st.text(alphabet="0123456789abcdefABCDEF +/=xg", max_size=40), st.sampled_from([8, 16]))
def test_hex_id_shortcut_agrees_with_the_full_check(raw, nbytes):
    assert hex_id(raw, nbytes) == _hex_id_without_shortcut(raw, nbytes)


ATTR_KEYS = st.sampled_from([
    "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.completion", "error.type",
    "gen_ai.prompt.0.content", "gen_ai.completion.0.content", "llm.input_messages.0.message.content",
    "traceloop.span.kind", "input.value", "gen_ai.agent.name", "custom.key",
])
ATTR_VALUES = st.sampled_from(["execute_tool", "chat", "invoke_agent", "tool", "x", '{"a": 1}', "",
                               "Sorry, need more steps to process this request.",
                               '[{"role": "assistant", "parts": [{"type": "text", '
                               '"content": "Sorry, need more steps to process this request."}]}]']) | st.integers()


@settings(max_examples=300)
@given(st.dictionaries(ATTR_KEYS, ATTR_VALUES, max_size=8), st.sampled_from(["execute_tool lookup", "chat", "agent"]))
def test_a_span_read_from_attributes_it_owns_is_the_span_read_from_a_copy(attrs, name):
    """``build_span(owned=True)`` keeps the reader's dict instead of copying it: same record."""
    from faultgate_stream.read.conventions import build_span

    given_copy = dict(attrs)
    copied = build_span("t" * 32, "s" * 16, "p" * 16, name, 1, 2, 0, "", given_copy)
    owned = build_span("t" * 32, "s" * 16, "p" * 16, name, 1, 2, 0, "", dict(attrs), owned=True)
    assert owned == copied
    assert given_copy == attrs  # a dict the caller did not give up is left as it was


def test_a_request_read_with_ids_remembered_rejects_what_the_full_check_rejects():
    """Ids are checked once per distinct value in a request: a 16-byte parent id equal to a
    trace id is still not a span id."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from faultgate_stream.read.otlp_proto import read

    tid = bytes(range(1, 17))
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    spans.add(trace_id=tid, span_id=b"\x01" * 8, name="root")
    spans.add(trace_id=tid, span_id=b"\x02" * 8, parent_span_id=b"\x01" * 8, name="child")
    spans.add(trace_id=tid, span_id=b"\x03" * 8, parent_span_id=tid, name="bad parent")
    decoded = read(req.SerializeToString())
    assert [s.name for s in decoded.spans] == ["root", "child"]
    assert decoded.rejected == 1 and "spans[2]: parent_span_id is not 8 bytes" in decoded.first_problem
