"""No span is acknowledged that the downstream's size limit would refuse (issue 42): with
span export on, a span no request under ``export.max_request_bytes`` can hold (with its
resource, scope and room for its verdict) is rejected on arrival, naming the limit, and
what is taken is forwarded in requests under the limit."""
from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.assemble.assembler import AddResult
from faultgate_stream.export.spans.config import VERDICT_ROOM_BYTES, SpansExportConfig
from faultgate_stream.export.spans.forward import Forwarder
from faultgate_stream.export.spans.split import chunks
from faultgate_stream.export.spans.state import ExportState
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.read.otlp_proto import alone_bytes
from faultgate_stream.receive.decode import Reader

TID = b"\x0a" * 16
LIMIT = 256 * 1024


def _request(sizes: list[int]) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add(schema_url="https://opentelemetry.io/schemas/1.30.0")
    rs.resource.attributes.add(key="service.name").value.string_value = "shop"
    spans = rs.scope_spans.add().spans
    for n, size in enumerate(sizes):
        s = spans.add(trace_id=TID, span_id=(n + 1).to_bytes(8, "big"), parent_span_id=b"\x09" * 8, name=f"s{n}")
        s.attributes.add(key="gen_ai.tool.call.result").value.string_value = "r" * size
    return req


class _Taken:
    def consume(self, spans, request=None) -> AddResult:
        return AddResult()


def test_a_span_too_large_for_any_export_request_is_rejected_on_arrival_naming_the_limit():
    config = SpansExportConfig(endpoint="127.0.0.1:1", max_request_bytes=LIMIT, max_batch_bytes=LIMIT // 2)
    fits = LIMIT - VERDICT_ROOM_BYTES - 1024
    req = _request([100, fits, LIMIT, 100])
    received, decoded = Reader(max_span_bytes=config.max_span_bytes).protobuf(req.SerializeToString())
    assert [s.name for s in decoded.spans] == ["s0", "s1", "s3"]
    assert decoded.rejections == ((0, 0, 2, "too_large"),)
    assert decoded.first_problem.startswith("resource_spans[0].scope_spans[0].spans[2]: ")
    assert f"more than {config.max_span_bytes}" in decoded.first_problem and "max_request_bytes" in decoded.first_problem

    state = ExportState.build(config, Telemetry(), lambda s: s)
    Forwarder(_Taken(), state).consume(decoded.spans, received)
    items = state.queue.take(10_000, 1 << 30, timeout=0)
    while more := state.queue.take(10_000, 1 << 30, timeout=0):
        items += more
    names = [s.name for i in items for rs in ExportTraceServiceRequest.FromString(i.payload).resource_spans
             for ss in rs.scope_spans for s in ss.spans]
    assert sorted(names) == ["s0", "s1", "s3"]
    assert all(len(i.payload) <= config.max_batch_bytes or i.spans == 1 for i in items)
    assert all(len(i.payload) <= LIMIT - VERDICT_ROOM_BYTES for i in items)


def test_without_span_export_no_size_but_the_receivers_own_is_imposed():
    req = _request([100, LIMIT])
    _, decoded = Reader(max_span_bytes=SpansExportConfig().max_span_bytes).protobuf(req.SerializeToString())
    assert decoded.rejected == 0 and len(decoded.spans) == 2


def test_the_size_counted_for_a_span_alone_is_never_under_its_request():
    req = _request([0, 10, 300, 70_000, 200_000])
    rs, ss = req.resource_spans[0], req.resource_spans[0].scope_spans[0]
    for span in ss.spans:
        alone = ExportTraceServiceRequest()
        r = alone.resource_spans.add(resource=rs.resource, schema_url=rs.schema_url)
        r.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url).spans.append(span)
        assert len(alone.SerializeToString()) <= alone_bytes(rs, ss, span)
    for limit in (1000, 80_000, 300_000):
        for piece, n in chunks(req, 1000, limit):
            assert len(piece) <= limit or n == 1
