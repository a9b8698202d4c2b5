"""DESIGN.md's equation under faults (issue 9): every span a sender offered is exported,
in flight, refused retryably or rejected as invalid, each counted, at every scrape (issue
42: the queue gauge had gone below zero), not only once traffic has stopped.

One service with a real downstream collector; a sender that retries what is refused
retryably (as the collector's exporter does) and, on purpose, sends some requests twice
or three times (upstream retries whose first answer was lost). While it sends: the
downstream flaps (each time down until the export queue is full and the receiver refuses),
one run never ends (its spans keep coming past ``max_run_duration``),
one trace never gets its root, and span timestamps are skewed (far future, zero, end
before start). Afterwards, exactly:

    offered = accepted + refused (retryable) + rejected (invalid)
    accepted = sent + failed + filtered + queued,  with queued = 0 and failed = 0

The two equations are asserted after every answer too, on one scrape each, while the
exporter sends, retries and the downstream flaps: the sender waits for each answer, so
what the receivers counted is settled, and span export's counts are one snapshot.
"""
from __future__ import annotations

import dataclasses
import time

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.export.spans.config import SpansExportConfig
from tests.e2e.downstream import agent_run_request, downstream_config, read_spans
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector

SKEWS = (100 * 365 * 86400 * 10**9, -1_700_000_000 * 10**9, 0)  # a century ahead, at zero, unchanged


def _skewed(req: ExportTraceServiceRequest, n: int) -> ExportTraceServiceRequest:
    skew = SKEWS[n % len(SKEWS)]
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                s.start_time_unix_nano = max(0, s.start_time_unix_nano + skew)
                if n % 4 == 0:
                    s.end_time_unix_nano = 1  # ends before it starts
    return req


def _spans(req: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)


def _endless(run: int, n: int) -> ExportTraceServiceRequest:
    """One more span of the run that never ends (its root came first), and one more of the
    trace that never gets a root."""
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    now = time.time_ns()
    for trace, parent in ((0xFA17 << 64 | run, (run << 8 | 1)), (0x0A0A << 64 | run, 0xDEAD)):
        spans.add(trace_id=trace.to_bytes(16, "big"), span_id=(0x7700 << 32 | n).to_bytes(8, "big"),
                  parent_span_id=parent.to_bytes(8, "big"), name="step", start_time_unix_nano=now)
    return req


def _balanced(live, offered: int) -> None:
    s = live.scrape()
    accepted = s.sample("faultgate_receiver_accepted_spans_total")
    received = accepted + s.sample("faultgate_receiver_refused_spans_total") \
        + s.sample("faultgate_receiver_rejected_spans_total")
    exported = s.sample("faultgate_exporter_sent_spans_total") + s.sample("faultgate_exporter_failed_spans_total") \
        + s.sample("faultgate_exporter_filtered_spans_total") + s.sample("faultgate_exporter_queue_spans")
    assert (offered, accepted) == (received, exported), f"offered {offered}, received {received}; " \
        f"accepted {accepted}, exported or in flight {exported}"


def test_the_span_equation_holds_through_flaps_duplicates_an_endless_run_and_clock_skew(live_service, tmp_path):
    down_port, out = free_port(), tmp_path / "out"
    out.mkdir()
    export = SpansExportConfig(endpoint=f"127.0.0.1:{down_port}", queue_spans=300, max_batch_spans=100,
                               retry_initial_interval=0.1, retry_max_interval=0.5, retry_max_elapsed=0, workers=2)
    offered = 0
    with running_collector(downstream_config(down_port, out), tmp_path, name="downstream") as downstream:
        live = live_service(dataclasses.replace(make_config(root_grace=0.3, max_run_duration=2.0, idle_timeout=1.0),
                                                export=export))
        channel = grpc.insecure_channel(live.grpc)
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)

        def send(req: ExportTraceServiceRequest) -> None:
            nonlocal offered
            # patient as a collector's exporter is (its queue holds what is refused): a slow
            # hour on this machine stretches the downstream's restart and the queue's drain
            give_up = time.monotonic() + 60
            while time.monotonic() < give_up:
                offered += _spans(req)
                try:
                    stub.Export(req, timeout=10)
                    _balanced(live, offered)
                    return
                except grpc.RpcError as e:
                    assert e.code() is grpc.StatusCode.UNAVAILABLE, e.details()  # only capacity refuses
                    _balanced(live, offered)
                    if not downstream.running:
                        downstream.start()  # the outage filled the queue: it has made its point
                    time.sleep(0.05)
            raise AssertionError("a request was refused for 60 s")

        endless_root = agent_run_request(900_000, tools=0)
        send(endless_root)
        started = time.monotonic()
        for n in range(240):
            if n % 60 == 20 and downstream.running:
                downstream.stop()  # down until the queue is full and the receiver refuses
            req = _skewed(agent_run_request(n), n)
            for _ in range(1 + (n % 3 == 0) + (n % 7 == 0)):  # duplicates: the same request again
                send(req)
            if n % 10 == 0:
                send(_endless(900_000, n))
            time.sleep(0.01)
        assert time.monotonic() - started > 2.0  # the endless run outlived max_run_duration
        if not downstream.running:
            downstream.start()
        eventually(lambda: live.sample("faultgate_runs_in_memory") == 0, timeout=30,
                   what="every run decided (the rootless fragment as an orphan once idle)")
        eventually(lambda: live.sample("faultgate_exporter_queue_spans") == 0, timeout=120,
                   what=lambda: f"the export queue to drain ({live.sample('faultgate_exporter_queue_spans')})")
        channel.close()
        eventually(lambda: len(read_spans(out)) >= live.sample("faultgate_exporter_sent_spans_total"), timeout=30,
                   what="the downstream to write what it acknowledged")

    accepted = live.sample("faultgate_receiver_accepted_spans_total")
    refused = live.sample("faultgate_receiver_refused_spans_total")
    rejected = live.sample("faultgate_receiver_rejected_spans_total")
    assert offered == accepted + refused + rejected
    sent = live.sample("faultgate_exporter_sent_spans_total")
    failed = live.sample("faultgate_exporter_failed_spans_total")
    filtered = live.sample("faultgate_exporter_filtered_spans_total")
    queued = live.sample("faultgate_exporter_queue_spans")
    assert accepted == sent + failed + filtered + queued
    assert failed == 0 and queued == 0 and rejected == 0
    assert refused > 0  # the flaps filled the queue, and the sender was told to retry
    assert live.sample("faultgate_duplicate_spans_total") > 0
    assert live.sample("faultgate_late_spans_total") > 0  # the endless run's spans after its verdict
    # the rootless trace: closed at max_run_duration, or as an orphan when load spaced its spans
    assert (live.sample("faultgate_runs_total", completion="max-duration")
            + live.sample("faultgate_runs_total", completion="orphan")) >= 1
    assert live.sample("faultgate_internal_errors_total") == 0
