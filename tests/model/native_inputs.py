"""Inputs for the differential tests of the compiled run facts and checks: hypothesis runs
built to reach every branch of the rules (tool and chat-only runs, call ids present, absent
and shared, results in every JSON and error shape, finish reasons, status messages,
missing flags, failed nested agents, measures of every type a sender may write), and every
recorded trace in the repository and the shared corpus, assembled into runs."""
from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

from hypothesis import strategies as st

from faultgate_stream.model.records import NO_ATTRS, SpanRecord, ToolCall, ToolExecution
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import Completion
from tests.conftest import CORPUS
from tests.model.run_oracle import OracleRun

REPO = Path(__file__).resolve().parents[2]

KELVIN, LONG_S, DOTLESS_I, DOTTED_I = "\u212a", "\u017f", "\u0131", "\u0130"

# Tool results: every JSON and error shape the signals tell apart, and a few that only
# Python's json reads (NaN, a lone surrogate) or that make Python raise (an infinite exit code).
RESULTS = [
    "", "  ", "ok", "found 3 items", "[]", "{}", "null", "None", " [] ", "[1]", '{"n_results": 2}',
    '{"error": "boom"}', '{"error": ""}', '{"error": {"code": 1, "msg": "x"}}', '{"error": 1.5}', '{"error": [1]}',
    '{"error": false}', '{"error": 0}', '{"error": 0.0}', '{"error": NaN}', '{"error": "' + "x" * 120 + '"}',
    '{"exit_code": 1}', '{"exit_code": 0}', '{"exit_code": "0"}', '{"exit_code": " 3 "}', '{"exit_code": "x"}',
    '{"exit_code": 2.7}', '{"exit_code": 0.5}', '{"exit_code": null}', '{"returncode": true}', '{"exit_status": [1]}',
    '{"exit_code": 1e400}', '{"exit_code": NaN}', '{"exitcode": "1_0"}',
    '[{"text": "{\\"error\\": \\"mcp\\"}"}]', '[{"text": " {\\"count\\": 0} "}, {"text": "x"}]', '[{"text": 3}]',
    '{"count": 0}', '{"count": 0.0}', '{"count": false}', '{"count": true}', '{"count": "0"}', '{"total": -0.0}',
    '{"items": []}', '{"items": [], "more": []}', '{"items": [1], "more": []}', '{"a": 1}', '{"a": 1, "a": []}',
    "Error: card declined", "ERROR: no", "Traceback (most recent call last):\n  x", "  Error: x",
    "An error occurred while parsing tool arguments", "<tool_use_error>bad</tool_use_error>",
    "{'a': 1}", "{bad", '{"a": "\\ud800"}', "Error: context_length_exceeded", '{"error": "maximum context length"}',
    "the prompt is too long", '{"n": ' + "1" * 700 + "}", "r\n", " r ", "r",
]
ARGS = [
    "", '{"a": 1}', '{"a":1}', '{"a": 1.0}', '{"a": true}', '{"a": NaN}', '{"a": 1, "a": 2}', '{"a": 2}',
    '{"a": "x\ny"}', '{"a": "x y"}', "[1, 2]", "[1,2]", "[NaN]", "{bad", "{ bad}", "plain", "pl  ain",
    '{"b": "1", "a": "2"}', '{"a": "2", "b": "1"}', '{"a": "\\u0041"}', '{"a": "A"}', "[]", " {} ",
    '{"path": "../../etc/passwd"}', '{"url": "FILE://x"}', "cat ~/.ssh/id_rsa", "/PROC/self", "/etc/shadow", "a/b", '{"q": 1e16, "r": 1e-05, "s": -0, "t": 123456789012345678901234567890}',
    '{"q": "\\u0000\\u001f\\"\\\\"}', "{\u00e9: 1}", '{"\u00e9": "\u2028"}', '{"a": "\\ud83d\\ude00"}',
]
TEXTS = ["", "  ", "\u3000\u2028", "Paris.", " Paris ", "I couldn't find it.", "No records found.",
         "not found", "I don't know.", "context length exceeded", f"ma{KELVIN} steps", "max_steps reached",
         "Max Iterations hit", f"{DOTTED_I}teration limit", "step cap"]
PHRASES = ["", "tool timed out", "context_length_exceeded", "Maximum context length is 8192", "prompt is too long",
           "exceeds the model's context window", f"too many to{KELVIN}ens", "rate limited"]
FINISH = ["stop", "tool_calls", "length", "LENGTH", "max_tokens", f"max_to{KELVIN}ens", "Model_Length", "end_turn",
          f"{DOTTED_I}ength"]
MEASURES = [0, 1, 12, -5, 1.9, -2.5, True, False, math.inf, -math.inf, math.nan, 2**53, 2**53 + 1, -(2**60),
            1e300, 0.1, "12", None]
IDS = ["a", "b", "c", "d", "e", "f", "g", "h"]
CALL_IDS = ["", "c1", "c2", "c3"]
TOOLS = ["search", "read", "pay"]


@st.composite
def attrs(draw):
    if draw(st.integers(0, 4)) == 0:
        return NO_ATTRS
    keys = {
        "gen_ai.agent.name": st.sampled_from(["", "alpha", 0, 1, None]),
        "gen_ai.agent.version": st.sampled_from(["", "1.2", 0, None]),
        "service.version": st.sampled_from(["", "9", 0]),
        "gen_ai.usage.input_tokens": st.sampled_from(MEASURES),
        "gen_ai.usage.output_tokens": st.sampled_from(MEASURES),
        "faultgate.cost_usd": st.sampled_from(MEASURES),
        "faultgate.termination": st.sampled_from(TEXTS + PHRASES + [None, 0]),
        "error.type": st.sampled_from(PHRASES + [None, 0, 1, ""] + [None] * 8),
    }
    return {k: draw(v) for k, v in keys.items() if draw(st.booleans())}


@st.composite
def span_records(draw, span_id: str):
    tool = None
    if draw(st.booleans()):
        tool = ToolExecution(draw(st.sampled_from(TOOLS)), draw(st.sampled_from(ARGS)), draw(st.sampled_from(RESULTS)),
                             draw(st.sampled_from(CALL_IDS)))
    calls = tuple(ToolCall(draw(st.sampled_from(CALL_IDS)), draw(st.sampled_from(TOOLS)), draw(st.sampled_from(ARGS)))
                  for _ in range(draw(st.integers(0, 2))))
    responses = tuple((draw(st.sampled_from(CALL_IDS)), draw(st.sampled_from(RESULTS)))
                      for _ in range(draw(st.integers(0, 2))))
    return SpanRecord(
        trace_id="t", span_id=span_id, parent_id=draw(st.sampled_from([None, *IDS])),
        name=draw(st.sampled_from(["invoke_agent alpha", "invoke_agent ", "invoke_agent  beta ", "chat m",
                                   "execute_tool read", ""])),
        start_ns=draw(st.sampled_from([0, 1, 2, 3, 10**20])), end_ns=draw(st.sampled_from([0, 2, 5, 10**21])),
        status_code=draw(st.sampled_from([0, 1, 2])), status_message=draw(st.sampled_from(PHRASES + [""] * 8)),
        operation=draw(st.sampled_from([None, "invoke_agent", "execute_tool", "chat"])), attrs=draw(attrs()),
        prompt=draw(st.sampled_from(TEXTS)), answer=draw(st.sampled_from(TEXTS)), tool=tool, calls=calls,
        responses=responses, finish_reasons=tuple(draw(st.lists(st.sampled_from(FINISH + ["stop"] * 6), max_size=2))),
        missing=draw(st.integers(0, 31)),
    )


@st.composite
def runs(draw):
    """(spans, root): a run's spans, a few sharing a span id or a start time, and its root
    (one of them, or none)."""
    ids = draw(st.lists(st.sampled_from(IDS), min_size=0, max_size=8))
    spans = [draw(span_records(i)) for i in ids]
    root = draw(st.sampled_from([None, *spans])) if spans else None
    return spans, root


EMPTY_OR_NOT = ["[]", "{}", '{"count": 0}', '{"items": []}', "null", "", "found it", '{"count": 2}', "Error: x"]


@st.composite
def loop_runs(draw):
    """A root without an answer and up to 14 tool calls mostly coming back empty, some not
    recorded, the cap named in its termination or not: what search_loop decides on."""
    n = draw(st.integers(1, 14))
    attrs = {"faultgate.termination": draw(st.sampled_from(["", "max_steps reached", f"MA{KELVIN}_STEPS",
                                                            "Step Limit", "done"]))}
    root = SpanRecord("t", "root", None, "invoke_agent a", 0, 100, operation="invoke_agent", attrs=attrs,
                      answer=draw(st.sampled_from(["", " ", "", "ok"])), missing=draw(st.sampled_from([0, 2])))
    spans = [root]
    for i in range(n):
        spans.append(SpanRecord("t", f"s{i:02d}", "root", "execute_tool search", i + 1, i + 2,
                                tool=ToolExecution("search", f'{{"q": {i % 3}}}', draw(st.sampled_from(EMPTY_OR_NOT))),
                                missing=draw(st.sampled_from([0, 0, 0, 16, 8]))))
    return spans, root


def both(spans, root) -> tuple[Run, OracleRun]:
    key = spans[0].trace_id if spans else "t"
    from faultgate_stream.model.records import RunKey
    return (Run(RunKey(key, "r"), list(spans), root, Completion.COMPLETE),
            OracleRun(RunKey(key, "r"), list(spans), root, Completion.COMPLETE))


def _trace_files() -> list[Path]:
    roots = [REPO / "examples", REPO / "tests", CORPUS]
    out = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.suffix in (".json", ".jsonl", ".gz", ".pb", ".bin") and p.is_file() and "reference" not in p.parts:
                out.append(p)
    return out


@cache
def recorded_runs() -> tuple[Run, ...]:
    """Every run of every trace file in the repository and the shared corpus that a reader
    recognises (golden files, policies and specs are not traces, and are skipped)."""
    from faultgate_stream.model.errors import InputError
    from faultgate_stream.pipeline import assemble_runs
    from faultgate_stream.read.files import read_telemetry

    out: list[Run] = []
    for p in _trace_files():
        try:
            tel = read_telemetry(p)
        except (InputError, ValueError, OSError):
            continue
        if tel.spans:
            out.extend(assemble_runs(tel.spans, tel.contents))
    return tuple(out)


SAME_ARGS = ['{"a": 1}', '{"a":1}', '{"a": 1.0}', '{ "a" : 1 }', '{"a": NaN}', '{"a": "1"}', "x  y", "x y", "[1]",
             "[ 1 ]", "{bad", '{"b": "2", "a": "1"}', '{"a": "1", "b": "2"}']
SAME_RESULTS = ["r", " r ", "r\n", "s", "", "Error: x"]


@st.composite
def repeat_runs(draw):
    """Tool calls of two tools with arguments that canonicalise alike in many ways and few
    distinct results: what repeated_call decides on."""
    n = draw(st.integers(3, 9))
    spans = []
    for i in range(n):
        spans.append(SpanRecord("t", f"s{i}", None, "execute_tool", draw(st.integers(0, 3)),
                                tool=ToolExecution(draw(st.sampled_from(["t", "u"])), draw(st.sampled_from(SAME_ARGS)),
                                                   draw(st.sampled_from(SAME_RESULTS))),
                                missing=draw(st.sampled_from([0] * 8 + [8, 16]))))
    return spans, None
