"""Span export without decoding spans: a whole request forwarded as upb serializes it, and a
root's verdict appended to its encoding, give what the span-by-span decoding path gives."""
from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from faultgate_stream.assemble.assembler import AddResult
from faultgate_stream.export.spans import annotate
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.spans.forward import Forwarder
from faultgate_stream.export.spans.sink import SpanSink
from faultgate_stream.export.spans.state import ExportState
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.verdict import CheckResult, Completion, RunVerdict, Severity
from faultgate_stream.read.otlp_proto import Received, decode, read
from faultgate_stream.verdict.redact import get_redactor

TID = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _request(runs: int = 3, bad_span: bool = False) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add(schema_url="https://opentelemetry.io/schemas/1.30.0")
    rs.resource.attributes.append(_kv("service.name", "shop"))
    ss = rs.scope_spans.add(schema_url="https://example.com/scope")
    ss.scope.name = "agent-sdk"
    for r in range(runs):
        tid = TID[:15] + bytes([r])
        root = (100 + r).to_bytes(8, "big")
        for c in range(3):
            child = ss.spans.add(trace_id=tid, span_id=(1000 + 10 * r + c).to_bytes(8, "big"), parent_span_id=root,
                                 name="execute_tool lookup", start_time_unix_nano=10 + c, end_time_unix_nano=20 + c)
            child.attributes.extend([_kv("gen_ai.operation.name", "execute_tool"), _kv("gen_ai.tool.name", "lookup"),
                                     _kv("gen_ai.tool.call.arguments", '{"q": 1}'),
                                     _kv("gen_ai.tool.call.result", "ok")])
        sp = ss.spans.add(trace_id=tid, span_id=root, name="invoke_agent shop", start_time_unix_nano=5,
                          end_time_unix_nano=99)
        sp.attributes.extend([_kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", "shop")])
        sp.events.add(time_unix_nano=7, name="agent.started").attributes.append(_kv("k", "v"))
    if bad_span:
        ss.spans.add(trace_id=TID, span_id=b"\x01\x02", name="short span id")
    return req


class _Taken:
    """The assembler's place: takes every span, none late."""

    def consume(self, spans, request=None) -> AddResult:
        result = AddResult()
        result.accepted = len(spans)
        return result


def _state(**config) -> ExportState:
    return ExportState.build(SpansExportConfig(endpoint="127.0.0.1:1", **config), Telemetry(),
                             get_redactor("builtin"))


def _exported(state: ExportState) -> dict[str, Span]:
    out = {}
    while True:
        items = state.queue.take(10_000, 1 << 30, timeout=0)
        if not items:
            return out
        req = ExportTraceServiceRequest.FromString(b"".join(i.payload for i in items))
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                for s in ss.spans:
                    out[s.span_id.hex()] = (rs.resource, rs.schema_url, ss.scope, ss.schema_url, s)


def _verdict(root_span_id: str, trace_id: str) -> RunVerdict:
    results = (CheckResult("unrecovered_tool_error", True, 1.0, "step 2: lookup failed: token sk-abcdefghijklmnop1234",
                           Severity.HARD),
               CheckResult("loop", False, 1.0, "no loop", Severity.SOFT),
               CheckResult("wrong_answer", False, 0.0, "undecided: no golden answer", undecided=True))
    return RunVerdict(key=RunKey(trace_id, root_span_id), scenario="s-1", agent="shop", agent_version="",
                      completion=Completion.GRACE, results=results, steps=3, spans=4, last_end_ns=50,
                      decided_ns=60, root_span_id=root_span_id, rule_digests=("d1", "d2", "d3"))


def _forward_both(request_of) -> tuple[dict, dict, ExportState, ExportState]:
    whole, each = _state(), _state()
    for state, forward in ((whole, None), (each, "each")):
        received, decoded = decode(request_of().SerializeToString())
        f = Forwarder(_Taken(), state)
        if forward is None:
            f.consume(decoded.spans, received)
        else:
            state.queue.reserve(len(decoded.spans))
            f._forward_each(received, decoded.spans, AddResult())
    return _exported(whole), _exported(each), whole, each


def test_a_whole_request_forwards_the_same_spans_and_holds_the_same_roots_as_span_by_span():
    whole, each, ws, es = _forward_both(_request)
    assert len(whole) == 9 and whole == each
    assert len(ws.held) == len(es.held) == 3
    assert ws.held.release_all() == es.held.release_all()


def test_a_request_over_the_downstreams_limits_goes_out_in_pieces_each_within_them():
    state = _state(max_batch_spans=2)
    req = _request(runs=3)
    Forwarder(_Taken(), state).consume(read(req.SerializeToString()).spans, Received.of(req))
    items = state.queue.take(10_000, 1 << 30, timeout=0)
    assert len(items) == 5 and all(i.spans <= 2 for i in items)
    assert sum(i.spans for i in items) == 9  # the three roots are held
    sent = [ExportTraceServiceRequest.FromString(i.payload) for i in items]
    assert all(rs.resource.attributes[0].value.string_value == "shop" and ss.scope.name == "agent-sdk"
               for r in sent for rs in r.resource_spans for ss in rs.scope_spans)


def test_a_request_with_a_rejected_span_is_forwarded_without_it():
    whole, each, ws, _ = _forward_both(lambda: _request(bad_span=True))
    assert whole == each and len(whole) == 9
    assert "0102" not in {sid[:4] for sid in whole}
    assert len(ws.held) == 3


def test_a_malformed_copy_of_a_valid_span_is_not_forwarded_with_it():
    """Issue 42: the same trace and span id twice, the second copy with a 7-byte parent id:
    one rejected, one accepted, and only the accepted one goes downstream; the queue counts
    the one span it holds and comes back to zero, never below."""
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    spans.add(trace_id=TID, span_id=b"\x05" * 8, parent_span_id=b"\x06" * 8, name="good")
    spans.add(trace_id=TID, span_id=b"\x05" * 8, parent_span_id=b"\x06" * 7, name="bad copy")
    state = _state()
    received, decoded = decode(req.SerializeToString())
    assert (len(decoded.spans), decoded.rejected) == (1, 1)
    Forwarder(_Taken(), state).consume(decoded.spans, received)
    assert state.queue.in_flight == 1
    items = state.queue.take(10_000, 1 << 30, timeout=0)
    sent = ExportTraceServiceRequest.FromString(b"".join(i.payload for i in items))
    assert [s.name for rs in sent.resource_spans for ss in rs.scope_spans for s in ss.spans] == ["good"]
    state.queue.done(sum(i.spans for i in items), items)
    assert state.queue.in_flight == 0


def test_a_root_annotated_as_bytes_decodes_as_the_decoding_path_annotates_it():
    state = _state()
    Forwarder(_Taken(), state).consume(read((req := _request(1)).SerializeToString()).spans, Received.of(req))
    _exported(state)  # the children
    root_id = (100).to_bytes(8, "big").hex()
    trace_id = (TID[:15] + b"\x00").hex()
    v = _verdict(root_id, trace_id)
    held = dict(state.held.release_all())
    assert annotate.VerdictBytes.applies_to(held[(trace_id, root_id)].span)
    SpanSink(state).export_held({root_id: held[(trace_id, root_id)]}, v)
    fast = _exported(state)[root_id]

    expected = Span.FromString(held[(trace_id, root_id)].span)
    annotate.write_verdict(expected, v, state.redact)
    assert fast[4] == expected
    assert [e.name for e in fast[4].events] == ["agent.started"] + [annotate.EVENT] * 3
    assert "sk-abcdefghijklmnop1234" not in str(fast[4])  # masked, as on the decoding path
    assert fast[:4] == (_request(1).resource_spans[0].resource, "https://opentelemetry.io/schemas/1.30.0",
                        _request(1).resource_spans[0].scope_spans[0].scope, "https://example.com/scope")


def test_a_root_that_already_carries_a_verdict_has_it_replaced_not_doubled():
    state = _state()
    req = _request(1)
    root = req.resource_spans[0].scope_spans[0].spans[-1]
    root.attributes.append(_kv("faultgate.verdict", "clean"))
    Forwarder(_Taken(), state).consume(read(req.SerializeToString()).spans, Received.of(req))
    _exported(state)
    root_id, trace_id = root.span_id.hex(), root.trace_id.hex()
    held = state.held.release_all()
    assert not annotate.VerdictBytes.applies_to(held[(trace_id, root_id)].span)
    SpanSink(state).export_held({root_id: held[(trace_id, root_id)]}, _verdict(root_id, trace_id))
    out = _exported(state)[root_id][4]
    assert [kv.value.string_value for kv in out.attributes if kv.key == "faultgate.verdict"] == ["failed"]
