"""The real peers work: a built OpenTelemetry Collector and Debian's Prometheus.

No faultgate_stream code runs here. These tests pin down that the peers the other
end-to-end tests rely on are installed and behave as those tests assume, so that a
failure there points at faultgate_stream and not at the harness.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, Counter, start_http_server

from tests.peers import eventually, free_port, running_collector, running_prometheus


def collector_to_file_config(grpc_port: int, http_port: int, out: Path) -> str:
    # append: the file exporter truncates its file on every start otherwise, and the
    # restart test needs what was written before the outage.
    return f"""
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{grpc_port}
      http:
        endpoint: 127.0.0.1:{http_port}
processors:
  batch:
    timeout: 100ms
exporters:
  file:
    path: {out}
    format: json
    append: true
    flush_interval: 100ms
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [file]
"""


def make_spans(service: str, names: list[str]) -> list[ReadableSpan]:
    """Finished SDK spans, recorded in memory so the export itself can be asserted on."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("faultgate-stream.tests.e2e")
    with tracer.start_as_current_span(names[0]):
        for name in names[1:]:
            with tracer.start_as_current_span(name):
                pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def export(exporter: SpanExporter, spans: list[ReadableSpan]) -> None:
    try:
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def spans_in_file(path: Path) -> dict[str, dict]:
    """The spans the file exporter wrote (one OTLP/JSON request a line), keyed by name."""
    found: dict[str, dict] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        for resource_spans in json.loads(line)["resourceSpans"]:
            attributes = {a["key"]: a["value"] for a in resource_spans["resource"]["attributes"]}
            for scope_spans in resource_spans["scopeSpans"]:
                for span in scope_spans["spans"]:
                    found[span["name"]] = {**span, "service": attributes["service.name"]["stringValue"]}
    return found


def wait_for_spans(path: Path, names: list[str]) -> dict[str, dict]:
    return eventually(
        lambda: (found := spans_in_file(path)) and set(names) <= found.keys() and found,
        timeout=15, what=f"spans {names} in {path}",
    )


def test_collector_writes_spans_received_over_otlp_grpc_to_a_file(tmp_path):
    out = tmp_path / "spans.json"
    grpc_port = free_port()
    config = collector_to_file_config(grpc_port, free_port(), out)
    spans = make_spans("peers-grpc", ["agent.run", "llm.call", "tool.call"])

    with running_collector(config, tmp_path):
        export(GrpcSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True), spans)
        written = wait_for_spans(out, ["agent.run", "llm.call", "tool.call"])

    trace_id = format(spans[0].context.trace_id, "032x")
    assert {written[name]["traceId"] for name in ("agent.run", "llm.call", "tool.call")} == {trace_id}
    assert written["llm.call"]["parentSpanId"] == written["agent.run"]["spanId"]
    assert written["agent.run"]["service"] == "peers-grpc"


def test_collector_writes_spans_received_over_otlp_http_to_a_file(tmp_path):
    out = tmp_path / "spans.json"
    http_port = free_port()
    config = collector_to_file_config(free_port(), http_port, out)
    spans = make_spans("peers-http", ["agent.run", "llm.call"])

    with running_collector(config, tmp_path):
        export(HttpSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces"), spans)
        written = wait_for_spans(out, ["agent.run", "llm.call"])

    assert written["llm.call"]["traceId"] == format(spans[0].context.trace_id, "032x")
    assert written["llm.call"]["service"] == "peers-http"


def test_collector_stopped_mid_test_refuses_spans_and_accepts_them_again_on_the_same_port_after_start(tmp_path):
    out = tmp_path / "spans.json"
    grpc_port = free_port()
    config = collector_to_file_config(grpc_port, free_port(), out)

    with running_collector(config, tmp_path) as collector:
        export(GrpcSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True),
               make_spans("peers-restart", ["before.outage"]))
        wait_for_spans(out, ["before.outage"])

        collector.stop()
        assert not collector.running
        # A short timeout: the exporter retries until it, and the outage is the point.
        down = GrpcSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True, timeout=1)
        try:
            assert down.export(make_spans("peers-restart", ["during.outage"])) == SpanExportResult.FAILURE
        finally:
            down.shutdown()

        collector.start()
        assert collector.running
        export(GrpcSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True),
               make_spans("peers-restart", ["after.outage"]))
        written = wait_for_spans(out, ["before.outage", "after.outage"])

    assert "during.outage" not in written
    assert collector.log().count("Everything is ready") == 2
    assert not collector.running


def test_collector_serves_its_own_metrics_on_the_telemetry_port(tmp_path):
    config = collector_to_file_config(free_port(), free_port(), tmp_path / "spans.json")
    with running_collector(config, tmp_path) as collector:
        assert "otelcol_process_uptime" in collector.metrics()


def test_prometheus_scrapes_a_counter_and_keeps_its_exemplar_trace_id(tmp_path):
    registry = CollectorRegistry()
    requests = Counter("peers_smoke_requests", "Requests seen by the smoke test.", registry=registry)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    for _ in range(3):
        requests.inc(exemplar={"trace_id": trace_id})
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    started = time.time()
    try:
        with running_prometheus([f"127.0.0.1:{port}"], tmp_path) as prometheus:
            samples = eventually(lambda: prometheus.query("peers_smoke_requests_total"), timeout=20,
                                 what=lambda: f"a scraped sample (targets: {prometheus.targets()})")
            series = eventually(
                lambda: prometheus.exemplars("peers_smoke_requests_total", started - 60, time.time() + 60),
                timeout=20, what="a stored exemplar",
            )
            assert prometheus.query('up{job="e2e"}')[0]["value"][1] == "1"
    finally:
        server.shutdown()
        thread.join(timeout=5)

    assert [float(sample["value"][1]) for sample in samples] == [3.0]
    assert samples[0]["metric"]["instance"] == f"127.0.0.1:{port}"
    exemplars = [exemplar for entry in series for exemplar in entry["exemplars"]]
    assert {exemplar["labels"]["trace_id"] for exemplar in exemplars} == {trace_id}
    assert float(exemplars[-1]["value"]) == 1.0
