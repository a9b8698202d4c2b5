"""Spans of a few MiB of content reach a downstream collector on its default settings, none
lost to its size limit (issue 42: requests just over its 4 MiB were refused with
RESOURCE_EXHAUSTED, and the spans they held, acknowledged, were dropped).

The downstream is the real collector with its OTLP receiver as it comes (4 MiB receive
limit, counted after decompression); the service runs span export on its defaults (gzip,
``max_request_bytes`` under that limit). Requests of several large spans must be sent in
pieces under the limit; a span too large for any request is refused on arrival, naming the
limit, so that it is never acknowledged and lost.
"""
from __future__ import annotations

import dataclasses
import time

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.export.spans.config import DEFAULT_MAX_REQUEST_BYTES, SpansExportConfig
from tests.e2e.downstream import downstream_config, read_spans
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector

MIB = 1024 * 1024
COLLECTOR_LIMIT = 4 * MIB  # the otlp receiver's max_recv_msg_size_mib default


def _run(run: int, contents: list[int]) -> ExportTraceServiceRequest:
    """An agent run: a root and one tool span per entry of ``contents``, each carrying a
    result of that many bytes."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.add(key="service.name").value.string_value = "large"
    spans = rs.scope_spans.add().spans
    trace = (0x1A46E << 64 | run).to_bytes(16, "big")
    now = time.time_ns()
    root = spans.add(trace_id=trace, span_id=(run << 8 | 1).to_bytes(8, "big"), name="invoke_agent large",
                     start_time_unix_nano=now, end_time_unix_nano=now + 10**6)
    root.attributes.add(key="gen_ai.operation.name").value.string_value = "invoke_agent"
    root.attributes.add(key="gen_ai.agent.name").value.string_value = "large"
    for i, size in enumerate(contents):
        s = spans.add(trace_id=trace, span_id=(run << 8 | 2 + i).to_bytes(8, "big"), parent_span_id=root.span_id,
                      name="execute_tool fetch", start_time_unix_nano=now + i, end_time_unix_nano=now + i + 1)
        s.attributes.add(key="gen_ai.operation.name").value.string_value = "execute_tool"
        s.attributes.add(key="gen_ai.tool.name").value.string_value = "fetch"
        # text that compresses: gzip on the wire, the limit on what it inflates to
        s.attributes.add(key="gen_ai.tool.call.result").value.string_value = (f"row {i} " * (size // 6 + 1))[:size]
    return req


RUNS = {  # run -> the content of each of its tool spans
    1: [512 * 1024],
    2: [MIB, 2 * MIB],
    3: [3 * MIB, 3 * MIB + MIB // 2],            # each alone close to the limit, together far over it
    4: [MIB + 200_000] * 6,                      # one request of 7 MiB, cut into pieces
    5: [200_000] * 40,                           # many mid-sized spans
    6: [DEFAULT_MAX_REQUEST_BYTES - 80 * 1024],  # as large as a span may be with its verdict to come
}


def test_runs_with_spans_of_several_mib_are_delivered_whole_to_a_collector_on_its_defaults(live_service, tmp_path):
    down_port, out = free_port(), tmp_path / "out"
    out.mkdir()
    export = SpansExportConfig(endpoint=f"127.0.0.1:{down_port}", retry_initial_interval=0.1, retry_max_interval=0.5)
    with running_collector(downstream_config(down_port, out), tmp_path, name="downstream"):
        live = live_service(dataclasses.replace(make_config(root_grace=0.2), export=export))
        channel = grpc.insecure_channel(live.grpc, options=[("grpc.max_send_message_length", -1)])
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        expected: dict[str, int] = {}
        for run, contents in RUNS.items():
            req = _run(run, contents)
            assert stub.Export(req, timeout=60).partial_success.rejected_spans == 0
            for s in req.resource_spans[0].scope_spans[0].spans:
                expected[s.span_id.hex()] = len(s.attributes[-1].value.string_value) if s.parent_span_id else 0

        # a span no request under the limit can hold is refused on arrival, naming the limit
        too_large = _run(7, [100, COLLECTOR_LIMIT + 1])
        answer = stub.Export(too_large, timeout=60).partial_success
        assert answer.rejected_spans == 1 and "max_request_bytes" in answer.error_message
        for s in too_large.resource_spans[0].scope_spans[0].spans[:2]:  # the root and the small one
            expected[s.span_id.hex()] = len(s.attributes[-1].value.string_value) if s.parent_span_id else 0
        channel.close()

        eventually(lambda: live.sample("faultgate_exporter_queue_spans") == 0, timeout=120,
                   what=lambda: f"the export queue to drain ({live.sample('faultgate_exporter_queue_spans')} left)")
        got = eventually(lambda: (spans := read_spans(out)) and len(spans) >= len(expected) and spans, timeout=60,
                         what="the downstream to write every span")

    delivered = {}
    for s in got:
        result = next((kv["value"].get("stringValue", "") for kv in s.get("attributes", [])
                       if kv["key"] == "gen_ai.tool.call.result"), "")
        delivered[bytes.fromhex(s["spanId"]).hex()] = len(result)
    assert delivered == expected  # every span, its content whole, once
    assert live.sample("faultgate_exporter_sent_spans_total") == len(expected)
    assert live.sample("faultgate_exporter_failed_spans_total") == 0
    assert live.sample("faultgate_receiver_rejected_spans_total", reason="too_large") == 1
    assert live.sample("faultgate_internal_errors_total") == 0


def test_a_downstream_whose_limit_is_under_ours_gets_the_spans_in_smaller_requests(live_service, tmp_path, capsys):
    """A collector set to take 1 MiB refuses our requests of up to 4 MiB as too large
    (RESOURCE_EXHAUSTED, no RetryInfo): they are sent again in halves, down to single spans,
    and only a span larger than its limit on its own is dropped, counted and logged."""
    down_port, out = free_port(), tmp_path / "out"
    out.mkdir()
    config = downstream_config(down_port, out).replace(
        f'endpoint: "127.0.0.1:{down_port}"', f'endpoint: "127.0.0.1:{down_port}"\n        max_recv_msg_size_mib: 1')
    assert "max_recv_msg_size_mib: 1" in config
    # gzip, as by default: the downstream's limit is on what a request inflates to
    export = SpansExportConfig(endpoint=f"127.0.0.1:{down_port}", retry_initial_interval=0.1, retry_max_interval=0.5)
    with running_collector(config, tmp_path, name="downstream"):
        live = live_service(dataclasses.replace(make_config(root_grace=0.2), export=export))
        channel = grpc.insecure_channel(live.grpc, options=[("grpc.max_send_message_length", -1)])
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        small = _run(11, [150_000] * 12)      # 1.8 MiB together, each far under 1 MiB
        too_large = _run(12, [MIB + 1000])    # over the downstream's limit alone
        for req in (small, too_large):
            assert stub.Export(req, timeout=60).partial_success.rejected_spans == 0  # under our limit: taken
        channel.close()
        eventually(lambda: live.sample("faultgate_exporter_queue_spans") == 0, timeout=120,
                   what="the export queue to drain")
        sent = live.sample("faultgate_exporter_sent_spans_total")
        got = eventually(lambda: (spans := read_spans(out)) and len(spans) >= sent and spans, timeout=60,
                         what="the downstream to write what it took")

    assert sent == len(got) == 13 + 1  # the small run whole, and the large run's root
    assert live.sample("faultgate_exporter_failed_spans_total", reason="resource_exhausted") == 1
    logged = capsys.readouterr().out
    assert "export_span_too_large" in logged and too_large.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() \
        in logged
