"""Defects 8 and 10 of issue 9: a root held forever when its trace hit
``max_spans_per_trace`` in the request that carried it; requests that can never fit a
bound refused retryably forever."""
from __future__ import annotations

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.assemble.live import LiveAssembler
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.spans.forward import Forwarder
from faultgate_stream.export.spans.sink import SpanSink
from faultgate_stream.export.spans.state import ExportState
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.errors import CapacityError, InputError
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.read.otlp_proto import Received, read
from faultgate_stream.verdict.evaluate import Evaluator


def _request(traces: int, children: int, first: int = 1) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    for t in range(first, first + traces):
        root = Span(trace_id=t.to_bytes(16, "big"), span_id=(t * 1000).to_bytes(8, "big"), name="invoke_agent a",
                    start_time_unix_nano=1, end_time_unix_nano=2)
        root.attributes.add(key="gen_ai.operation.name").value.string_value = "invoke_agent"
        spans.append(root)
        for c in range(1, children + 1):
            spans.append(Span(trace_id=t.to_bytes(16, "big"), span_id=(t * 1000 + c).to_bytes(8, "big"),
                              parent_span_id=(t * 1000).to_bytes(8, "big"), name="step", start_time_unix_nano=1 + c))
    return req


def _pipeline(queue_spans: int = 1000, **assemble):
    telemetry, clock = Telemetry(), ManualClock(10**18)
    state = ExportState.build(SpansExportConfig(endpoint="127.0.0.1:1", queue_spans=queue_spans), telemetry,
                              lambda s: s)
    asm = Assembler(Evaluator([], SpanSink(state)), clock, AssembleConfig(**assemble))
    return Forwarder(LiveAssembler(asm, clock, telemetry, tick=60), state), state


def _queued_spans(state) -> list[Span]:
    out = []
    for item in state.queue.take(10**9, 10**12, 0):
        out += [s for rs in ExportTraceServiceRequest.FromString(item.payload).resource_spans
                for ss in rs.scope_spans for s in ss.spans]
    return out


def test_a_root_whose_trace_hits_the_span_cap_in_its_own_request_goes_out_with_its_verdict():
    fwd, state = _pipeline(max_spans_per_trace=3)
    req = _request(1, 4)  # root + 4 children: the cap closes the run while the request is taken
    fwd.consume(read(req.SerializeToString()).spans, Received.of(req))
    assert len(state.held) == 0
    out = _queued_spans(state)
    root = next(s for s in out if s.name == "invoke_agent a")
    assert {kv.key: kv.value.string_value for kv in root.attributes}["faultgate.completion"] == "evicted"
    assert len(out) == 5 and state.queue.in_flight == 5  # every span queued once, none stuck


def test_more_new_traces_than_max_traces_in_one_request_is_rejected_permanently_naming_the_limit():
    fwd, state = _pipeline(max_traces=3)
    req = _request(4, 0)
    with pytest.raises(InputError, match="max_traces"):
        fwd.consume(read(req.SerializeToString()).spans, Received.of(req))
    assert state.queue.in_flight == 0 and len(state.held) == 0
    small = _request(3, 0)
    fwd.consume(read(small.SerializeToString()).spans, Received.of(small))  # what fits is taken
    later = _request(1, 0, first=10)
    with pytest.raises(CapacityError):      # and what fits later is refused retryably
        fwd.consume(read(later.SerializeToString()).spans, Received.of(later))


def test_more_spans_than_the_export_queue_holds_is_rejected_permanently_naming_the_limit():
    fwd, state = _pipeline(queue_spans=10)
    req = _request(1, 10)
    with pytest.raises(InputError, match="export.queue_spans"):
        fwd.consume(read(req.SerializeToString()).spans, Received.of(req))
    fwd.consume(read(_request(1, 5).SerializeToString()).spans, Received.of(_request(1, 5)))
    with pytest.raises(CapacityError, match="export queue full"):
        later = _request(1, 5, first=10)
        fwd.consume(read(later.SerializeToString()).spans, Received.of(later))


def test_more_bytes_than_max_bytes_in_one_request_is_rejected_permanently():
    fwd, _ = _pipeline(max_bytes=500)
    req = _request(1, 5)
    with pytest.raises(InputError, match="max_bytes"):
        fwd.consume(read(req.SerializeToString()).spans, Received.of(req))
