"""Span export's counts, read from the send queue's ledger at scrape time.

Sent, failed and filtered spans and the spans in flight are one snapshot of one ledger
(``SendQueue.ledger``), taken under its lock: a scrape sees every span exported, failed,
filtered or in flight, never in two places at once or in none (issue 42), so the export
side of DESIGN.md's equation holds at every scrape, not only once traffic stops.
"""
from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream.export.spans.queue import SendQueue
from faultgate_stream.model.telemetry import EXPORT_FAILED_REASONS, describe


class LedgerMetrics(Collector):
    def __init__(self, queue: SendQueue) -> None:
        self._queue = queue

    def collect(self):
        ledger = self._queue.ledger()
        sent = CounterMetricFamily("faultgate_exporter_sent_spans", describe("faultgate_exporter_sent_spans"))
        sent.add_metric([], ledger.sent)
        failed = CounterMetricFamily("faultgate_exporter_failed_spans", describe("faultgate_exporter_failed_spans"),
                                     labels=["reason"])
        for reason in dict.fromkeys((*EXPORT_FAILED_REASONS, *ledger.failed)):
            failed.add_metric([reason], ledger.failed.get(reason, 0))
        filtered = CounterMetricFamily("faultgate_exporter_filtered_spans",
                                       describe("faultgate_exporter_filtered_spans"))
        filtered.add_metric([], ledger.filtered)
        queued = GaugeMetricFamily("faultgate_exporter_queue_spans", describe("faultgate_exporter_queue_spans"))
        queued.add_metric([], ledger.in_flight)
        capacity = GaugeMetricFamily("faultgate_exporter_queue_capacity_spans",
                                     describe("faultgate_exporter_queue_capacity_spans"))
        capacity.add_metric([], self._queue.capacity)
        yield from (sent, failed, filtered, queued, capacity)
