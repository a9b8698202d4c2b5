"""Workers that drain the send queue to the downstream, retrying what may be retried.

Every span taken from the queue ends in exactly one counter: sent, or failed with a
reason (the downstream refused it for good, its partial success rejected it, retries ran
out, or shutdown's grace ended first). The queue's room is given back either way.
"""
from __future__ import annotations

import threading

import structlog

from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.spans.queue import Item, SendQueue
from faultgate_stream.export.spans.sender import ExportError, retrying
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.threads import Threads

log = structlog.get_logger("faultgate_stream.export.spans")


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
                self._failed(items[0].kind, sum(i.spans for i in items), sum(i.records for i in items), "shutdown")
                self._queue.done(sum(i.spans for i in items), items)
                continue
            self._send(items)

    def _send(self, items: list[Item]) -> None:
        kind = items[0].kind
        spans = sum(i.spans for i in items)
        records = sum(i.records for i in items)
        payload = b"".join(i.payload for i in items)  # concatenated requests merge their repeated fields
        try:
            answer = retrying(self._config, self._abort)(self._senders[kind].send, kind, payload)
        except ExportError as e:
            reason = "shutdown" if self._abort.is_set() else ("retries_exhausted" if e.retryable else e.reason)
            log.error("export_failed", kind=kind, spans=spans, records=records, reason=reason, error=str(e))
            self._failed(kind, spans, records, reason)
        except Exception as e:  # a bug or transport surprise: counted as failed, never silently lost
            log.exception("export_failed", kind=kind, spans=spans, records=records)
            self._failed(kind, spans, records, "internal_error")  # the log line names the exception
        else:
            if answer.rejected:
                log.warning("downstream_partial_success", kind=kind, rejected=answer.rejected, message=answer.message)
                self._failed(kind, min(answer.rejected, spans), min(answer.rejected, records), "downstream_rejected")
            if kind == "traces":
                self._t["faultgate_exporter_sent_spans"].inc(spans - min(answer.rejected, spans))
            else:
                self._t["faultgate_exporter_sent_log_records"].inc(records - min(answer.rejected, records))
        finally:
            self._queue.done(spans, items)

    def _failed(self, kind: str, spans: int, records: int, reason: str) -> None:
        if kind == "traces":
            self._t["faultgate_exporter_failed_spans"].labels(reason).inc(spans)
        else:
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
