"""A late span amends its run's verdict, live: the OTel SDK's gRPC exporter into the real
service, a real collector downstream and a verdict-stream subscriber. Exactly once: the
same span again (a retry) and a late span that changes nothing amend nothing."""
from __future__ import annotations

import dataclasses
import json

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.stream.gen import verdict_pb2
from tests.e2e.downstream import attrs, downstream_config, read_logs, read_logs_with_resource, read_spans
from tests.live.test_verdict_stream import _subscribe
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector


def _tool(tracer, path: str, context=None):
    return tracer.start_span("execute_tool read_file", context=context, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file",
        "gen_ai.tool.call.arguments": json.dumps({"path": path}), "gen_ai.tool.call.result": "ok"})


def test_a_late_span_amends_a_verdict_exactly_once(live_service, tmp_path):
    port, out = free_port(), tmp_path / "out"
    out.mkdir()
    with running_collector(downstream_config(port, out), tmp_path):
        export = SpansExportConfig(endpoint=f"127.0.0.1:{port}", logs_endpoint=f"127.0.0.1:{port}",
                                   retry_initial_interval=0.2, retry_max_interval=1.0)
        live = live_service(dataclasses.replace(make_config(), export=export))
        streamed: list = []
        channel, stream = _subscribe(live.grpc, verdict_pb2.SubscribeRequest(), streamed)
        eventually(lambda: live.service.stream.subscribers() == 1, what="the subscription")

        provider = TracerProvider(resource=Resource.create({"service.name": "agent-app"}))
        provider.add_span_processor(BatchSpanProcessor(GrpcExporter(endpoint=live.grpc, insecure=True),
                                                       schedule_delay_millis=100))
        tracer = provider.get_tracer("agent")
        root = tracer.start_span("invoke_agent files", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "files"})
        in_root = trace.set_span_in_context(root)
        _tool(tracer, "conf.yaml", in_root).end()
        root.end()
        assert provider.force_flush(10_000)
        (first,) = live.sink.wait_for(1)
        assert first.verdict == "clean" and first.revision == 0

        # the stragglers, exported by hand so that one of them can be sent twice, as a retry is
        memory = InMemorySpanExporter()
        late_provider = TracerProvider(resource=Resource.create({"service.name": "agent-app"}))
        late_provider.add_span_processor(SimpleSpanProcessor(memory))
        late_tracer = late_provider.get_tracer("agent")
        _tool(late_tracer, "../../etc/passwd", in_root).end()
        _tool(late_tracer, "other.yaml", in_root).end()
        denied, harmless = memory.get_finished_spans()
        sender = GrpcExporter(endpoint=live.grpc, insecure=True)
        assert sender.export([denied]) == SpanExportResult.SUCCESS
        first_, amended = live.sink.wait_for(2)
        # an amendment is published while the assembler takes the span, before the request
        # is acknowledged: once these calls return, any amendment they caused is in the sink
        assert sender.export([denied]) == SpanExportResult.SUCCESS
        assert sender.export([harmless]) == SpanExportResult.SUCCESS
        sender.shutdown()
        provider.shutdown()
        late_provider.shutdown()

        assert len(live.sink.verdicts) == 2
        assert live.sample("faultgate_late_spans_total") == 2
        assert live.sample("faultgate_duplicate_spans_total") == 1
        denied_id = f"{denied.context.span_id:016x}"
        assert (amended.key, amended.revision, amended.previous, amended.verdict) == (first.key, 1, "clean", "failed")
        assert amended.amended_checks == ("policy",) and amended.amended_by == denied_id
        assert live.sample("faultgate_verdict_amendments_total", check="policy", result="fired") == 1
        assert live.sample("faultgate_runs_total") == 1  # the run is counted once, its amendment apart

        # the verdict stream re-emits the verdict with its revision
        eventually(lambda: len(streamed) == 2, what="both verdicts streamed")
        stream.cancel()
        channel.close()
        assert [(m.run_id, m.revision) for m in streamed] == [(str(first.key), 0), (str(first.key), 1)]
        again = streamed[1]
        assert again.previous_verdict == verdict_pb2.OUTCOME_CLEAN and again.verdict == verdict_pb2.OUTCOME_FAILED
        assert list(again.amended_checks) == ["policy"] and again.amended_by == denied_id

        # downstream: the root went out with the first verdict, the amending span carries the
        # amendment, and the evaluation records go out again with the revision
        sent = 5  # root, tool, the late span twice, the harmless one
        eventually(lambda: live.sample("faultgate_exporter_sent_spans_total") == sent, what="every span sent")
        spans = eventually(lambda: (s := read_spans(out)) and len(s) >= sent and s, what="spans downstream")
        n_results = len(first.results)
        logs = eventually(lambda: (r := read_logs(out)) and len(r) >= 2 * n_results and r, what="log records")
    by_key = {}
    for s in spans:
        by_key.setdefault(s["spanId"], []).append(attrs(s))
    (root_attrs,) = by_key[first.key.root_span_id]
    assert root_attrs["faultgate.verdict"] == "clean" and "faultgate.revision" not in root_attrs
    copies = by_key[denied_id]
    assert len(copies) == 2
    carrying = [a for a in copies if "faultgate.revision" in a]
    assert len(carrying) == 1
    assert carrying[0]["faultgate.verdict"] == "failed" and carrying[0]["faultgate.revision"] == "1"
    assert carrying[0]["faultgate.previous_verdict"] == "clean" and carrying[0]["faultgate.amended_checks"] == ["policy"]
    assert all("faultgate.verdict" not in a for a in by_key[f"{harmless.context.span_id:016x}"])
    revisions = [attrs(r).get("faultgate.revision") for r in logs]
    assert len(logs) == 2 * n_results
    assert revisions.count("1") == n_results and revisions.count(None) == n_results
    # the amended records name the run's resource too, though its root left long before
    resources = [res.get("service.name") for res, _ in read_logs_with_resource(out)]
    assert resources == ["agent-app"] * len(logs), resources
