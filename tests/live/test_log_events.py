"""GenAI content sent as OTLP log records by the OpenTelemetry SDK's own log exporters
(gRPC ``LogsService/Export`` and HTTP ``/v1/logs``) is joined to its spans: a run recorded
``event_only`` gets the verdict it gets with content on its spans, and the counts add up."""
from __future__ import annotations

import json

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest, ExportLogsServiceResponse,
)
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.genai_sdk import DETAILS, event_only_run


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_the_sdk_log_exporters_deliver_content_that_decides_event_only_runs(live_service, transport):
    live = live_service(root_grace=1.0)
    resource = Resource.create({"service.name": "weather-agent"})
    if transport == "grpc":
        span_exporter, log_exporter = (GrpcSpanExporter(endpoint=live.grpc, insecure=True),
                                       GrpcLogExporter(endpoint=live.grpc, insecure=True))
    else:
        span_exporter, log_exporter = (HttpSpanExporter(endpoint=f"{live.http}/v1/traces"),
                                       HttpLogExporter(endpoint=f"{live.http}/v1/logs"))
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter, schedule_delay_millis=60_000))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter, schedule_delay_millis=60_000))
    tracer, logger = tracer_provider.get_tracer("t"), logger_provider.get_logger("t")
    records = event_only_run(tracer, logger, "clean", 1, "21 degrees")
    records += event_only_run(tracer, logger, "looping", 3, "21 degrees")
    records += event_only_run(tracer, logger, "abstaining", 1, "I could not find the weather.")
    # the logs first: content waits for its spans
    assert logger_provider.force_flush(10_000)
    assert tracer_provider.force_flush(10_000)
    verdicts = {v.agent: v for v in live.sink.wait_for(3)}
    logger_provider.shutdown()
    tracer_provider.shutdown()
    assert verdicts["clean"].verdict == "clean"
    assert [r.check for r in verdicts["looping"].fired] == ["repeated_call"]
    assert [r.check for r in verdicts["abstaining"].fired] == ["abstention"]
    assert live.sample("faultgate_receiver_accepted_log_records_total", transport=transport) == records
    assert live.sample("faultgate_log_contents_total", outcome="joined") == records


def test_logs_export_rejects_bad_records_by_partial_success_and_garbage_as_invalid_argument(live_service):
    live = live_service()
    channel = grpc.insecure_channel(live.grpc)
    export = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                                 request_serializer=ExportLogsServiceRequest.SerializeToString,
                                 response_deserializer=ExportLogsServiceResponse.FromString)
    req = ExportLogsServiceRequest()
    records = req.resource_logs.add().scope_logs.add().log_records
    good = records.add(trace_id=b"\1" * 16, span_id=b"\2" * 8, event_name=DETAILS)
    good.attributes.add(key="gen_ai.response.finish_reasons").value.array_value.values.add(string_value="stop")
    records.add(trace_id=b"\1" * 15, span_id=b"\2" * 8, event_name=DETAILS)  # a 15-byte trace id
    records.add(body={"string_value": "an application log line, not ours"})
    resp = export(req, timeout=10)
    assert resp.partial_success.rejected_log_records == 1
    assert "trace" in resp.partial_success.error_message
    raw = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
    with pytest.raises(grpc.RpcError) as err:
        raw(b"\xff\xff\xff", timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    channel.close()
    assert live.sample("faultgate_receiver_accepted_log_records_total", transport="grpc") == 2
    assert live.sample("faultgate_receiver_rejected_log_records_total", transport="grpc",
                       reason="invalid_log_record") == 1


def test_http_logs_answer_400_for_garbage_and_partial_success_in_json(live_service):
    import urllib.request
    from urllib.error import HTTPError

    live = live_service()

    def post(body: bytes, content_type: str):
        req = urllib.request.Request(f"{live.http}/v1/logs", data=body, headers={"Content-Type": content_type})
        return urllib.request.urlopen(req, timeout=10)

    with pytest.raises(HTTPError) as err:
        post(b"{not json", "application/json")
    assert err.value.code == 400
    doc = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": "01" * 16, "spanId": "zz", "eventName": DETAILS}]}]}]}
    resp = post(json.dumps(doc).encode(), "application/json")
    assert resp.status == 200
    assert json.loads(resp.read())["partialSuccess"]["rejectedLogRecords"] in (1, "1")
