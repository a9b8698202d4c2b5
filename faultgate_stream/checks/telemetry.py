"""What the checks stage reports about itself: the windowed-budget store, read at scrape time."""
from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from faultgate_stream.checks.window_store import WindowStore
from faultgate_stream.model.telemetry import describe


class WindowStoreMetrics(Collector):
    """The store's size, bound and counters (``faultgate_window_*``)."""

    def __init__(self, store: WindowStore) -> None:
        self._store = store

    def collect(self) -> Iterator[Metric]:
        s = self._store
        for name, value in (("faultgate_window_keys", len(s)), ("faultgate_window_events", s.events),
                            ("faultgate_window_max_keys", s.max_keys)):
            g = GaugeMetricFamily(name, describe(name))
            g.add_metric([], value)
            yield g
        for name, value in (("faultgate_window_evicted_keys", s.evicted_keys),
                            ("faultgate_window_evicted_events", s.evicted_events),
                            ("faultgate_window_expired_events", s.expired_events)):
            c = CounterMetricFamily(name, describe(name))
            c.add_metric([], value)
            yield c
