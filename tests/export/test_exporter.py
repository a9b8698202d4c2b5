"""The span exporter against a downstream that answers what a real collector rarely does:
partial success, RetryInfo, a permanent refusal. The downstream here is a real gRPC server
in this process (a collector cannot be made to return these on demand); everything on our
side is the production code."""
from __future__ import annotations

import time
from concurrent import futures

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
)

from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.spans.exporter import SpanExporter
from faultgate_stream.export.spans.queue import Item, SendQueue
from faultgate_stream.export.spans.sender import sender_for
from faultgate_stream.model.telemetry import Telemetry


class Downstream:
    """Answers each Export with the next scripted reply: "ok", ("partial", n), ("retry", s), or a code."""

    def __init__(self, script: list, port: int = 0) -> None:
        self.script = list(script)
        self.calls: list[float] = []
        self.sizes: list[int] = []
        self.spans = 0
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.unary_unary_rpc_method_handler(self._export, request_deserializer=None,
                                                      response_serializer=None)
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService", {"Export": handler}),))
        self.port = self._server.add_insecure_port(f"127.0.0.1:{port}")
        self._server.start()

    def _export(self, body: bytes, context) -> bytes:
        self.calls.append(time.monotonic())
        self.sizes.append(len(body))
        reply = self.script.pop(0) if self.script else "ok"
        req = ExportTraceServiceRequest.FromString(body)
        n = sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
        if reply == "ok":
            self.spans += n
            return ExportTraceServiceResponse().SerializeToString()
        if reply[0] == "partial":
            self.spans += n - reply[1]
            return ExportTraceServiceResponse(partial_success=ExportTracePartialSuccess(
                rejected_spans=reply[1], error_message="bad spans")).SerializeToString()
        if reply[0] == "retry":
            st = status_pb2.Status(code=grpc.StatusCode.UNAVAILABLE.value[0], message="busy")
            delay = duration_pb2.Duration()
            delay.FromNanoseconds(int(reply[1] * 1e9))
            detail = any_pb2.Any()
            detail.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
            st.details.append(detail)
            context.abort_with_status(rpc_status.to_status(st))
        context.abort(reply[1], "refused")

    def stop(self) -> None:
        self._server.stop(0)


def _request(n: int, payload: int = 0) -> bytes:
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    for i in range(n):
        s = spans.add(trace_id=b"\x01" * 16, span_id=(i + 1).to_bytes(8, "big"), name="s")
        if payload:
            s.attributes.add(key="gen_ai.tool.call.result").value.string_value = "x" * payload
    return req.SerializeToString()


def _run(script: list, spans: int, payload: int = 0, **cfg) -> tuple[Downstream, Telemetry, SendQueue]:
    down = Downstream(script)
    config = SpansExportConfig(endpoint=f"127.0.0.1:{down.port}", retry_initial_interval=0.05,
                               retry_max_interval=0.1, workers=1, **cfg)
    queue, telemetry = SendQueue(1000), Telemetry()
    exporter = SpanExporter(queue, {"traces": sender_for(config.endpoint, config)}, config, telemetry)
    exporter.start()
    queue.reserve(spans)
    queue.put(Item("traces", _request(spans, payload), spans))
    assert queue.wait_empty(20)
    exporter.shutdown(1)
    down.stop()
    return down, telemetry, queue


def _value(t: Telemetry, name: str, **labels: str) -> float:
    return t.registry.get_sample_value(name, labels) or 0.0


def test_a_partial_success_counts_the_rejected_spans_as_failed_and_the_rest_as_sent():
    down, t, _ = _run([("partial", 3)], 10)
    assert _value(t, "faultgate_exporter_sent_spans_total") == 7
    assert _value(t, "faultgate_exporter_failed_spans_total", reason="downstream_rejected") == 3
    assert len(down.calls) == 1  # a partial success is never retried


def test_retry_info_is_honoured_before_the_next_attempt():
    down, t, _ = _run([("retry", 0.6)], 5)
    assert len(down.calls) == 2 and down.calls[1] - down.calls[0] >= 0.55
    assert _value(t, "faultgate_exporter_sent_spans_total") == 5


def test_a_permanent_refusal_is_not_retried_and_is_counted():
    down, t, queue = _run([("code", grpc.StatusCode.INVALID_ARGUMENT)], 4)
    assert len(down.calls) == 1
    assert _value(t, "faultgate_exporter_failed_spans_total", reason="invalid_argument") == 4
    assert queue.in_flight == 0


def test_resource_exhausted_without_retry_info_is_answered_by_sending_the_request_in_halves():
    """The downstream's size limit is under ours: the same request would be refused again,
    its halves may not be (issue 42: the spans were dropped whole)."""
    down, t, queue = _run([("code", grpc.StatusCode.RESOURCE_EXHAUSTED)], 5, payload=20_000)
    assert len(down.calls) == 3 and down.spans == 5  # 5 refused, then 3 and 2
    assert _value(t, "faultgate_exporter_sent_spans_total") == 5
    assert _value(t, "faultgate_exporter_failed_spans_total", reason="resource_exhausted") == 0
    assert queue.in_flight == 0


def test_a_single_span_the_downstream_refuses_as_too_large_is_dropped_counted_and_named(capsys):
    exhausted = ("code", grpc.StatusCode.RESOURCE_EXHAUSTED)
    down, t, _ = _run([exhausted] * 3, 2, payload=40_000)  # the pair, then each span alone
    assert len(down.calls) == 3 and down.spans == 0
    assert _value(t, "faultgate_exporter_failed_spans_total", reason="resource_exhausted") == 2
    logged = capsys.readouterr().out
    assert logged.count("export_span_too_large") == 2 and "01010101010101010101010101010101" in logged


def test_a_small_request_refused_with_resource_exhausted_is_not_cut_into_a_call_per_span():
    """Under 64 KiB no downstream's size limit is the reason: a quota, say; halving it down
    to single spans would be a storm of calls for nothing."""
    down, t, _ = _run([("code", grpc.StatusCode.RESOURCE_EXHAUSTED)] * 100, 50)
    assert len(down.calls) == 1
    assert _value(t, "faultgate_exporter_failed_spans_total", reason="resource_exhausted") == 50


def test_no_request_leaves_larger_than_max_request_bytes():
    big = 200 * 1024
    down, t, queue = _run([], 6, max_request_bytes=3 * big + 64 * 1024, max_batch_bytes=3 * big, payload=big)
    assert down.spans == 6 and max(down.sizes) <= 3 * big + 64 * 1024 and len(down.calls) >= 2
    assert _value(t, "faultgate_exporter_sent_spans_total") == 6


def test_a_span_larger_than_max_request_bytes_alone_is_dropped_counted_and_named(capsys):
    down, t, _ = _run([], 3, max_request_bytes=128 * 1024, max_batch_bytes=64 * 1024, payload=130 * 1024)
    assert down.calls == [] and down.spans == 0
    assert _value(t, "faultgate_exporter_failed_spans_total", reason="too_large") == 3
    assert capsys.readouterr().out.count("export_span_too_large") == 3


def test_requests_over_the_batch_limits_are_split():
    from faultgate_stream.export.spans.split import chunks

    req = ExportTraceServiceRequest.FromString(_request(50))
    pieces = list(chunks(req, max_spans=20, max_bytes=10**6))
    assert [n for _, n in pieces] == [20, 20, 10]
    pieces = list(chunks(req, max_spans=1000, max_bytes=300))
    assert sum(n for _, n in pieces) == 50 and all(len(p) <= 300 for p, _ in pieces)
    assert len(pieces) > 1


def test_a_downstream_back_after_a_long_outage_is_reconnected_within_the_retry_interval():
    """gRPC's channel backs its reconnects off up to 120 s on its own; after 12 s away its next
    attempt came 3.1 s after it was back (measured), and every export until then failed at once."""
    probe = Downstream([])
    port = probe.port
    probe.stop()  # the port the downstream will come back on, free meanwhile
    config = SpansExportConfig(endpoint=f"127.0.0.1:{port}", retry_initial_interval=0.1, retry_max_interval=0.3)
    sender = sender_for(config.endpoint, config)
    payload = _request(1)
    outage_end = time.monotonic() + 12
    while time.monotonic() < outage_end:
        try:
            sender.send("traces", payload)
        except Exception:  # noqa: BLE001  (nothing listens: every attempt fails)
            pass
        else:
            raise AssertionError("an export succeeded while nothing listened")
        time.sleep(0.2)
    down = Downstream([], port)
    try:
        back = time.monotonic()
        while down.spans == 0 and time.monotonic() - back < 10:
            try:
                sender.send("traces", payload)
            except Exception:  # noqa: BLE001  (still reconnecting)
                time.sleep(0.1)
        reconnected = time.monotonic() - back
        assert down.spans == 1
        assert reconnected < 1.5, f"the downstream was back, and the exporter reconnected {reconnected:.1f} s later"
    finally:
        down.stop()
