"""What an operator expects of any process on a scrape: which build runs, and its own
resource use.

``faultgate_build_info`` (always 1, the version and Python as labels, to join on) and
prometheus_client's process collector (CPU seconds, resident memory, open file
descriptors, start time; Linux only, it reads /proc) and platform collector
(``python_info``), on the service's own registry rather than the library's global one.
"""
from __future__ import annotations

import platform

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream import __version__
from faultgate_stream.model.telemetry import CATALOG

BUILD_INFO = "faultgate_build_info"


class BuildInfo(Collector):
    def collect(self):
        g = GaugeMetricFamily(BUILD_INFO, next(s.help for s in CATALOG if s.name == BUILD_INFO),
                              labels=("version", "python"))
        g.add_metric([__version__, platform.python_version()], 1)
        yield g


def register(registry: CollectorRegistry) -> None:
    registry.register(BuildInfo())
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
