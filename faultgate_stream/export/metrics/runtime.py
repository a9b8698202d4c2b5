"""What an operator expects of any process on a scrape: which build runs, and its own
resource use.

``faultgate_build_info`` (always 1, the version and Python as labels, to join on) and
prometheus_client's process collector (CPU seconds, resident memory, open file
descriptors, start time; Linux only, it reads /proc) and platform collector
(``python_info``), on the service's own registry rather than the library's global one.

Garbage collections and their pauses, by generation, because long-lived state that the
collector walks makes a service slower with age and full collections stall every thread
(issue 12): ``gc.callbacks`` time each collection into plain counters (no lock: a callback
runs inside whatever allocation triggered it), read at scrape time.
"""
from __future__ import annotations

import gc
import platform
import time

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream import __version__
from faultgate_stream.model.telemetry import CATALOG

BUILD_INFO = "faultgate_build_info"
_GENERATIONS = ("0", "1", "2")


class _Pauses:
    """Per generation: collections and seconds, since the first service of this process."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        g = info.get("generation", 0)
        if 0 <= g < 3:
            self.count[g] += 1
            self.seconds[g] += time.perf_counter() - self._started


_PAUSES: _Pauses | None = None


def _pauses() -> _Pauses:
    global _PAUSES
    if _PAUSES is None:  # one per process, however many services (tests build many)
        _PAUSES = _Pauses()
        gc.callbacks.append(_PAUSES)
    return _PAUSES


class GcPauses(Collector):
    def __init__(self) -> None:
        self._p = _pauses()

    def collect(self):
        from prometheus_client.core import CounterMetricFamily

        for name, values in (("faultgate_gc_pause_seconds", self._p.seconds),
                             ("faultgate_gc_collections", self._p.count)):
            c = CounterMetricFamily(name, next(s.help for s in CATALOG if s.name == name), labels=("generation",))
            for g, v in zip(_GENERATIONS, values):
                c.add_metric([g], v)
            yield c


class BuildInfo(Collector):
    def collect(self):
        g = GaugeMetricFamily(BUILD_INFO, next(s.help for s in CATALOG if s.name == BUILD_INFO),
                              labels=("version", "python"))
        g.add_metric([__version__, platform.python_version()], 1)
        yield g


def register(registry: CollectorRegistry) -> None:
    registry.register(BuildInfo())
    registry.register(GcPauses())
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
