"""checks/signals.py's compiled functions give what the Python ones gave
(tests/checks/checks_oracle.py): on every JSON shape hypothesis can write (any nesting,
NaN and infinities, big integers, escapes, lone surrogates, duplicate keys, any spacing)
and on arbitrary text."""
from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgate_stream import _native
from faultgate_stream.checks import signals
from faultgate_stream.model.reason import Reason
from tests.checks import checks_oracle as oracle
from tests.model.native_inputs import ARGS, RESULTS, SAME_ARGS, span_records

SPACE = st.sampled_from(["", " ", "\n", "\t ", "\u3000", "\x1c", "\u00a0\u2029"])
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(-(10**30), 10**30) | st.floats()
    | st.text(max_size=8) | st.sampled_from(["\ud800", "a\"b\\c\n\x00\x1f\x7f\u2028", "é😀"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
KEYS = ["error", "exit_code", "return_code", "exitcode", "returncode", "exit_status", "n_candidates", "count",
        "n_results", "total", "text", "items"]


@st.composite
def json_texts(draw):
    v = draw(values | st.dictionaries(st.sampled_from(KEYS), values, max_size=3))
    if draw(st.booleans()):
        v = [{"text": json.dumps(v)}, {"text": 3}]  # MCP content parts
    text = json.dumps(v, ensure_ascii=draw(st.booleans()), sort_keys=draw(st.booleans()),
                      separators=draw(st.sampled_from([None, (",", ":"), (" ,", " : ")])))
    if draw(st.booleans()) and text.startswith("{") and len(text) > 2:
        text = text[:-1] + ', "error": ' + json.dumps(draw(values)) + "}"  # a key written twice, or an error
    return draw(SPACE) + text + draw(SPACE)


texts = st.one_of(st.sampled_from(RESULTS + ARGS + SAME_ARGS), json_texts(), st.text(max_size=30))


def _outcome(f, *args):
    try:
        r = f(*args)
    except Exception as e:  # noqa: BLE001  (a failure is an outcome to compare)
        return ("raised", type(e))
    return (r, type(r), r.parts if isinstance(r, Reason) else None)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_each_signal_of_a_text_is_the_one_python_gave(text):
    for mine, theirs in ((signals.structural_error, oracle.structural_error),
                         (signals.empty_result, oracle.empty_result),
                         (signals.canonical_arguments, oracle.canonical_arguments),
                         (signals.squash, oracle.squash)):
        assert _outcome(mine, text) == _outcome(theirs, text), mine.__name__


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texts, min_size=2, max_size=6))
def test_call_keys_are_equal_exactly_when_pythons_were(args):
    mine = [_native.call_key(a) for a in args]
    theirs = [oracle.call_key(a) for a in args]
    assert [k is None for k in mine] == [k is None for k in theirs]
    for i in range(len(args)):
        for j in range(len(args)):
            assert (mine[i] == mine[j]) == (theirs[i] == theirs[j]), (args[i], args[j])


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**40), 10**40))
def test_numbers_are_written_as_pythons_encoder_writes_them(x):
    text = json.dumps({"x": [x, -x if not (isinstance(x, float) and math.isnan(x)) else x]})
    assert signals.canonical_arguments(text) == oracle.canonical_arguments(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(span_records("s"))
def test_a_spans_own_error_is_the_one_python_read(span):
    assert _outcome(signals.span_error, span) == _outcome(oracle.span_error, span)


def test_step_errors_are_kept_with_the_run_and_shared():
    from tests.model.native_inputs import both
    from faultgate_stream.model.records import SpanRecord, ToolExecution

    spans = [SpanRecord("t", f"s{i}", None, "execute_tool", i, tool=ToolExecution("x", "{}", r))
             for i, r in enumerate(['{"error": "boom"}', "ok", '{"error": "boom"}'])]
    run, _ = both(spans, None)
    first = signals.step_errors(run)
    assert first == ("JSON top-level error: boom", "", "JSON top-level error: boom")
    assert signals.step_errors(run) is first and run.derived["signals.step_errors"] is first
