"""Issue 42's classes of hostile input (tests/fuzz/hostile.py, generated) against the real
service, over gRPC and over HTTP (protobuf and OTLP/JSON), traces and logs, with a real
collector downstream. For every request:

- the answer is OK (with or without partial success) or permanent: never a status that
  asks to be retried (nothing here is capacity), never INTERNAL;
- the spans (log records) the client counts as acknowledged are exactly what the service
  counts as accepted, request by request;

and over the whole run: no traceback is logged, no internal error is counted, and the
downstream receives exactly the spans acknowledged (what was rejected never leaves, what was
taken leaves once). The in-process targets meet the same classes in tests/fuzz/test_fuzz.py;
the soak runs them longer (bench/fuzz_soak.py).
"""
from __future__ import annotations

import dataclasses
import logging
import urllib.error
import urllib.request
from collections import Counter

import grpc
import structlog
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from hypothesis import HealthCheck, given, settings
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.stream.client import SUBSCRIBE
from tests.e2e.downstream import downstream_config, read_spans
from tests.fuzz import hostile
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector

PATHS = {"traces": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
         "logs": "/opentelemetry.proto.collector.logs.v1.LogsService/Export"}
RESPONSES = {"traces": (ExportTraceServiceResponse, "rejected_spans"),
             "logs": (ExportLogsServiceResponse, "rejected_log_records")}
ACCEPTED = {"traces": "faultgate_receiver_accepted_spans_total",
            "logs": "faultgate_receiver_accepted_log_records_total"}
PERMANENT_GRPC = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
PERMANENT_HTTP = {400, 413}


class Client:
    """Sends each hostile request every way it can go and checks each answer against the
    service's own count."""

    def __init__(self, live) -> None:
        self.live = live
        self.channel = grpc.insecure_channel(live.grpc, options=[("grpc.max_send_message_length", -1)])
        self.calls = {signal: self.channel.unary_unary(path) for signal, path in PATHS.items()}
        self.acknowledged = Counter()   # signal -> spans or records acknowledged
        self.answers = Counter()        # (class, transport, answer) -> requests

    def send(self, h: hostile.Hostile) -> None:
        if h.proto is not None:
            self._checked(h, "grpc", lambda: self._grpc(h))
            self._checked(h, "http", lambda: self._http(h, h.proto, "application/x-protobuf"))
        if h.json is not None:
            self._checked(h, "http", lambda: self._http(h, h.json, "application/json"))

    def _checked(self, h: hostile.Hostile, transport: str, send) -> None:
        metric = ACCEPTED[h.signal]
        before = self.live.sample(metric, transport=transport)
        acknowledged, answer = send()
        accepted = self.live.sample(metric, transport=transport) - before
        assert accepted == acknowledged, (f"{h.cls} over {transport} ({answer}): the client was told {acknowledged} "
                                          f"of {h.offered} were taken, the service counted {accepted}")
        self.acknowledged[h.signal] += acknowledged
        self.answers[(h.cls, transport, answer)] += 1

    def _grpc(self, h: hostile.Hostile) -> tuple[int, str]:
        try:
            raw = self.calls[h.signal](h.proto, timeout=30)
        except grpc.RpcError as e:
            status = rpc_status.from_call(e)
            retry_info = any(d.Is(error_details_pb2.RetryInfo.DESCRIPTOR) for d in (status.details if status else ()))
            assert e.code() in PERMANENT_GRPC and not retry_info, \
                f"{h.cls}: gRPC {e.code().name} ({e.details()}) to input that cannot succeed"
            return 0, e.code().name
        response, field = RESPONSES[h.signal]
        rejected = getattr(response.FromString(raw).partial_success, field)
        return h.offered - rejected, "partial" if rejected else "OK"

    def _http(self, h: hostile.Hostile, body: bytes, content_type: str) -> tuple[int, str]:
        req = urllib.request.Request(f"{self.live.http}/v1/{h.signal}", data=body, method="POST",
                                     headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            assert e.code in PERMANENT_HTTP and "Retry-After" not in e.headers, \
                f"{h.cls}: HTTP {e.code} ({e.read()[:300]!r}) to input that cannot succeed"
            return 0, str(e.code)
        response, field = RESPONSES[h.signal]
        msg = (json_format.Parse(raw, response()) if content_type == "application/json"
               else response.FromString(raw))
        rejected = getattr(msg.partial_success, field)
        return h.offered - rejected, "partial" if rejected else "200"

    def subscribe(self, body: bytes) -> str:
        call = self.channel.unary_stream(SUBSCRIBE)(body, timeout=5)
        try:
            next(call)
        except grpc.RpcError as e:
            assert e.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.DEADLINE_EXCEEDED), e.details()
            return e.code().name
        return "verdict"


HOSTILE = settings(max_examples=60, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])


def test_hostile_classes_get_permanent_answers_and_every_acknowledged_span_is_taken_and_exported_once(
        live_service, tmp_path, caplog):
    down_port, out = free_port(), tmp_path / "out"
    out.mkdir()
    export = SpansExportConfig(endpoint=f"127.0.0.1:{down_port}", linger=0.02, retry_initial_interval=0.1,
                               retry_max_interval=0.5)
    caplog.set_level(logging.WARNING)
    with running_collector(downstream_config(down_port, out), tmp_path, name="downstream"), \
            structlog.testing.capture_logs() as logged:
        live = live_service(dataclasses.replace(make_config(root_grace=0.1, idle_timeout=0.5, max_run_duration=2.0),
                                                export=export))
        client = Client(live)

        for strategy in hostile.CLASSES.values():
            @HOSTILE
            @given(strategy)
            def send(h):
                client.send(h)

            send()
        for body in (b"\x0a\x02\xff\xfe", b"\x0a\x09short", b"\x0f", b"\x12\x01"):  # malformed subscriptions
            client.answers[("subscribe", "grpc", client.subscribe(body))] += 1
        client.channel.close()

        eventually(lambda: live.sample("faultgate_runs_in_memory") == 0, timeout=30, what="every run decided")
        eventually(lambda: live.sample("faultgate_exporter_queue_spans") == 0, timeout=60,
                   what=lambda: f"the export queue to drain ({live.sample('faultgate_exporter_queue_spans')})")
        sent = live.sample("faultgate_exporter_sent_spans_total")
        eventually(lambda: len(read_spans(out)) >= sent, timeout=30, what="the downstream to write what it took")

    classes = {cls for cls, _, _ in client.answers}
    assert classes >= {*hostile.CLASSES, "subscribe"}
    assert {t for _, t, _ in client.answers} == {"grpc", "http"}
    # what the service took is what it sent on, once: nothing rejected went downstream
    assert sent == client.acknowledged["traces"] == len(read_spans(out)) > 0
    assert live.sample("faultgate_exporter_failed_spans_total") == 0
    assert live.sample("faultgate_internal_errors_total") == 0
    assert live.sample("faultgate_receiver_refused_spans_total") == 0
    assert live.sample("faultgate_receiver_rejected_spans_total", reason="too_deep") > 0
    assert live.sample("faultgate_receiver_rejected_log_records_total", reason="invalid_log_record") > 0
    tracebacks = [e for e in logged if e.get("exc_info") or e.get("exception")]
    assert not tracebacks, tracebacks[:3]
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
