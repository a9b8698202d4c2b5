"""Real clients: the OpenTelemetry Python SDK's own OTLP span exporters, batching as an
instrumented agent would, produce the expected verdicts and metrics."""
from __future__ import annotations

import json

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode


def _agent_runs(tracer) -> int:
    """Two runs as an instrumented agent emits them; returns how many spans were made."""
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "read the config"}]}])
    with tracer.start_as_current_span("invoke_agent files", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "files", "gen_ai.input.messages": msgs}) as root:
        with tracer.start_as_current_span("chat gpt-4o", attributes={"gen_ai.operation.name": "chat"}):
            pass
        with tracer.start_as_current_span("execute_tool read_file", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file",
                "gen_ai.tool.call.arguments": '{"path": "../../etc/passwd"}',
                "gen_ai.tool.call.result": "root:x:0:0"}):
            pass
        root.set_attribute("gen_ai.output.messages", json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]))
    with tracer.start_as_current_span("invoke_agent search", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "search"}):
        for i in range(2):
            with tracer.start_as_current_span("execute_tool lookup", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.arguments": json.dumps({"q": i}),
                    "gen_ai.tool.call.result": "Error: backend down"}) as s:
                s.set_status(Status(StatusCode.ERROR, "backend down"))
    return 6


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_the_sdk_exporters_deliver_runs_that_get_the_expected_verdicts(live_service, transport):
    live = live_service(root_grace=0.3)
    exporter = (GrpcExporter(endpoint=live.grpc, insecure=True) if transport == "grpc"
                else HttpExporter(endpoint=f"{live.http}/v1/traces"))
    provider = TracerProvider(resource=Resource.create({"service.name": "agent-app"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
    spans = _agent_runs(provider.get_tracer("test"))
    assert provider.force_flush(10_000)
    verdicts = {v.agent: v for v in live.sink.wait_for(2)}
    provider.shutdown()
    assert [r.check for r in verdicts["files"].fired] == ["policy"]
    assert [r.check for r in verdicts["search"].fired] == ["unrecovered_tool_error"]
    assert verdicts["files"].steps == 1 and verdicts["search"].steps == 2
    assert live.sample("faultgate_receiver_accepted_spans_total", transport=transport) == spans
    assert live.sample("faultgate_runs_total", verdict="failed") == 2
    # the tool span arrives before its root and names no agent: the early count says "unknown"
    assert live.sample("faultgate_check_early_fired_total", agent="unknown", check="policy") == 1
    assert live.sample("faultgate_check_fired_total", agent="files", check="policy", severity="hard") == 1
