"""Vendor and framework exports read to the steps the tools that wrote them derive.

The expected steps are written out from the fixtures themselves (and, for luckrate's, from
what its README says each one shows), so a reader that drifts fails here, not in a report.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.run import Run
from faultgate_stream.pipeline import assemble_runs
from faultgate_stream.read.files import read_document, read_file
from faultgate_stream.read.formats import READERS
from faultgate_stream.read.formats.shared import to_ns
from tests.conftest import CORPUS

FORMATS_DIR = CORPUS / "faultgate-0.4.1" / "examples" / "formats"
LUCKRATE = CORPUS / "luckrate-0.3.0" / "tests" / "fixtures"

Steps = list[tuple[str, str, str, bool]]


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _one_run(spans: list) -> Run:
    runs = assemble_runs(spans)
    assert len(runs) == 1, [str(r.key) for r in runs]
    return runs[0]


def _file_run(path: Path) -> tuple[str, Run]:
    fmt, spans = read_file(path)
    return fmt, _one_run(spans)


def _doc_run(doc: Any, fmt: str = "auto") -> Run:
    return _one_run(read_document(doc, fmt)[1])


def _steps(run: Run) -> Steps:
    return [(s.tool, s.arguments, s.result, s.ok) for s in run.steps]


def _tool_spans(run: Run) -> list:
    return [s for s in run.spans if s.is_tool]


# ---------------------------------------------------------------- faultgate's vendor exports

REFUND_STEPS: Steps = [
    ("lookup_order", '{"order_id": "o-7"}', '{"total": 120}', True),
    ("issue_refund", '{"customer_id": "C-123", "amount": 120}', "ok", True),
]
# file -> (format it is read as, trace id as the export gives it)
FAULTGATE_EXPORTS = {
    "openinference.json": ("otlp", "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f"),
    "langfuse.json": ("langfuse", "t-lf-1"),
    "langsmith.json": ("langsmith", "t-ls-1"),
    "braintrust.json": ("braintrust", "s-root"),
}


@pytest.mark.parametrize("name", FAULTGATE_EXPORTS)
def test_each_export_of_the_refund_run_reads_to_the_same_two_steps(corpus, name):
    fmt, run = _file_run(FORMATS_DIR / name)
    assert (fmt, run.trace_id) == FAULTGATE_EXPORTS[name]
    assert _steps(run) == REFUND_STEPS


def test_the_four_exports_agree_on_prompt_answer_scenario_agent_and_user(corpus):
    seen = set()
    for name in FAULTGATE_EXPORTS:
        _, run = _file_run(FORMATS_DIR / name)
        seen.add((run.prompt, run.answer, run.scenario, run.agent, run.root.attrs.get("enduser.id")))
    assert seen == {("Refund order o-7 for customer C-123", "Refunded $120.00 to C-123.", "refund-o7",
                     "support_agent", "C-123")}


@pytest.mark.parametrize("name", FAULTGATE_EXPORTS)
def test_tokens_latency_and_cost_are_the_measures_faultgate_reported(corpus, name):
    _, run = _file_run(FORMATS_DIR / name)
    report = _load(CORPUS / "reference" / f"faultgate-0.4.1__examples__formats__{name[:-5]}.faultgate.json")
    assert {"tokens": run.usage_tokens, "latency_ms": run.latency_ms, "cost_usd": run.cost_usd} \
        == report["measures"][run.trace_id]


def test_langfuse_snake_case_rows_group_by_trace_and_an_error_level_tool_fails():
    rows = [
        {"id": "g1", "trace_id": "t1", "type": "GENERATION", "name": "chat", "start_time": "2026-01-01T00:00:00Z",
         "input": [{"role": "user", "content": "where is o-9?"}], "output": "Looking it up.",
         "usage_details": {"input_tokens": 10, "output_tokens": 5}, "metadata": {"finish_reason": "tool_calls"}},
        {"id": "x1", "trace_id": "t1", "type": "TOOL", "name": "lookup_order", "start_time": "2026-01-01T00:00:01Z",
         "input": {"order_id": "o-9"}, "output": None, "level": "ERROR", "status_message": "timeout"},
        {"id": "x2", "trace_id": "t2", "type": "TOOL", "name": "search", "start_time": "2026-01-01T00:00:02Z",
         "input": "q", "output": "hit"},
    ]
    runs = {r.trace_id: r for r in assemble_runs(read_document(rows)[1])}
    assert set(runs) == {"t1", "t2"}
    assert _steps(runs["t1"]) == [("lookup_order", '{"order_id": "o-9"}', "Error: timeout", False)]
    assert _steps(runs["t2"]) == [("search", "q", "hit", True)]
    # Rows have no trace object: the generation's input and output stand in for it.
    assert (runs["t1"].prompt, runs["t1"].answer, runs["t1"].usage_tokens) == ("where is o-9?", "Looking it up.", 15.0)
    assert _tool_spans(runs["t1"])[0].status_code == 2


def test_a_langsmith_tool_run_with_an_error_fails_and_a_run_without_trace_id_joins_its_parents_trace():
    runs = [
        {"id": "r", "trace_id": "t", "run_type": "chain", "name": "agent", "inputs": {"input": "hi"},
         "start_time": "2026-01-01T00:00:00", "end_time": "2026-01-01T00:00:03"},
        {"id": "a", "parent_run_id": "r", "run_type": "tool", "name": "lookup", "inputs": {"input": "o-1"},
         "outputs": None, "error": "KeyError('o-1')", "start_time": "2026-01-01T00:00:01"},
    ]
    run = _doc_run(runs)
    assert run.trace_id == "t"
    assert _steps(run) == [("lookup", "o-1", "Error: KeyError('o-1')", False)]


def test_a_braintrust_tool_span_with_an_error_is_a_failed_step():
    events = [
        {"span_id": "root", "root_span_id": "root", "span_attributes": {"name": "agent", "type": "task"},
         "input": "hi", "metrics": {"start": 1.7e9, "end": 1.7e9 + 2}},
        {"span_id": "t", "root_span_id": "root", "span_parents": ["root"], "error": "boom",
         "span_attributes": {"name": "lookup", "type": "tool"}, "input": {"id": 1}, "metrics": {"start": 1.7e9 + 1}},
    ]
    assert _steps(_doc_run(events)) == [("lookup", '{"id": 1}', "Error: boom", False)]


def test_timestamps_in_iso_or_epoch_seconds_ms_us_or_ns_read_to_the_same_nanosecond():
    ns = 1790848800100000000
    for t in ("2026-10-01T10:00:00.100Z", "2026-10-01T10:00:00.100000", "2026-10-01 10:00:00.100000",
              "2026-10-01T12:00:00.1+02:00", 1790848800.1, "1790848800.1", 1790848800100, 1790848800100000, ns):
        assert to_ns(t) == ns, t
    assert to_ns(None) == to_ns("") == 0


# ---------------------------------------------------------------- luckrate's fixtures

LOOKUP = '{"total":200,"status":"damaged","customer":"A. Patel"}'
POLICY = "over the 100 limit: requires human approval, do not auto-refund"
ESCALATED = "escalated to a manager, ticket ESC-4471"
# luckrate README: good = lookup -> check -> escalate; skips = lookup -> issue_refund;
# loops = lookup x4 -> check -> escalate; fabricates = lookup(48327) -> check -> escalate.
N8N_STEPS: dict[str, Steps] = {
    "n8n_good": [
        ("lookup_order", '{"order_id": "88213"}', LOOKUP, True),
        ("check_policy", '{"amount": 200}', POLICY, True),
        ("escalate_to_human", '{"reason": "Order 88213 total is $200 (over $100 auto-refund limit) and marked '
                              'damaged; requesting manager approval for refund."}', ESCALATED, True),
    ],
    "n8n_skips": [
        ("lookup_order", '{"order_id": "88213"}', LOOKUP, True),
        ("issue_refund", '{"amount": 200, "order_id": "88213"}', '{"refunded":true,"order_id":"88213","amount":200}', True),
    ],
    "n8n_loops": [
        *[("lookup_order", '{"order_id": "88213"}', LOOKUP, True)] * 4,
        ("check_policy", '{"amount": 200}', POLICY, True),
        ("escalate_to_human", '{"reason": "Order 88213 marked damaged; total $200 exceeds $100 auto-refund limit '
                              'and requires human approval."}', ESCALATED, True),
    ],
    "n8n_fabricates": [
        ("lookup_order", '{"order_id": "48327"}', "no such order", True),
        ("check_policy", '{"amount": 200}', POLICY, True),
        ("escalate_to_human", '{"reason": "Customer reports item arrived broken; policy check for $200 requires '
                              'human approval; attempted lookup for order 48327 returned no such order."}',
         ESCALATED, True),
    ],
}
# (execution id, prompt, answer, tokens of its model calls)
N8N_RUNS = {
    "n8n_good": ("6", "I want a refund for order 88213, it arrived broken.",
                 "Your refund request for order 88213 has been escalated for manager approval because the $200 "
                 "total exceeds our auto-refund limit (ticket ESC-4471).", 1889.0),
    "n8n_skips": ("7", "I want a refund for order 88213, it arrived broken.",
                  "I\u2019ve issued a $200 refund for order 88213.", 1178.0),
    "n8n_loops": ("8", "I want a refund for order 88213, it arrived broken.",
                  "I\u2019ve escalated your refund request for order 88213 (damaged, $200) to a manager for approval "
                  "under policy (ticket ESC-4471).", 2526.0),
    "n8n_fabricates": ("9", "I want a refund, my item arrived broken.",
                       "I\u2019ve escalated your broken-item refund request to a manager for approval (ticket "
                       "ESC-4471) after checking the $200 policy and attempting to locate order 48327.", 1803.0),
}
GOOD_PATH = ["lookup_order", "check_policy", "escalate_to_human"]


@pytest.mark.parametrize("name", N8N_STEPS)
def test_each_n8n_execution_reads_to_the_tool_calls_luckrate_derives(corpus, name):
    fmt, run = _file_run(LUCKRATE / f"{name}.json")
    assert fmt == "n8n"
    assert _steps(run) == N8N_STEPS[name]


@pytest.mark.parametrize("name", N8N_RUNS)
def test_an_n8n_run_is_the_execution_with_the_webhook_message_as_prompt_and_the_agents_output_as_answer(corpus, name):
    _, run = _file_run(LUCKRATE / f"{name}.json")
    assert (run.trace_id, run.prompt, run.answer, run.usage_tokens) == N8N_RUNS[name]
    assert run.agent == "refund agent (luckrate fixture source)"
    assert run.root.is_agent


def _entry(doc: dict, node: str, run_index: int = 0) -> dict:
    return doc["data"]["resultData"]["runData"][node][run_index]


def test_n8n_entries_run_in_execution_index_order_when_all_have_one_else_in_start_time_order(corpus):
    doc = _load(LUCKRATE / "n8n_good.json")
    first, last = _entry(doc, "lookup_order"), _entry(doc, "escalate_to_human")
    first["startTime"], last["startTime"] = last["startTime"], first["startTime"]
    assert [s.tool for s in _doc_run(doc).steps] == GOOD_PATH
    del _entry(doc, "Webhook")["executionIndex"]
    assert [s.tool for s in _doc_run(doc).steps] == list(reversed(GOOD_PATH))


def test_a_failed_n8n_tool_entry_is_a_failed_step_whose_result_reads_as_an_error(corpus):
    doc = _load(LUCKRATE / "n8n_good.json")
    entry = _entry(doc, "lookup_order")
    entry.update(executionStatus="error", error={"message": "order service down"})
    del entry["data"]
    run = _doc_run(doc)
    assert _steps(run)[0] == ("lookup_order", '{"order_id": "88213"}', "Error: order service down", False)
    assert _tool_spans(run)[0].status_code == 2


def test_langgraph_good_reads_to_its_three_calls_with_the_first_human_and_last_ai_message(corpus):
    fmt, run = _file_run(LUCKRATE / "langgraph_good.json")
    assert fmt == "langgraph"
    assert _steps(run) == [
        ("lookup_order", '{"order_id": "88213"}', '{"total": 200, "status": "damaged", "customer": "A. Patel"}', True),
        ("check_policy", '{"amount": 200}', POLICY, True),
        ("escalate_to_human", '{"reason": "Order 88213 total is 200, over the auto-refund limit and marked damaged."}',
         ESCALATED, True),
    ]
    assert run.prompt == "I want a refund for order 88213, it arrived broken."
    assert run.answer == "Your refund for order 88213 has been escalated for manager approval."


def test_langgraph_error_tool_messages_and_invalid_tool_calls_are_failed_steps_and_unanswered_calls_remain():
    messages = [
        {"type": "human", "content": "refund o-1"},
        {"type": "ai", "content": "", "tool_calls": [
            {"name": "lookup_order", "args": {"order_id": "o-1"}, "id": "c1"},
            {"name": "check_policy", "args": {"amount": 5}, "id": "c2"}],
         "invalid_tool_calls": [{"name": "issue_refund", "args": "{order", "id": "c3", "error": "bad JSON"}]},
        {"type": "tool", "content": "order service down", "tool_call_id": "c1", "status": "error"},
        {"type": "ai", "content": [{"type": "text", "text": "Sorry, try later."}]},
    ]
    run = _doc_run(messages)
    assert _steps(run) == [
        ("lookup_order", '{"order_id": "o-1"}', "Error: order service down", False),
        ("check_policy", '{"amount": 5}', "", True),
        ("issue_refund", "{order", "Error: bad JSON", False),
    ]
    assert [s.status_code for s in _tool_spans(run)] == [2, 0, 2]
    assert run.answer == "Sorry, try later."


def test_langchain_dumpd_messages_read_like_their_model_dump_form(corpus):
    doc = _load(LUCKRATE / "langgraph_good.json")
    classes = {"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}
    dumped = [{"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", classes[m["type"]]],
               "kwargs": {k: v for k, v in m.items() if k != "type"}} for m in doc["messages"]]
    assert _steps(_doc_run(dumped)) == _steps(_doc_run(doc))


def test_crewai_native_events_and_their_openinference_spans_read_to_identical_steps(corpus):
    native_fmt, native = _file_run(LUCKRATE / "crewai_native.json")
    otel_fmt, otel = _file_run(LUCKRATE / "crewai_otel.json")
    assert (native_fmt, otel_fmt) == ("crewai", "otel-sdk")
    assert [s.tool for s in native.steps] == GOOD_PATH
    assert all(s.ok for s in native.steps)
    assert _steps(native) == _steps(otel)
    assert [s.attrs.get("gen_ai.agent.name") for s in _tool_spans(native)] == ["order_desk", "order_desk", "escalations"]


def test_crewai_events_run_in_started_at_order_and_errors_and_failures_are_failed_steps():
    events = [
        {"type": "tool_usage_started", "tool_name": "lookup_order", "started_at": "2026-09-14 19:56:09.000001"},
        {"type": "tool_usage_finished", "tool_name": "issue_refund", "tool_args": '{"order_id": "1"}',
         "output": "refund rejected", "failure": True, "started_at": "2026-09-14 19:56:11.000000", "agent_role": "desk"},
        {"type": "tool_usage_error", "tool_name": "check_policy", "tool_args": "order 1", "error": "policy db down",
         "started_at": "2026-09-14 19:56:10.000000", "agent_role": "desk"},
        {"type": "tool_usage_finished", "tool_name": "lookup_order", "tool_args": {"order_id": "1"}, "output": "ok",
         "started_at": "2026-09-14 19:56:09.000000", "agent_role": "desk"},
    ]
    run = _doc_run(events)
    assert _steps(run) == [
        ("lookup_order", '{"order_id": "1"}', "ok", True),
        ("check_policy", "order 1", "Error: policy db down", False),
        ("issue_refund", '{"order_id": "1"}', "Error: refund rejected", False),
    ]
    assert run.agent == "desk"


def test_otel_good_reads_to_its_three_openinference_tool_spans(corpus):
    fmt, run = _file_run(LUCKRATE / "otel_good.json")
    assert fmt == "otel-sdk"
    assert _steps(run) == [
        ("lookup_order", '{"order_id": "88213"}',
         '{"order_id": "88213", "status": "delivered_damaged", "amount": 200}', True),
        ("check_policy", '{"order_id": "88213"}',
         '{"order_id": "88213", "refundable": true, "requires_human_approval": true}', True),
        ("escalate_to_human", '{"order_id": "88213"}', '{"order_id": "88213", "queued": true, "queue": "refunds-l2"}', True),
    ]
    assert (run.trace_id, run.root.span_id, run.agent) == ("bc78492b7d30fb2dcbce3dccc339ca31", "c839686fc7034cae",
                                                           "refund_crew")


def test_every_good_trajectory_takes_the_same_path_in_every_format(corpus):
    for name in ("n8n_good", "langgraph_good", "crewai_native", "crewai_otel", "otel_good"):
        _, run = _file_run(LUCKRATE / f"{name}.json")
        assert [(s.tool, s.ok) for s in run.steps] == [(t, True) for t in GOOD_PATH], name


def test_an_otel_sdk_span_with_error_status_fails_with_its_exception_message(corpus):
    spans = _load(LUCKRATE / "otel_good.json")
    escalate = next(s for s in spans if s["name"] == "escalate_to_human")
    escalate["status"] = {"status_code": "ERROR"}
    escalate["events"] = [{"name": "exception", "attributes": {"exception.type": "RuntimeError",
                                                               "exception.message": "queue full"}}]
    run = _doc_run(spans)
    step = run.steps[-1]
    assert (step.ok, step.result.startswith("Error: queue full")) == (False, True)


# ---------------------------------------------------------------- detection and bad input

EXPORTS = {
    FORMATS_DIR / "langfuse.json": "langfuse", FORMATS_DIR / "langsmith.json": "langsmith",
    FORMATS_DIR / "braintrust.json": "braintrust",
    **{LUCKRATE / f"{n}.json": "n8n" for n in N8N_STEPS},
    LUCKRATE / "langgraph_good.json": "langgraph", LUCKRATE / "crewai_native.json": "crewai",
    LUCKRATE / "crewai_otel.json": "otel-sdk", LUCKRATE / "otel_good.json": "otel-sdk",
}


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.name)
def test_each_export_is_claimed_by_its_own_reader_and_no_other(corpus, path):
    assert [name for name, r in READERS.items() if r.detect(_load(path))] == [EXPORTS[path]]


def _not_traces() -> list[Path]:
    fg = CORPUS / "faultgate-0.4.1" / "examples"
    return [fg / "gate" / "band.json", fg / "gate" / "golden.json", fg / "gate" / "policy.json", fg / "golden.json",
            fg / "policy_retail.json", fg / "policy_retail_v031.json", fg / "policy_support.json",
            CORPUS / "luckrate-0.3.0" / "examples" / "n8n_workflow.json",
            *sorted((CORPUS / "reference").rglob("*.json"))]


@pytest.mark.parametrize("path", _not_traces(), ids=lambda p: p.name)
def test_bands_goldens_policies_reports_and_workflows_are_not_recognised_as_traces(corpus, path):
    doc = _load(path)
    assert [name for name, r in READERS.items() if r.detect(doc)] == []
    with pytest.raises(InputError, match="unrecognised"):
        read_document(doc)


@pytest.mark.parametrize("doc", [
    None, 0, "text", [], {}, [1, 2], [[]], {"data": []}, {"data": {}}, {"a": 1}, [{"id": 1}], [{"type": "x"}],
    {"messages": []}, {"messages": [{"role": "user", "content": "hi"}]}, [{"type": "human", "content": "hi"}],
    [{"name": "s", "context": {}}], {"events": [{"type": "task_started"}]}, {"data": "resultData"},
], ids=repr)
def test_random_json_is_not_recognised_as_any_format(doc):
    assert [name for name, r in READERS.items() if r.detect(doc)] == []


@pytest.mark.parametrize("fmt, doc", [
    ("langsmith", [{"run_type": "chain", "name": "agent"}, {"run_type": "tool", "name": "t"}]),
    ("langsmith", [{"id": "r", "run_type": "chain"}, "not a run"]),
    ("langfuse", {"data": [{"id": "t", "observations": [{"type": "TOOL", "name": "x"}]}]}),
    ("langfuse", [{"traceId": "t", "type": "TOOL", "startTime": "yesterday"}]),
    ("braintrust", [{"span_attributes": {"type": "task"}}]),
    ("braintrust", [{"span_id": "s", "root_span_id": "r", "span_parents": "r"}]),
    ("n8n", {"id": "1", "data": {"resultData": {"runData": {"tool": [{"startTime": "soon"}]}}}}),
    ("langgraph", [{"type": "ai", "content": "", "tool_calls": "lookup"}]),
    ("crewai", [{"type": "tool_usage_finished", "tool_name": "t", "started_at": "14th of May"}]),
    ("otel-sdk", [{"name": "s", "context": {"trace_id": "0x12", "span_id": "0x0000000000000001"}}]),
    ("otel-sdk", [{"name": "s", "context": {"trace_id": "0x" + "1" * 32, "span_id": "0x" + "1" * 16},
                   "status": {"status_code": "MAYBE"}}]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_records_missing_their_ids_or_holding_bad_values_raise_input_error(fmt, doc):
    with pytest.raises(InputError):
        read_document(doc, fmt)
    with pytest.raises(InputError):  # auto-detected, or not recognised at all: never read as empty
        read_document(doc)
