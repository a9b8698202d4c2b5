"""Counters and histograms recorded once per verdict, kept as plain values and exposed at
scrape time by a ``Collector``.

A ``prometheus_client`` child costs per verdict what its generality costs: ``labels()``
(the values turned to strings, a lock, a lookup), a lock per value and per exemplar, and
each exemplar validated and built as it is set. The metrics sink updated five to eight
series a run that way, ~46 us a run, more than building the verdict (bench/README.md).
Here a series is a list in a dict keyed by its label values; the caller validates an
exemplar once per verdict and hands over its labels, and ``collect`` builds what
``prometheus_client`` would have exposed: the same families, samples, labels, values,
``_created`` series and exemplars, in the same order (``tests/model/test_series.py`` holds
the two to equal exposition). Writers take the series' lock; a scrape copies under it.
"""
from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence

from prometheus_client import metrics as _prometheus_metrics
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Exemplar, Sample
from prometheus_client.utils import INF, floatToGoString

# prometheus_client's own rule for an exemplar: its label names and values together hold at
# most 128 characters (OpenMetrics). Its message, unformatted as it raises it.
EXEMPLAR_MAX_RUNES = 128
EXEMPLAR_TOO_LONG = "Exemplar labels have %d UTF-8 characters, exceeding the limit of 128"


def exemplar_fits(labels: dict[str, str]) -> bool:
    """Whether ``prometheus_client`` would accept these exemplar labels (whose names are
    the caller's valid constants)."""
    return sum(len(k) + len(v) for k, v in labels.items()) <= EXEMPLAR_MAX_RUNES


def _created_series() -> bool:
    # PROMETHEUS_DISABLE_CREATED_SERIES, as prometheus_client read it at import
    return getattr(_prometheus_metrics, "_use_created", True)


class _Series(Collector):
    _type = ""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str],
                 registry: CollectorRegistry | None, new: Callable[[], list]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._lock = threading.Lock()
        self._values: dict[tuple[str, ...], list] = {}
        self._new = new  # a fresh series' values, as each kind lays them out
        if registry is not None:
            registry.register(self)

    def describe(self) -> Iterable[Metric]:
        return [Metric(self.name, self.documentation, self._type)]

    def _labels(self, values: tuple[str, ...]) -> dict[str, str]:
        return dict(zip(self.labelnames, values))

    def _ensure(self, values: tuple) -> tuple[str, ...]:
        if len(values) != len(self.labelnames):
            raise ValueError("Incorrect label count")
        labels = tuple(str(v) for v in values)
        with self._lock:
            if labels not in self._values:
                self._values[labels] = self._new()
        return labels


class CounterSeries(_Series):
    """A labelled counter: label values -> [value, exemplar labels, exemplar value,
    exemplar time, created]."""

    _type = "counter"

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str],
                 registry: CollectorRegistry | None) -> None:
        super().__init__(name, documentation, labelnames, registry, self._fresh)

    def inc(self, labels: tuple[str, ...], amount: float = 1.0, exemplar: dict[str, str] | None = None,
            now: float = 0.0) -> None:
        """Add ``amount`` (>= 0) to the series of ``labels``; an ``exemplar`` (labels that
        ``exemplar_fits``, not changed afterwards) replaces the series' last one, stamped
        ``now`` (``time.time()`` when 0)."""
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        with self._lock:
            s = self._values.get(labels)
            if s is None:
                s = self._values[labels] = self._new()
            s[0] += amount
            if exemplar:
                s[1], s[2], s[3] = exemplar, amount, now or time.time()

    @staticmethod
    def _fresh() -> list:
        return [0.0, None, 0.0, 0.0, time.time()]

    def labels(self, *values: str) -> _CounterChild:
        """The series of ``values`` as a ``prometheus_client``-shaped child, which, as
        there, exists (at zero) from this call on: for code that records rarely, and for
        series created at zero up front. The sink calls ``inc`` with the tuple."""
        return _CounterChild(self, self._ensure(values))

    def collect(self) -> Iterable[Metric]:
        metric = Metric(self.name, self.documentation, self._type)
        created = _created_series()
        with self._lock:
            series = [(labels, tuple(s)) for labels, s in self._values.items()]
        for labels, (value, ex_labels, ex_value, ex_time, created_at) in series:
            labelset = self._labels(labels)
            exemplar = Exemplar(ex_labels, ex_value, ex_time) if ex_labels else None
            metric.samples.append(Sample(self.name + "_total", labelset, value, None, exemplar))
            if created:
                metric.samples.append(Sample(self.name + "_created", dict(labelset), created_at, None, None))
        return [metric]


class _CounterChild:
    __slots__ = ("_series", "_labels")

    def __init__(self, series: CounterSeries, labels: tuple[str, ...]) -> None:
        self._series, self._labels = series, labels

    def inc(self, amount: float = 1, exemplar: dict[str, str] | None = None) -> None:
        if exemplar and not exemplar_fits(exemplar):
            self._series.inc(self._labels, amount)
            raise ValueError(EXEMPLAR_TOO_LONG)
        self._series.inc(self._labels, amount, exemplar)


class HistogramSeries(_Series):
    """A labelled histogram: label values -> [sum, created, count per bucket..., then per
    bucket its exemplar (labels, value, time) or None]."""

    _type = "histogram"

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str],
                 registry: CollectorRegistry | None, buckets: Sequence[float]) -> None:
        bounds = [float(b) for b in buckets]
        if bounds != sorted(bounds):
            raise ValueError("Buckets not in sorted order")
        if bounds and bounds[-1] != INF:
            bounds.append(INF)
        if len(bounds) < 2:
            raise ValueError("Must have at least two buckets")
        self.upper_bounds = bounds
        self._le = [floatToGoString(b) for b in bounds]
        super().__init__(name, documentation, labelnames, registry, self._fresh)

    def observe(self, labels: tuple[str, ...], amount: float, exemplar: dict[str, str] | None = None,
                now: float = 0.0) -> None:
        """Count ``amount`` in its bucket (the first whose bound is >= it) of the series of
        ``labels``; an ``exemplar`` replaces that bucket's last one, as on a counter."""
        with self._lock:
            s = self._values.get(labels)
            if s is None:
                s = self._values[labels] = self._new()
            s[0] += amount
            if amount != amount:  # NaN: in no bucket, as prometheus_client counts it
                return
            i = bisect_left(self.upper_bounds, amount)
            s[2 + i] += 1.0
            if exemplar:
                s[2 + len(self.upper_bounds) + i] = (exemplar, amount, now or time.time())

    def _fresh(self) -> list:
        n = len(self.upper_bounds)
        return [0.0, time.time()] + [0.0] * n + [None] * n

    def labels(self, *values: str) -> _HistogramChild:
        """As ``CounterSeries.labels``."""
        return _HistogramChild(self, self._ensure(values))

    def collect(self) -> Iterable[Metric]:
        metric = Metric(self.name, self.documentation, self._type)
        created = _created_series()
        n = len(self.upper_bounds)
        with self._lock:
            series = [(labels, tuple(s)) for labels, s in self._values.items()]
        for labels, s in series:
            labelset = self._labels(labels)
            acc = 0.0
            for i, le in enumerate(self._le):
                acc += s[2 + i]
                ex = s[2 + n + i]
                metric.samples.append(Sample(self.name + "_bucket", {**labelset, "le": le}, acc, None,
                                             Exemplar(*ex) if ex else None))
            metric.samples.append(Sample(self.name + "_count", dict(labelset), acc, None, None))
            if self.upper_bounds[0] >= 0:
                metric.samples.append(Sample(self.name + "_sum", dict(labelset), s[0], None, None))
            if created:
                metric.samples.append(Sample(self.name + "_created", dict(labelset), s[1], None, None))
        return [metric]


class _HistogramChild:
    __slots__ = ("_series", "_labels")

    def __init__(self, series: HistogramSeries, labels: tuple[str, ...]) -> None:
        self._series, self._labels = series, labels

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        if exemplar and amount == amount and not exemplar_fits(exemplar):
            self._series.observe(self._labels, amount)
            raise ValueError(EXEMPLAR_TOO_LONG)
        self._series.observe(self._labels, amount, exemplar)
