"""The tee in front of the assembler: spans go on to evaluation and out to the downstream.

For each request: room for every valid span is reserved in the send queue first (a full
queue refuses the whole request retryably, before anything is acknowledged); then the
assembler takes the spans (and may refuse: the room is given back); then children are
queued for export at once, while root candidates (``invoke_agent`` or parentless spans)
are held for their run's verdict. A root that arrives after its run was decided is sent
at once, carrying the earlier verdict. Every span received is exported exactly once.
"""
from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream import _native
from faultgate_stream.assemble.assembler import AddResult
from faultgate_stream.export.spans import annotate
from faultgate_stream.export.spans.held import HeldSpan
from faultgate_stream.export.spans.queue import Item
from faultgate_stream.export.spans.state import ExportState
from faultgate_stream.export.spans.split import chunks
from faultgate_stream.model.consumers import SpanConsumer
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.verdict import RunVerdict
from faultgate_stream.read.otlp_proto import Received

_new_tuple = tuple.__new__


class Forwarder:
    """A ``SpanConsumer`` wrapping the next one (the live assembler)."""

    def __init__(self, next_consumer: SpanConsumer, state: ExportState) -> None:
        self._next = next_consumer
        self._s = state

    def consume(self, spans: list[SpanRecord], request: Received | None = None) -> object:
        n = len(spans)
        self._s.queue.reserve(n)
        try:
            result = self._next.consume(spans, request)
        except BaseException:
            self._s.queue.release(n)
            raise
        if request is None:  # nothing to forward (an in-process producer): the room goes back
            self._s.queue.release(n)
            return result
        self._forward(request, spans, result if isinstance(result, AddResult) else AddResult())
        return result

    def _forward(self, request: Received, spans: list[SpanRecord], result: AddResult) -> None:
        cfg = self._s.config
        # a late span that amended its run's verdict is written on, span by span (rare: only
        # a request with late spans looks)
        if (cfg.mode == "verdict_only" or cfg.strip_content or (result.late_runs and self._amending(result))
                or not self._forward_received(request.body, spans, result)):
            self._forward_each(request, spans, result)

    def _amending(self, result: AddResult) -> bool:
        return any(_amended_by(self._s.cache.get(run), sid) for sid, run in result.late_runs.items())

    def _forward_received(self, body: bytes, spans: list[SpanRecord], result: AddResult) -> bool:
        """Passthrough of a request whose every span was taken, as it was received: its root
        candidates are held and cut out of its bytes (``_native.cut``), everything else goes
        on byte for byte, with no Python work per span beyond finding the roots among the
        records. False, having changed nothing, when the records are not the request's spans
        in order (the reader rejected some), or a root came after its run's verdict (it is
        written on: the span-by-span path does that)."""
        roots = _native.root_candidates(spans)
        total, pieces = _native.spans_at(body, roots)
        if total != len(spans):
            return False
        held = []
        for i, (resource, resource_schema, scope, scope_schema, span, end_ns, trace_id, span_id) in zip(roots, pieces):
            record = spans[i]
            sid = record.span_id
            if (span_id.hex() != sid or trace_id.hex() != record.trace_id or sid in result.late_runs
                    or sid in result.decided_duplicates or sid in result.closed_runs):
                return False
            # every field, as the tuple it is: HeldSpan's own __new__ is a Python frame a root
            held.append((i, _new_tuple(HeldSpan, (resource, resource_schema, scope, scope_schema, span, end_ns))))
        taken = [i for i, h in held if self._s.held.hold(spans[i].trace_id, spans[i].span_id, h)]
        count = total - len(taken)
        if not count:
            return True
        payload = _native.cut(body, taken)
        cfg = self._s.config
        if count <= cfg.max_batch_spans and len(payload) <= cfg.max_batch_bytes:
            self._s.queue.put(Item("traces", payload, count))
        else:  # over the downstream's limits: cut into pieces that keep their resource and scope
            for piece, n in chunks(ExportTraceServiceRequest.FromString(payload), cfg.max_batch_spans,
                                   cfg.max_batch_bytes):
                self._s.queue.put(Item("traces", piece, n))
        return True

    def _forward_each(self, received: Received, spans: list[SpanRecord], result: AddResult) -> None:
        # The reader decided which spans are valid; a span it rejected is not among the
        # records, was never acknowledged, and is not forwarded. Rejected spans are known by
        # their place, not their ids: a malformed copy of a valid span has the same ids
        # (issue 42: both went downstream, and the queue counted one span it never held).
        request, rejected = received.message, received.rejected
        roots = {s.span_id for s in spans if s.is_agent or not s.parent_id}
        verdict_only = self._s.config.mode == "verdict_only"
        filtered = 0
        out = ExportTraceServiceRequest()
        for i, rs in enumerate(request.resource_spans):
            for j, ss in enumerate(rs.scope_spans):
                keep = []
                for k, span in enumerate(ss.spans):
                    if (i, j, k) in rejected:
                        continue
                    tid, sid = span.trace_id.hex(), span.span_id.hex()
                    if sid in roots:
                        # a root after its run's verdict (late, a retry of one already sent,
                        # or one whose run this very request closed at max_spans_per_trace:
                        # issue 9, defect 8) goes out at once with that verdict: no verdict
                        # would come to release it if it were held
                        late = (result.late_runs.get(sid) or result.decided_duplicates.get(sid)
                                or result.closed_runs.get(sid))
                        if late is None:
                            held = HeldSpan(rs.resource.SerializeToString(), rs.schema_url,
                                            ss.scope.SerializeToString(), ss.schema_url, span.SerializeToString(),
                                            span.end_time_unix_nano)
                            if self._s.held.hold(tid, sid, held):
                                continue
                        else:
                            v = self._s.cache.get(late)
                            if v is not None and (v.root_span_id == sid or _amended_by(v, sid)):
                                annotate.write_verdict(span, v, self._s.redact, self._s.evaluation_keys)
                    elif sid in result.late_runs and _amended_by(v := self._s.cache.get(result.late_runs[sid]), sid):
                        # a late span that amended its run's verdict carries the amendment
                        # (the root went out with the first one), even when only roots go out
                        annotate.write_verdict(span, v, self._s.redact, self._s.evaluation_keys)
                    elif verdict_only:
                        filtered += 1
                        continue
                    if self._s.config.strip_content:
                        annotate.strip_content(span)
                    keep.append(span)
                if keep:
                    target = out.resource_spans.add(resource=rs.resource, schema_url=rs.schema_url)
                    target.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url).spans.extend(keep)
        if filtered:
            self._s.queue.release(filtered, filtered=True)
        for payload, count in chunks(out, self._s.config.max_batch_spans, self._s.config.max_batch_bytes):
            self._s.queue.put(Item("traces", payload, count))


def _amended_by(v: RunVerdict | None, span_id: str) -> bool:
    """The verdict is an amendment this span caused (the evaluator published it while the
    assembler took the span, before the span is forwarded)."""
    return v is not None and v.revision > 0 and v.amended_by == span_id
