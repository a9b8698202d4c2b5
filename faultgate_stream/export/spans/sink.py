"""Verdicts onto the spans they belong to: the held root, annotated, goes to the queue.

A ``VerdictConsumer``. For each verdict the run's held spans (its root and any nested
agent spans, and spans above it that left with it) are released; the root carries the
verdict (``annotate``); evaluation log records follow when a logs endpoint is set.
"""
from __future__ import annotations


from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from faultgate_stream._native import span_entry
from faultgate_stream.export.spans import annotate
from faultgate_stream.export.spans.held import HeldSpan
from faultgate_stream.export.spans.queue import Item
from faultgate_stream.export.spans.state import ExportState
from faultgate_stream.export.spans.split import packed
from faultgate_stream.model.verdict import EarlyFinding, RunVerdict

_new_tuple = tuple.__new__


class SpanSink:
    releases_spans = True  # hears of traces that are not runs too (``RunVerdict.setup_only``)

    def __init__(self, state: ExportState) -> None:
        self._s = state
        self._verdict_bytes = annotate.VerdictBytes(state.redact, state.evaluation_keys)

    @property
    def annex_evictions(self) -> int:
        """Pieces the annex table forgot (faultgate_exporter_annex_cache_evictions), read at scrape time."""
        return self._verdict_bytes.evicted

    def early(self, finding: EarlyFinding) -> None:
        """Early findings reach the spans with the run's verdict."""

    def verdict(self, v: RunVerdict) -> None:
        released = self._s.held.release(v.key.trace_id, v.released_span_ids)
        root = released.get(v.root_span_id)
        self._s.cache.put(v, root.resource if root is not None else None)
        if v.setup_only:  # not a run: its spans leave as they came, with nothing written on them
            self.export_held(released, None)
            return
        self.export_held(released, v)
        if self._s.config.logs_endpoint and v.root_span_id:
            self._logs(v, root)

    def export_held(self, held: dict[str, HeldSpan], v: RunVerdict | None) -> None:
        """Queue released spans (their room is already reserved); the root gets ``v``.
        Spans stay bytes: a root that carries none of our attributes gets the verdict
        appended to its encoding (``annotate.VerdictBytes``); only stripping content, or
        replacing attributes of ours already on it, decodes one. Each span is framed as a
        ``resource_spans`` entry of its own (``span_entry``, native/py/src/export/frame.rs):
        parsing it into a message only to wrap it and serialize it again cost more per
        root than every check of its run."""
        if not held:
            return
        cfg = self._s.config
        strip = cfg.strip_content
        root_id = v.root_span_id if v is not None else None
        entries = []
        for sid, h in held.items():
            is_root = sid == root_id
            body, annex = h.span, b""
            if strip or (is_root and not self._verdict_bytes.applies_to(body)):
                span = Span.FromString(body)
                if strip:
                    annotate.strip_content(span)
                if is_root:
                    annotate.write_verdict(span, v, self._s.redact, self._s.evaluation_keys)
                body = span.SerializeToString()
            elif is_root:
                annex = self._verdict_bytes(v, h.end_ns)
            entries.append(span_entry(h.resource, h.resource_schema, h.scope, h.scope_schema, body, annex))
        if len(entries) == 1:  # a run's root alone, as most runs release
            # every field, as the tuple it is: Item's own __new__ is a Python frame a run
            self._s.queue.put(_new_tuple(Item, ("traces", entries[0], 1, 0)))
            return
        for payload, n in packed(entries, cfg.max_batch_spans, cfg.max_batch_bytes):
            self._s.queue.put(Item("traces", payload, n))

    def _logs(self, v: RunVerdict, root: HeldSpan | None) -> None:
        records = annotate.log_records(v, self._s.redact, bytes.fromhex(v.key.trace_id), bytes.fromhex(v.root_span_id),
                                       self._s.evaluation_keys)
        request = ExportLogsServiceRequest()
        rl = request.resource_logs.add()
        # an amendment comes after its root left: the resource it had was kept with the verdict
        resource = root.resource if root is not None else self._s.cache.resource(v.key)
        if resource:
            rl.resource.CopyFrom(Resource.FromString(resource))
        rl.scope_logs.add(scope=annotate.evaluator_scope()).log_records.extend(records)
        if not self._s.queue.put_records(Item("logs", request.SerializeToString(), 0, len(records))):
            self._s.telemetry["faultgate_exporter_failed_log_records"].labels("queue_full").inc(len(records))
