"""A check that cannot see its input says "undecided", never "pass": runs recorded with
content capture off (the GenAI default) against the same runs recorded with content."""
from __future__ import annotations

import json

import pytest

from faultgate_stream.checks.expectations import Golden
from faultgate_stream.checks.registry import select
from faultgate_stream.model.verdict import CLEAN, FAILED, UNDECIDED
from faultgate_stream.pipeline import check_spans
from faultgate_stream.testing import span, trace_id


def _messages(role: str, *parts: dict) -> str:
    return json.dumps([{"role": role, "parts": list(parts)}])


def tool_loop(content: bool, *, answer: str = "It is 21 degrees in Paris.", finish: bool = True,
              repeats: int = 1, result: str = '{"temp": 21}') -> list:
    """An openai-v2 style tool loop: invoke_agent > chat (a tool call) > execute_tool > chat
    (the answer). With ``content`` off, as the instrumentation records it by default: no
    messages on the chat spans, no arguments or result on the tool span."""
    t = trace_id()
    root = span(t, "invoke_agent weather", attributes={"gen_ai.operation.name": "invoke_agent",
                                                      "gen_ai.agent.name": "weather"}, end_s=10)
    out = [root]
    at = 0.5
    for i in range(repeats):
        call = {"type": "tool_call", "id": f"call_{i}", "name": "get_weather", "arguments": {"city": "Paris"}}
        chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
        if finish:
            chat["gen_ai.response.finish_reasons"] = ["tool_calls"]
        if content:
            chat["gen_ai.input.messages"] = _messages("user", {"type": "text", "content": "Weather in Paris?"})
            chat["gen_ai.output.messages"] = _messages("assistant", call)
        out.append(span(t, "chat m", parent=root.span_id, start_s=at, attributes=chat))
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": f"call_{i}"}
        if content:
            tool["gen_ai.tool.call.arguments"] = '{"city": "Paris"}'
            tool["gen_ai.tool.call.result"] = result
        out.append(span(t, "execute_tool get_weather", parent=root.span_id, start_s=at + 0.2, attributes=tool))
        at += 1
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
    if finish:
        chat["gen_ai.response.finish_reasons"] = ["stop"]
    if content:
        chat["gen_ai.output.messages"] = _messages("assistant", {"type": "text", "content": answer})
    out.append(span(t, "chat m", parent=root.span_id, start_s=at, attributes=chat))
    return out


def _results(spans, names, **kw):
    (v,) = check_spans([spans], select(names, **kw))
    return v, {r.check: r for r in v.results}


DEFAULT = ["search_loop", "abstention", "policy", "repeated_call", "unrecovered_tool_error", "context_overflow"]


def test_a_run_recorded_without_content_is_undecided_where_the_same_run_with_content_is_clean():
    v, _ = _results(tool_loop(content=True), DEFAULT)
    assert v.verdict == CLEAN and not v.undecided
    v, by = _results(tool_loop(content=False), DEFAULT)
    assert v.verdict == UNDECIDED and not v.clean and not v.failed
    assert {r.check for r in v.undecided} == {"abstention", "policy", "unrecovered_tool_error"}
    assert by["abstention"].reason == "undecided: the final answer was not captured (no output messages on 2 model span(s))"
    assert by["policy"].reason == "undecided: tool arguments not captured on step(s) 1"
    assert all(r.confidence == 0 and not r.fired for r in v.undecided)
    # what needs no content is still decided
    assert not by["context_overflow"].undecided and not by["search_loop"].undecided


def test_a_failure_visible_without_content_still_fails_the_run():
    spans = tool_loop(content=False)
    spans[-1] = spans[-1]._replace(finish_reasons=("length",))
    v, by = _results(spans, DEFAULT)
    assert v.verdict == FAILED and by["context_overflow"].fired


def test_context_overflow_is_undecided_when_no_model_span_recorded_finish_reasons():
    _, by = _results(tool_loop(content=True, finish=False), ["context_overflow"])
    assert by["context_overflow"].undecided
    assert by["context_overflow"].reason == "undecided: finish reasons not recorded on 2 model span(s)"


def test_repeated_calls_whose_results_were_not_recorded_are_undecided_not_a_repeat():
    # empty, unrecorded results would read as three identical calls with identical results
    _, by = _results(tool_loop(content=False, repeats=3), ["repeated_call"])
    assert by["repeated_call"].undecided and not by["repeated_call"].fired
    _, by = _results(tool_loop(content=True, repeats=3), ["repeated_call"])
    assert by["repeated_call"].fired


def test_golden_checks_are_undecided_when_the_answer_was_not_captured():
    spans = tool_loop(content=False)
    golden = Golden({"weather": "21"})
    spans[0] = spans[0]._replace(attrs={**spans[0].attrs, "faultgate.scenario": "weather"})
    _, by = _results(spans, ["wrong_answer", "truncation"], golden=golden)
    assert by["wrong_answer"].undecided and by["truncation"].undecided


def test_a_run_that_recorded_content_and_gave_no_answer_is_decided():
    spans = tool_loop(content=True, answer="")
    spans[-1] = spans[-1]._replace(answer="", missing=0)
    _, by = _results(spans, ["abstention"])
    assert not by["abstention"].undecided and by["abstention"].reason == "no answer"


def test_tool_spans_without_content_take_arguments_and_results_from_the_messages_by_call_id():
    spans = tool_loop(content=True)
    tool = spans[2]
    spans[2] = tool._replace(tool=tool.tool._replace(arguments="", result=""), missing=8 | 16)
    # the next chat's input carries the tool's response under the call id
    t, root = spans[0].trace_id, spans[0].span_id
    spans.append(span(t, "chat m", parent=root, start_s=0.9, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.input.messages": _messages("tool", {"type": "tool_call_response", "id": "call_0",
                                                    "response": '{"temp": 21}'}),
        "gen_ai.output.messages": _messages("assistant", {"type": "text", "content": "ok"})}))
    v, by = _results(spans, DEFAULT)
    assert v.verdict == CLEAN, [r.reason for r in v.undecided]


@pytest.mark.parametrize("with_content", [True, False])
def test_the_report_says_detected_null_and_verdict_undecided(with_content):
    from faultgate_stream.verdict.report import Report

    (v,) = check_spans([tool_loop(content=with_content)], select(DEFAULT))
    d = Report(DEFAULT, [v]).to_dict(None)
    (run,) = d["runs"]
    rows = {r["check"]: r for r in d["results"]}
    if with_content:
        assert run["verdict"] == "clean" and run["undecided"] == [] and run["clean"]
        assert all(r["detected"] is False for r in rows.values())
    else:
        assert run["verdict"] == "undecided" and not run["clean"]
        assert set(run["undecided"]) == {"policy", "unrecovered_tool_error", "abstention"}
        assert rows["abstention"]["detected"] is None and rows["context_overflow"]["detected"] is False
        assert d["failed_traces"] == [] and d["undecided_runs"] == 1


def test_every_sink_says_undecided_and_the_evaluation_event_carries_error_type():
    from prometheus_client import CollectorRegistry, generate_latest

    from faultgate_stream.export.log.sink import VerdictLog
    from faultgate_stream.export.metrics.sink import MetricsSink
    from faultgate_stream.export.spans.annotate import log_records, verdict_attributes
    from faultgate_stream.export.stream.encode import encode
    from faultgate_stream.export.stream.gen import verdict_pb2 as pb
    from faultgate_stream.model.telemetry import Telemetry

    (v,) = check_spans([tool_loop(content=False)], select(DEFAULT))
    telemetry = Telemetry(CollectorRegistry())
    MetricsSink(telemetry, 10).verdict(v)
    text = generate_latest(telemetry.registry).decode()
    assert 'faultgate_runs_total{agent="weather",completion="complete",verdict="undecided"} 1.0' in text

    attrs = {kv.key: kv.value for kv in verdict_attributes(v, lambda s: s)}
    assert attrs["faultgate.verdict"].string_value == "undecided"
    assert [x.string_value for x in attrs["faultgate.checks.undecided"].array_value.values] == \
        [r.check for r in v.undecided]
    records = {r.attributes[0].value.string_value: {kv.key: kv.value for kv in r.attributes}
               for r in log_records(v, lambda s: s, b"\1" * 16, b"\2" * 8)}
    assert records["abstention"]["error.type"].string_value == "input_not_captured"
    assert "gen_ai.evaluation.score.value" not in records["abstention"]
    assert "error.type" not in records["context_overflow"]
    assert records["context_overflow"]["gen_ai.evaluation.score.label"].string_value == "pass"

    msg = encode(v, lambda s: s)
    assert msg.verdict == pb.OUTCOME_UNDECIDED
    assert {r.check for r in msg.results if r.undecided} == {r.check for r in v.undecided}

    lines = []

    class Logger:
        def info(self, event, **kw):
            lines.append(kw)

    VerdictLog(Logger(), None).verdict(v)
    assert lines[0]["verdict"] == "undecided" and set(lines[0]["undecided"]) == {r.check for r in v.undecided}


def test_check_warns_and_exits_0_on_an_undecided_run_and_the_table_says_undecided(tmp_path, capsys):
    from faultgate_stream.cli.main import main
    from tests.genai_runs import tool_loop as written

    traces, _ = written("no_content")
    (tmp_path / "t.json").write_text(json.dumps(traces))
    assert main(["check", str(tmp_path / "t.json"), "--json", str(tmp_path / "r.json")]) == 0
    out, err = capsys.readouterr()
    assert "undecided" in out.splitlines()[2]
    (warning,) = err.strip().splitlines()
    assert warning.startswith("warning: 1/1 run(s) undecided: a check could not see its input")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["runs"][0]["verdict"] == "undecided" and report["failed_traces"] == []


def test_loop_is_undecided_on_unrecorded_calls_and_still_fires_on_recorded_ones():
    _, by = _results(tool_loop(content=False, repeats=4), ["loop"])
    assert by["loop"].undecided and not by["loop"].fired
    _, by = _results(tool_loop(content=True, repeats=4), ["loop"])
    assert by["loop"].fired
