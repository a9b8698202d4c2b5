"""The compiled OTLP/JSON reader (native/py/src/read/otlp_json.rs) against the Python reader it
replaced (tests/read/otlp_json_oracle.py): the same records, or the same refusal word for
word, on generated documents, their tree and byte mutants, and every OTLP/JSON file in
the repository's tests and the parity corpus.

Both ways in are compared: the file's bytes (``read_bytes``, what ``check`` takes) and a
document Python parsed (``read``, for JSON the compiled lexer refuses: NaN, lone
surrogates, a byte order mark, deep nesting). Records are compared by ``repr``, which
tells apart what ``==`` does not (1 and 1.0 and True) and holds NaN equal to itself.
"""
from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgate_stream.model.errors import InputError
from faultgate_stream.read import otlp_json, payload
from faultgate_stream.read.files import read_telemetry
from tests.conftest import CORPUS
from tests.fuzz import strategies
from tests.fuzz.mutate import byte_mutant, mutant
from tests.read import otlp_json_oracle as oracle

TESTS = Path(__file__).resolve().parent.parent


def records_repr(records) -> str:
    """The records' ``repr`` with their attributes as a dict's, whichever mapping holds them
    (the Python reader's dict, ``NO_ATTRS``, the compiled reader's ``SpanAttributes``)."""
    return repr([r._replace(attrs=dict(r.attrs)) for r in records])


def _outcome(read, doc):
    try:
        return "records", records_repr(read(doc))
    except InputError as e:
        return "refused", str(e)
    except RecursionError:  # the Python reader's stack ran out (read_telemetry says "nested too deep")
        return "refused", "nested too deep"


def _is_trace_document(doc) -> bool:
    return isinstance(doc, dict) and "resourceSpans" in doc and "resourceLogs" not in doc


def _only_python_reads(data: bytes) -> bool:
    """JSON that serde_json refuses by design and Python's json accepts."""
    return (any(w in data for w in (b"NaN", b"Infinity", b"\\ud", b"\\uD", b"\xef\xbb\xbf"))
            or max(_depths(data), default=0) > 120)


def _depths(data: bytes):
    depth = 0
    for c in data:
        depth += (c in b"[{") - (c in b"]}")
        yield depth


def same_as_the_python_reader(data: bytes, *, must_take_bytes: bool = False) -> None:
    """One input, every way in, against the oracle."""
    try:
        doc = payload.loads(data)
    except ValueError:
        doc = ValueError
    try:
        fast = otlp_json.read_bytes(data)
        fast_outcome = None if fast is None else ("records", records_repr(fast))
    except InputError as e:
        fast_outcome = "refused", str(e)
    if doc is ValueError or not _is_trace_document(doc):
        # not a document the OTLP/JSON reader is given: the compiled one must hand it back
        assert fast_outcome is None, data[:200]
        return
    expected = _outcome(oracle.read, copy.deepcopy(doc))
    assert _outcome(otlp_json.read, doc) == expected, data[:300]
    if fast_outcome is None:
        assert not (must_take_bytes and not _only_python_reads(data)), data[:300]
    else:
        assert fast_outcome == expected, data[:300]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(strategies.otlp_document())
def test_generated_documents_read_as_the_python_reader_read_them(doc):
    same_as_the_python_reader(strategies.dumps(doc), must_take_bytes=True)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(strategies.otlp_document(), st.integers(0, 2**32))
def test_tree_and_byte_mutants_read_as_the_python_reader_read_them(doc, seed):
    rng = random.Random(seed)
    data = strategies.dumps(doc)
    for _ in range(4):
        same_as_the_python_reader(strategies.dumps(mutant(doc, rng)))
        same_as_the_python_reader(byte_mutant(data, rng))


def _json_files():
    files = sorted(p for root in (TESTS, CORPUS) for p in root.rglob("*.json") if ".venv" not in p.parts)
    return [p for p in files if p.stat().st_size < 20_000_000]


def _otlp_files():
    out = []
    for p in _json_files():
        try:
            doc = payload.loads(p.read_bytes())
        except ValueError:
            continue
        if isinstance(doc, dict) and "resourceSpans" in doc:
            out.append(p)
    return out


OTLP_FILES = _otlp_files()


def test_there_are_otlp_json_files_to_compare():
    # the files below come from tests/ and the parity corpus: an empty list would pass them all
    assert len(OTLP_FILES) >= 20
    assert any(CORPUS in p.parents for p in OTLP_FILES)


@pytest.mark.parametrize("path", OTLP_FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_otlp_json_file_reads_as_the_python_reader_read_it(path):
    same_as_the_python_reader(path.read_bytes(), must_take_bytes=True)


@pytest.mark.parametrize("path", [p for p in OTLP_FILES if CORPUS in p.parents][:12],
                         ids=lambda p: p.name)
def test_a_file_and_its_mutants_read_as_the_python_reader_read_them(path):
    data = path.read_bytes()
    doc = payload.loads(data)
    rng = random.Random(path.name)
    for _ in range(6):
        same_as_the_python_reader(json.dumps(mutant(doc, rng)).encode())
        same_as_the_python_reader(byte_mutant(data, rng))


CASES = {
    "ids in upper case and base64": {"traceId": "0AF7651916CD43DD8448EB211C80319C", "spanId": "7wD0sTwwF0Q="},
    "a trace id as a number": {"traceId": 12345678901234567890123456789012},
    "a span id that is not hex": {"spanId": "zz"},
    "a parent id of 0 and of false": {"parentSpanId": 0},
    "a parent id that is not hex": {"parentSpanId": "x"},
    "times as numbers, floats and strings": {"startTimeUnixNano": 1.9, "endTimeUnixNano": " 12 "},
    "a time past 2^64": {"endTimeUnixNano": 2**64},
    "a negative time": {"startTimeUnixNano": "-1"},
    "a time that is not a number": {"startTimeUnixNano": [1]},
    "a status by name": {"status": {"code": "STATUS_CODE_ERROR", "message": 7}},
    "a status as digits": {"status": {"code": "2"}},
    "a status as a float": {"status": {"code": 2.0}},
    "a status as true": {"status": {"code": True}},
    "a status too large for 64 bits": {"status": {"code": 2**70}},
    "a status that is a list": {"status": [1]},
    "a name that is null": {"name": None},
    "a name that is a list": {"name": ["a", 1.5]},
    "attributes not a list": {"attributes": {"k": 1}},
    "an attribute without a key": {"attributes": [{"value": {"stringValue": "x"}}]},
    "an attribute with a numeric key": {"attributes": [{"key": 1, "value": {"stringValue": "x"}}]},
    "every AnyValue kind": {"attributes": [
        {"key": "s", "value": {"stringValue": "x"}}, {"key": "i", "value": {"intValue": "-42"}},
        {"key": "i2", "value": {"intValue": 7}}, {"key": "i3", "value": {"intValue": "1_000"}},
        {"key": "d", "value": {"doubleValue": "1e3"}}, {"key": "d2", "value": {"doubleValue": 2}},
        {"key": "b", "value": {"boolValue": "false"}}, {"key": "y", "value": {"bytesValue": "aGk="}},
        {"key": "a", "value": {"arrayValue": {"values": [{"intValue": "1"}, "raw", None]}}},
        {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "x", "value": {"boolValue": True}}]}}},
        {"key": "none", "value": {}}, {"key": "raw", "value": [1, {"a": None}]},
        {"key": "s", "value": {"stringValue": "repeated key: the last wins"}},
    ]},
    "an intValue that is not an integer": {"attributes": [{"key": "k", "value": {"intValue": "1.5"}}]},
    "an intValue of infinity": {"attributes": [{"key": "k", "value": {"intValue": 1e400}}]},
    "a doubleValue that is not a number": {"attributes": [{"key": "k", "value": {"doubleValue": "x"}}]},
    "bytesValue that is not base64": {"attributes": [{"key": "k", "value": {"bytesValue": "abc"}}]},
    "bytesValue that is not text": {"attributes": [{"key": "k", "value": {"bytesValue": 5}}]},
    "arrayValue a string": {"attributes": [{"key": "k", "value": {"arrayValue": "x"}}]},
    "arrayValue values null": {"attributes": [{"key": "k", "value": {"arrayValue": {"values": None}}}]},
    "a kvlist entry without a key": {"attributes": [{"key": "k", "value": {"kvlistValue": {"values": [3]}}}]},
    "a bad value nested three deep": {"attributes": [{"key": "k", "value": {"arrayValue": {"values": [
        {"arrayValue": {"values": [{"kvlistValue": {"values": [{"key": "z", "value": {"intValue": "q"}}]}}]}}]}}}]},
    "an evaluation event": {"events": [
        {"name": "gen_ai.evaluation.result", "attributes": [
            {"key": "gen_ai.evaluation.name", "value": {"stringValue": "judge"}},
            {"key": "gen_ai.evaluation.score.value", "value": {"doubleValue": 0.5}}]},
        {"name": "other", "attributes": [{"key": "k", "value": {"intValue": "bad"}}]}]},
    "an evaluation event with a bad value": {"events": [
        {"name": "gen_ai.evaluation.result", "attributes": [{"key": "k", "value": {"intValue": "bad"}}]}]},
    "events not a list": {"events": {"name": "gen_ai.evaluation.result"}},
    # serde_json's private marker for numbers, written by a document as an ordinary key
    "a key that is serde_json's number marker": {"$serde_json::private::Number": "1", "attributes": [
        {"key": "k", "value": {"$serde_json::private::Number": "2"}}]},
}


def _doc_of(fields):
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "chat"} | fields
    return {"resourceSpans": [
        {"resource": {"attributes": [{"key": "service.version", "value": {"stringValue": "1.2"}}]},
         "scopeSpans": [{"spans": [span, {**span, "spanId": "b7ad6b7169203332", "parentSpanId": "b7ad6b7169203331"}]}]}]}


@pytest.mark.parametrize("fields", CASES.values(), ids=CASES.keys())
def test_each_rule_of_the_python_reader_holds(fields):
    same_as_the_python_reader(json.dumps(_doc_of(fields)).encode(), must_take_bytes=True)


@pytest.mark.parametrize("text", [
    b'{"resourceSpans": 3}', b'{"resourceSpans": null}', b'{"resourceSpans": [3]}',
    b'{"resourceSpans": [{"scopeSpans": {}}]}', b'{"resourceSpans": [{"scopeSpans": [{"spans": 1}]}]}',
    b'{"resourceSpans": [null, {"scopeSpans": null}, {"scopeSpans": [null, {"spans": [7]}]}]}',
    b'{"resourceSpans": [{"resource": {"attributes": [{"key": "service.version", "value": {"intValue": "x"}}]}}]}',
    b'{"resourceSpans": [], "resourceSpans": 5}',
])
def test_containers_of_the_wrong_shape_are_refused_as_before(text):
    same_as_the_python_reader(text, must_take_bytes=True)


@pytest.mark.parametrize("text", [
    b'\xef\xbb\xbf{"resourceSpans": []}',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0af7651916cd43dd8448eb211c80319c", '
    b'"spanId": "b7ad6b7169203331", "attributes": [{"key": "\\udcff", "value": {"doubleValue": NaN}}]}]}]}]}',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0af7651916cd43dd8448eb211c80319c", '
    b'"spanId": "b7ad6b7169203331", "startTimeUnixNano": Infinity}]}]}]}',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0af7651916cd43dd8448eb211c80319c", '
    b'"spanId": "b7ad6b7169203331", "name": "\\ud800", "attributes": [{"key": "k", "value": '
    + b'{"arrayValue": {"values": [' * 60 + b'1' + b']}}' * 60 + b'}]}]}]}]}',
])
def test_json_only_python_reads_goes_the_python_way_and_reads_the_same(text):
    assert otlp_json.read_bytes(text) is None
    same_as_the_python_reader(text)


def test_values_nested_past_any_stack_are_refused_not_a_crash():
    v: dict = {"stringValue": "x"}
    for _ in range(3000):
        v = {"arrayValue": {"values": [v]}}
    doc = _doc_of({"attributes": [{"key": "k", "value": v}]})
    with pytest.raises(InputError, match=r"attributes\['k'\]: not an AnyValue \(InputError: not an AnyValue"):
        otlp_json.read(doc)


def test_not_utf8_and_not_json_are_handed_back_and_refused_by_the_file_reader(tmp_path):
    for name, data in (("latin1.json", b'{"resourceSpans": [{"x": "\xe9"}]}'), ("cut.json", b'{"resourceSpans": [')):
        assert otlp_json.read_bytes(data) is None
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputError, match="not UTF-8|not valid JSON"):
            read_telemetry(tmp_path / name)


def test_a_bad_span_is_named_with_the_file():
    data = json.dumps(_doc_of({"spanId": "zz"})).encode()
    with pytest.raises(InputError) as e:
        otlp_json.read_bytes(data)
    assert str(e.value) == "resourceSpans[0].scopeSpans[0].spans[0].spanId: 'zz' is not a 16-digit hex span id"


def test_the_number_marker_escaped_is_an_ordinary_key_too():
    text = json.dumps(_doc_of({"attributes": [{"key": "k", "value": {"$serde_json::private::Number": "2"}}]}))
    same_as_the_python_reader(text.replace("$serde", "\\u0024serde").encode(), must_take_bytes=True)
    assert payload.loads('{"\\u0024serde_json::private::Number": "1"}') == {"$serde_json::private::Number": "1"}


def test_a_tree_read_from_python_objects_gives_back_every_reference_it_took():
    """read_doc keeps the Python objects it cannot hold as Rust values (a lone surrogate, an
    int past 64 bits, a value nested past its limit) in an arena for the read: each must be
    released when the read is over, refused or not, or every such file would leak them."""
    import sys

    surrogate, big = "\ud800 x" + "y" * 20, 10 ** 30
    doc = _doc_of({"attributes": [{"key": "s", "value": {"stringValue": surrogate}},
                                  {"key": "n", "value": {"intValue": big}}]})
    bad = _doc_of({"attributes": [{"key": "n", "value": {"intValue": big}}], "startTimeUnixNano": surrogate})
    before = sys.getrefcount(surrogate), sys.getrefcount(big)
    for _ in range(50):
        otlp_json._READER.read_doc(doc)
        with pytest.raises(ValueError):
            otlp_json._READER.read_doc(bad)
    assert (sys.getrefcount(surrogate), sys.getrefcount(big)) == before
