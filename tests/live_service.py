"""A real service on ephemeral loopback ports, with a sink that collects its verdicts."""
from __future__ import annotations

import dataclasses
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.config import ServiceConfig
from faultgate_stream.export.log.config import LogConfig
from faultgate_stream.export.metrics.config import MetricsConfig
from faultgate_stream.model.session import SessionVerdict
from faultgate_stream.model.verdict import EarlyFinding, RunVerdict
from faultgate_stream.receive.config import ReceiveConfig
from faultgate_stream.service import Service

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


class Collected:
    """A verdict sink that tests can wait on."""

    def __init__(self) -> None:
        self.verdicts: list[RunVerdict] = []
        self.findings: list[EarlyFinding] = []
        self.sessions: list[SessionVerdict] = []
        self._cv = threading.Condition()

    def early(self, f: EarlyFinding) -> None:
        with self._cv:
            self.findings.append(f)
            self._cv.notify_all()

    def verdict(self, v: RunVerdict) -> None:
        with self._cv:
            self.verdicts.append(v)
            self._cv.notify_all()

    def session(self, s: SessionVerdict) -> None:
        with self._cv:
            self.sessions.append(s)
            self._cv.notify_all()

    def wait_for_sessions(self, n: int, timeout: float = 30.0) -> list[SessionVerdict]:
        return self._wait(self.sessions, n, timeout, "session verdicts")

    def wait_for(self, n: int, timeout: float = 30.0) -> list[RunVerdict]:
        return self._wait(self.verdicts, n, timeout, "verdicts")

    def _wait(self, items: list, n: int, timeout: float, what: str) -> list:
        deadline = time.monotonic() + timeout
        with self._cv:
            while len(items) < n:
                left = deadline - time.monotonic()
                assert left > 0, f"only {len(items)} of {n} {what} after {timeout}s"
                self._cv.wait(left)
            return list(items)


@dataclasses.dataclass
class Live:
    service: Service
    sink: Collected

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.service.ports['grpc']}"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.service.ports['http']}"

    def metrics(self) -> str:
        req = urllib.request.Request(f"http://127.0.0.1:{self.service.ports['metrics']}/metrics",
                                     headers={"Accept": OPENMETRICS})
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.read().decode()

    def sample(self, name: str, **labels: str) -> float:
        """The value of one series from the OpenMetrics exposition (0 when absent)."""
        return Scrape(self.metrics()).sample(name, **labels)

    def scrape(self) -> Scrape:
        """One exposition, to read several series as they were at one scrape."""
        return Scrape(self.metrics())


@dataclasses.dataclass(frozen=True)
class Scrape:
    text: str

    def sample(self, name: str, **labels: str) -> float:
        """The value of one series (summed over the labels not given; 0 when absent)."""
        total = 0.0
        for line in self.text.splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            head = line.split(" # ")[0]
            series, value = head.rsplit(" ", 1)
            if all(f'{k}="{v}"' in series for k, v in labels.items()):
                total += float(value)
        return total


def make_config(**assemble: object) -> ServiceConfig:
    return ServiceConfig(
        receive=ReceiveConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0"),
        assemble=AssembleConfig(**{"root_grace": 0.3, **assemble}),  # type: ignore[arg-type]
        metrics=MetricsConfig(endpoint="127.0.0.1:0"),
        log=LogConfig(verdicts=False),
        tick=0.05,
    )


@pytest.fixture
def live_service() -> Iterator:
    started: list[Service] = []

    def start(config: ServiceConfig | None = None, **assemble: object) -> Live:
        sink = Collected()
        svc = Service(config or make_config(**assemble), extra_sinks=[sink])
        svc.start()
        started.append(svc)
        return Live(svc, sink)

    yield start
    for s in started:
        s.shutdown(grace=0)
