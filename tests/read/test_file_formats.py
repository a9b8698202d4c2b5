"""The files people have, read offline and auto-detected, each on a real sample (or, where
the tool cannot run here, one built in its documented shape: tests/read/samples/README.md),
and every reader refusing malformed input with one line, never a traceback."""
from __future__ import annotations

import copy
import io
import json
import random
import re
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from faultgate_stream.checks.registry import select
from faultgate_stream.cli.main import main
from faultgate_stream.model.errors import InputError
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_document_all, read_telemetry
from tests.conftest import CORPUS, ROOT

SAMPLES = Path(__file__).parent / "samples"


def _runs(path, capsys=None):
    found = read_telemetry(path)
    verdicts = check_spans([found.spans], select(None), [found.contents])
    return found.fmt, sorted((v.agent, v.verdict, tuple(r.check for r in v.fired), v.steps) for v in verdicts)


# ---------------------------------------------------------------- OTel Python SDK dumps

def _sdk_spans(console_out: io.StringIO | None = None):
    """A real SDK run: an agent calling a tool that fails, then answering nothing."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    if console_out is not None:
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console_out)))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("invoke_agent files", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "files"}):
        with tracer.start_as_current_span("execute_tool read_file", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file",
                "gen_ai.tool.call.arguments": '{"path": "../../etc/passwd"}', "gen_ai.tool.call.result": "denied"}) as s:
            s.set_status(Status(StatusCode.ERROR, "permission denied"))
    provider.shutdown()
    return memory.get_finished_spans()


EXPECTED_SDK = [("files", "failed", ("policy", "unrecovered_tool_error"), 1)]


def _sdk_variants(tmp_path):
    out = io.StringIO()
    dumps = [json.loads(s.to_json()) for s in _sdk_spans(out)]
    # integer ids, lower-case status codes and a parent context, as dumps that serialise the
    # SDK's SpanContext fields as they are write them (any-agent's AgentSpan, for one)
    ints = copy.deepcopy(dumps)
    for d in ints:
        d["context"] = {k: int(v, 16) if k in ("trace_id", "span_id") else v for k, v in d["context"].items()}
        if d.get("parent_id"):
            d["parent"] = {"trace_id": d["context"]["trace_id"], "span_id": int(d.pop("parent_id"), 16)}
        d["status"]["status_code"] = d["status"]["status_code"].lower()
    files = {"list": dumps, "wrapped": {"spans": dumps}, "ints": ints}
    paths = {}
    for name, doc in files.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(doc, indent=2))
    paths["console"] = tmp_path / "console.txt"
    paths["console"].write_text(out.getvalue())  # ConsoleSpanExporter: pretty to_json() spans, one after another
    return paths


@pytest.mark.parametrize("variant", ["list", "wrapped", "ints", "console"])
def test_otel_sdk_span_dumps_in_every_shape_they_come_in(tmp_path, variant):
    path = _sdk_variants(tmp_path)[variant]
    fmt, runs = _runs(path)
    assert fmt.startswith("otel-sdk")
    assert runs == EXPECTED_SDK


# ---------------------------------------------------------------- exports of other tools

@pytest.mark.parametrize("name, fmt, expected", [
    ("otel_js_readable_spans.json", "otel-js", [("weather", "failed", ("repeated_call",), 3)]),
    ("otel_js_console_spans.json", "otel-js", [("weather", "failed", ("repeated_call",), 3)]),
    ("any_agent_trace.json", "any-agent", [("any_agent", "failed", ("repeated_call",), 3)]),
    ("child_spans_trace.json", "child-spans", [("CodeAgent.run", "failed", ("unrecovered_tool_error",), 2)]),
    ("tau2_results.json", "tau2", [("tau2-agent", "clean", (), 2),
                                   ("tau2-agent", "failed", ("search_loop", "repeated_call"), 6)]),
])
def test_each_export_is_detected_and_read(name, fmt, expected):
    found_fmt, runs = _runs(SAMPLES / name)
    assert found_fmt == fmt
    assert runs == expected


def test_any_agent_reads_its_own_attribute_names_and_the_final_output():
    found = read_telemetry(SAMPLES / "any_agent_trace.json")
    tools = [s for s in found.spans if s.is_tool]
    assert [(t.tool.name, t.tool.arguments, t.tool.result) for t in tools][0] == \
        ("get_weather", '{"city": "Paris"}', "21 degrees")
    (root,) = [s for s in found.spans if s.is_agent]
    assert root.answer == "It is 21 degrees in Paris."


def test_child_spans_take_their_parent_from_nesting_and_their_end_from_the_iso_duration():
    spans = {s.name: s for s in read_telemetry(SAMPLES / "child_spans_trace.json").spans}
    assert spans["issue_refund"].parent_id == spans["Step 1"].span_id  # no parent_span_id: nested in Step 1
    assert spans["lookup_order"].parent_id == spans["CodeAgent.run"].span_id  # its own parent_span_id
    assert spans["issue_refund"].end_ns - spans["issue_refund"].start_ns == 350_000_000
    assert spans["issue_refund"].status_code == 2


def test_tau2_runs_carry_the_task_as_scenario_the_termination_and_the_reward():
    found = read_telemetry(SAMPLES / "tau2_results.json")
    roots = [s for s in found.spans if s.is_agent]
    assert [(r.attrs["faultgate.scenario"], r.attrs["faultgate.termination"], r.attrs["faultgate.outcome"])
            for r in roots] == [("3", "user_stop", "true"), ("7", "max_steps", "false")]
    assert roots[0].answer == "Your return for #W123 is started."
    assert roots[1].answer == ""  # cut off mid-search: the greeting is not an answer


def test_an_unrecognised_file_names_what_was_tried_the_closest_reader_and_what_it_lacked(tmp_path, capsys):
    # a Jaeger UI export: traceID / spanID / operationName, read by none of the readers
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps([{"traceID": "a" * 32, "spanID": "b" * 16, "operationName": "x",
                                 "startTime": 1, "duration": 2, "tags": []}]))
    assert main(["check", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "unrecognised trace format; tried otlp, tau2, child-spans" in line
    # the fields it shares, then each group of fields the reader looks for and found none of
    assert line.endswith("closest: otel-js (shares duration, startTime; lacks name; "
                         "spanContext.traceId or _spanContext.traceId or traceId; "
                         "spanContext.spanId or _spanContext.spanId or id or spanId)")


@pytest.mark.parametrize("doc, closest, lacking", [
    # a LangSmith run without its run_type
    ({"runs": [{"id": "1", "trace_id": "t", "inputs": {}, "outputs": {}}]}, "langsmith", "run_type"),
    # an OTel SDK dump whose span context lost its span id
    ({"spans": [{"name": "a", "context": {"trace_id": "0x1"}, "attributes": {}}]}, "otel-sdk", "context.span_id"),
    # OTLP/JSON one level short: scopeSpans where resourceSpans belong
    ({"scopeSpans": [{"spans": [{"traceId": "a", "spanId": "b"}]}]}, "otlp", "resourceSpans or resourceLogs"),
    # an n8n execution without its run data
    ({"data": {"resultData": {}}, "workflowData": {}, "finished": True, "mode": "manual"}, "n8n",
     "data.resultData.runData"),
])
def test_the_closest_reader_says_which_of_its_fields_the_file_lacks(tmp_path, capsys, doc, closest, lacking):
    path = tmp_path / "near.json"
    path.write_text(json.dumps(doc))
    assert main(["check", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert re.search(rf"closest: {closest} \(shares [^;]+; lacks {re.escape(lacking)}\)$", line), line


def test_every_reader_says_what_it_needs_and_a_file_with_it_is_recognised():
    """Each reader's NEEDS is what its detect looks for: the shipped sample of each format
    lacks none of it (else a near miss would be told to add what the format does not need)."""
    from faultgate_stream.read.files import lacks
    from faultgate_stream.read.formats import READERS

    luckrate = CORPUS / "luckrate-0.3.0" / "tests" / "fixtures"
    formats = ROOT / "examples" / "formats"
    samples = {"tau2": SAMPLES / "tau2_results.json", "child-spans": SAMPLES / "child_spans_trace.json",
               "langfuse": formats / "langfuse.json", "langsmith": formats / "langsmith.json",
               "braintrust": formats / "braintrust.json", "n8n": luckrate / "n8n_good.json",
               "langgraph": luckrate / "langgraph_good.json", "crewai": luckrate / "crewai_native.json",
               "any-agent": SAMPLES / "any_agent_trace.json", "otel-sdk": luckrate / "otel_good.json",
               "otel-js": SAMPLES / "otel_js_readable_spans.json"}
    assert set(samples) == set(READERS)
    for name, reader in READERS.items():
        doc = json.loads(samples[name].read_text())
        assert reader.detect(doc) and lacks(doc, reader.NEEDS) == [], name
        # and an empty record lacks something each reader looks for
        assert lacks({"records": [{}]}, reader.NEEDS), name


def test_forcing_a_format_the_file_is_not_says_what_it_lacks(tmp_path, capsys):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": [{"id": "1", "trace_id": "t"}]}))
    assert main(["check", str(path), "--format", "langsmith"]) == 2
    assert "not a valid langsmith export: the records do not have its fields (lacks run_type)" in \
        capsys.readouterr().err


# ---------------------------------------------------------------- malformed input

def _mutations(doc, rnd: random.Random, n: int):
    """``n`` copies of ``doc``, each with one value somewhere replaced by a wrong one or one
    key removed: the shapes a hand-edited or half-written export takes."""
    paths = []

    def walk(x, path):
        paths.append(path)
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, path + (k,))
        elif isinstance(x, list):
            for i, v in enumerate(x[:4]):
                walk(v, path + (i,))

    walk(doc, ())
    wrong = [None, 0, -1, 2**70, 1.5, True, "", "x", "zz" * 8, [], {}, [None], {"a": None}, "PT", "2026-13-45"]
    for _ in range(n):
        d = copy.deepcopy(doc)
        path = rnd.choice(paths[1:])
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        if rnd.random() < 0.25 and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = rnd.choice(wrong)
        yield d


READER_SAMPLES = ["otel_js_readable_spans.json", "otel_js_console_spans.json", "any_agent_trace.json",
                  "child_spans_trace.json", "tau2_results.json"]


@pytest.mark.parametrize("name", READER_SAMPLES + ["sdk", "otlp-logs"])
def test_every_reader_refuses_mutated_input_with_an_input_error_and_never_crashes(name, tmp_path):
    if name == "sdk":
        doc = json.loads(_sdk_variants(tmp_path)["ints"].read_text())
    elif name == "otlp-logs":
        from tests.genai_runs import tool_loop
        traces, doc = tool_loop("legacy")  # the logs are mutated; the spans they join stay valid
    else:
        doc = json.loads((SAMPLES / name).read_text())
    rnd = random.Random(name)
    refused = 0
    for mutated in _mutations(doc, rnd, 150):
        if name == "otlp-logs":
            mutated = {**traces, **mutated} if isinstance(mutated, dict) else mutated
        try:
            found = read_document_all(mutated)
        except InputError as e:
            refused += 1
            assert "\n" not in str(e)
            continue
        check_spans([found.spans], select(None), [found.contents])  # what was read, the engine takes
    assert refused > 0  # the mutations do reach the readers' checks


@pytest.mark.parametrize("name", READER_SAMPLES)
def test_a_truncated_file_exits_2_with_one_line(name, tmp_path, capsys):
    text = (SAMPLES / name).read_text()
    for cut in (len(text) // 3, len(text) // 2, len(text) - 2):
        path = tmp_path / f"cut-{cut}.json"
        path.write_text(text[:cut])
        assert main(["check", str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("faultgate-stream: ")
