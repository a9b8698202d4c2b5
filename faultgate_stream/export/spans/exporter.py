"""Workers that drain the send queue to the downstream, retrying what may be retried.

Every span taken from the queue ends in exactly one count: sent, or failed with a reason
(the downstream refused it for good, its partial success rejected it, retries ran out,
shutdown's grace ended first, or it is larger than any request the downstream takes). The
queue's room is given back, and the count made, in one step (``SendQueue.done``), so a
scrape never sees a span twice or not at all.

No request leaves larger than ``max_request_bytes`` (the downstream's receive limit,
measured on the uncompressed message with its framing): a batch over it is cut into pieces
under it first. A downstream that still refuses a request as too large (RESOURCE_EXHAUSTED
without RetryInfo, HTTP 413: its limit is lower than ours) is answered by splitting the
request in two and sending each half, down to single spans (issue 42: 193 acknowledged spans
were dropped whole instead). Only a single span too large for the downstream is dropped,
counted and logged with its trace.
"""
from __future__ import annotations

import threading
from operator import attrgetter

import structlog
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.spans.queue import Item, SendQueue
from faultgate_stream.export.spans.sender import ExportError, retrying
from faultgate_stream.export.spans.split import chunks
from faultgate_stream.export.spans.telemetry import LedgerMetrics
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.threads import Threads

_SPANS, _PAYLOAD = attrgetter("spans"), attrgetter("payload")

log = structlog.get_logger("faultgate_stream.export.spans")
# Requests refused as too large are halved down to this size, no further: no collector
# takes less than 1 MiB (max_recv_msg_size_mib is whole MiB), and a downstream that refuses
# with RESOURCE_EXHAUSTED for another reason (a quota) would otherwise be sent one call per
# span (2n - 1 calls for n spans) before each was counted as failed.
MIN_SPLIT_BYTES = 64 * 1024


class _Tally:
    """What became of the spans of one batch, by the time it is done with."""

    __slots__ = ("sent", "failed")

    def __init__(self) -> None:
        self.sent = 0
        self.failed: dict[str, int] = {}

    def fail(self, reason: str, spans: int) -> None:
        if spans:
            self.failed[reason] = self.failed.get(reason, 0) + spans

    @property
    def counted(self) -> int:
        return self.sent + sum(self.failed.values())


class SpanExporter:
    def __init__(self, queue: SendQueue, senders: dict[str, object], config: SpansExportConfig,
                 telemetry: Telemetry, threads: Threads | None = None) -> None:
        self._queue = queue
        self._senders = senders          # "traces" / "logs" -> a sender with send(kind, payload)
        self._config = config
        self._t = telemetry
        self._abort = threading.Event()  # set when shutdown's grace is over: stop retrying
        self._threads: list[threading.Thread] = []
        self._supervisor = threads or Threads(telemetry)
        telemetry.registry.register(LedgerMetrics(queue))

    def start(self) -> None:
        for i in range(self._config.workers):
            self._threads.append(self._supervisor.start(f"span-export-{i}", self._work))

    def _work(self) -> None:
        cfg = self._config
        while True:
            items = self._queue.take(cfg.max_batch_spans, cfg.max_batch_bytes, timeout=0.2, linger=cfg.linger)
            if not items:
                if self._abort.is_set() or self._queue.closed:
                    return
                continue
            if self._abort.is_set():
                # shutdown's grace is over: count what is left instead of sending it late
                spans = sum(i.spans for i in items)
                self._failed_records(items[0].kind, sum(i.records for i in items), "shutdown")
                self._queue.done(spans, items, failed={"shutdown": spans} if spans else None)
                continue
            self._send(items)

    def _send(self, items: list[Item]) -> None:
        kind = items[0].kind
        # C-level (``map``): most items are one run's root, a generator turn each
        spans = sum(map(_SPANS, items))
        payload = b"".join(map(_PAYLOAD, items))  # concatenated requests merge their repeated fields
        tally = _Tally()
        try:
            if kind == "traces":
                self._deliver(payload, spans, tally)
            else:
                self._deliver_logs(payload, sum(i.records for i in items))
        except Exception as e:  # a bug or transport surprise: counted as failed, never silently lost
            self._t["faultgate_internal_errors"].labels("export").inc()
            log.exception("export_failed", kind=kind, spans=spans - tally.counted, error_type=type(e).__name__)
            tally.fail("internal_error", spans - tally.counted)  # the log line names the exception
        finally:
            self._queue.done(spans, items, sent=tally.sent, failed=tally.failed)

    def _deliver(self, payload: bytes, spans: int, tally: _Tally) -> None:
        """Sends ``payload`` (a traces request of ``spans`` spans) in requests the downstream
        takes, counting each span in ``tally``."""
        limit = self._config.max_request_bytes
        if len(payload) <= limit:
            self._deliver_one(payload, spans, tally)
            return
        for piece, n in chunks(ExportTraceServiceRequest.FromString(payload), spans, limit):
            if len(piece) > limit:  # one span, larger with its resource and scope than any request
                self._too_large(piece, n, tally, f"larger than export.max_request_bytes ({limit})",
                                reason="too_large")
            else:
                self._deliver_one(piece, n, tally)

    def _deliver_one(self, payload: bytes, spans: int, tally: _Tally) -> None:
        try:
            answer = retrying(self._config, self._abort)(self._senders["traces"].send, "traces", payload)
        except ExportError as e:
            if e.too_large and spans > 1 and len(payload) > MIN_SPLIT_BYTES and not self._abort.is_set():
                # the downstream's limit is under ours: halves, down to single spans
                request = ExportTraceServiceRequest.FromString(payload)
                for half, n in chunks(request, (spans + 1) // 2, 1 << 62):
                    self._deliver_one(half, n, tally)
                return
            if e.too_large and spans == 1:
                self._too_large(payload, spans, tally, str(e), reason=e.reason)
                return
            reason = "shutdown" if self._abort.is_set() else ("retries_exhausted" if e.retryable else e.reason)
            log.error("export_failed", kind="traces", spans=spans, reason=reason, error=str(e))
            tally.fail(reason, spans)
            return
        rejected = min(answer.rejected, spans)
        if rejected:
            log.warning("downstream_partial_success", kind="traces", rejected=answer.rejected, message=answer.message)
            tally.fail("downstream_rejected", rejected)
        tally.sent += spans - rejected

    def _too_large(self, payload: bytes, spans: int, tally: _Tally, why: str, reason: str) -> None:
        """A request of one span the downstream cannot take: dropped, counted, and logged
        with the trace and span it was, so that the loss can be found."""
        request = ExportTraceServiceRequest.FromString(payload)
        ids = [(s.trace_id.hex(), s.span_id.hex()) for rs in request.resource_spans for ss in rs.scope_spans
               for s in ss.spans]
        log.error("export_span_too_large", trace_id=ids[0][0] if ids else "", span_id=ids[0][1] if ids else "",
                  spans=spans, bytes=len(payload), error=why)
        tally.fail(reason, spans)

    def _deliver_logs(self, payload: bytes, records: int) -> None:
        try:
            answer = retrying(self._config, self._abort)(self._senders["logs"].send, "logs", payload)
        except ExportError as e:
            reason = "shutdown" if self._abort.is_set() else ("retries_exhausted" if e.retryable else e.reason)
            log.error("export_failed", kind="logs", records=records, reason=reason, error=str(e))
            self._failed_records("logs", records, reason)
            return
        rejected = min(answer.rejected, records)
        if rejected:
            log.warning("downstream_partial_success", kind="logs", rejected=answer.rejected, message=answer.message)
            self._failed_records("logs", rejected, "downstream_rejected")
        self._t["faultgate_exporter_sent_log_records"].inc(records - rejected)

    def _failed_records(self, kind: str, records: int, reason: str) -> None:
        if kind == "logs" and records:
            self._t["faultgate_exporter_failed_log_records"].labels(reason).inc(records)

    def shutdown(self, grace: float) -> dict[str, int]:
        """Drain within ``grace`` seconds, then stop retrying; what was left is counted and
        logged. Safe without ``start`` and twice."""
        drained = self._queue.wait_empty(grace)
        self._abort.set()
        self._queue.close()
        for th in self._threads:
            th.join(timeout=max(1.0, self._config.timeout * 2))
        self._threads = []
        left = {"spans": self._queue.in_flight, "queued": self._queue.queued}
        if not drained:
            log.error("export_incomplete_at_shutdown", **left)
        return left

