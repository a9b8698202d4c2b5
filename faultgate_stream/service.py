"""The live service: the only module that knows every stage, and wires them.

Downstream first, upstream last (the collector's ``graph.go``): sinks, then evaluation,
then the assembler and its ticker, then the receivers. Shutdown runs the other way: stop
accepting, complete every run in flight as ``shutdown``, then stop the rest.
"""
from __future__ import annotations

import logging
import sys
import threading
from dataclasses import asdict
from typing import Any

import structlog

from faultgate_stream import __version__
from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.live import LiveAssembler
from faultgate_stream.checks.expectations import Golden, Outcomes
from faultgate_stream.checks.registry import select
from faultgate_stream.config import ServiceConfig
from faultgate_stream.export.log.sink import VerdictLog
from faultgate_stream.export.metrics import endpoint as metrics_endpoint
from faultgate_stream.export.metrics.sink import MetricsSink
from faultgate_stream.model.clock import Clock, WallClock
from faultgate_stream.model.consumers import VerdictConsumer, VerdictFanout
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.verdict import Completion
from faultgate_stream.receive import http_server
from faultgate_stream.receive.grpc_server import GrpcReceiver
from faultgate_stream.receive.http_host import HttpHost
from faultgate_stream.verdict.evaluate import Evaluator
from faultgate_stream.verdict.redact import get_redactor


def configure_logging(level: str) -> None:
    """structlog is configured here and nowhere else: JSON lines on stdout."""
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True),
                    structlog.processors.format_exc_info, structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=False,
    )


class Service:
    def __init__(self, config: ServiceConfig, *, clock: Clock | None = None, telemetry: Telemetry | None = None,
                 extra_sinks: list[VerdictConsumer] | None = None) -> None:
        self.config = config
        self.telemetry = telemetry or Telemetry()
        self.log = structlog.get_logger("faultgate_stream")
        cfg = config.checks
        self.checks = select(list(cfg.enabled) if cfg.enabled else None,
                             golden=Golden.load(cfg.golden) if cfg.golden else None,
                             outcomes=Outcomes.load(cfg.outcomes) if cfg.outcomes else None)
        sinks: list[VerdictConsumer] = [MetricsSink(self.telemetry, config.metrics.max_agents)]
        if config.log.verdicts:
            sinks.append(VerdictLog(structlog.get_logger("faultgate_stream.verdict"), get_redactor(config.log.redact)))
        sinks += extra_sinks or []
        clock = clock or WallClock()
        evaluator = Evaluator(self.checks, VerdictFanout(sinks))
        self.assembler = LiveAssembler(Assembler(evaluator, clock, config.assemble), clock, self.telemetry,
                                       config.tick)
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self.http = HttpHost()
        self.http.add("metrics", metrics_endpoint.app(self.telemetry.registry, self._ready.is_set),
                      config.metrics.endpoint)
        rc = config.receive
        if rc.http_endpoint:
            self.http.add("http", http_server.app(self.assembler, self.telemetry, rc.max_request_bytes),
                          rc.http_endpoint)
        self.grpc = GrpcReceiver(rc.grpc_endpoint, self.assembler, self.telemetry, max_request_bytes=rc.max_request_bytes,
                                 workers=rc.grpc_workers) if rc.grpc_endpoint else None

    @property
    def ports(self) -> dict[str, int]:
        out = dict(self.http.ports)
        if self.grpc is not None:
            out["grpc"] = self.grpc.port
        return out

    def start(self) -> None:
        self.assembler.start()
        self.http.start()
        if self.grpc is not None:
            self.grpc.start()
        self._ready.set()
        self.log.info("started", version=__version__, endpoints=self.ports,
                      limits=asdict(self.config.assemble), max_request_bytes=self.config.receive.max_request_bytes,
                      checks=[c.name for c in self.checks])

    def shutdown(self, grace: float = 5.0) -> dict[str, Any]:
        """Stop accepting, complete every run in flight as ``shutdown``, stop. Safe twice."""
        if self._stopped.is_set():
            return {}
        self._stopped.set()
        self._ready.clear()
        if self.grpc is not None:
            self.grpc.stop(grace)
        runs = self.assembler.shutdown(Completion.SHUTDOWN)
        self.http.stop()
        self.log.info("stopped", runs_completed_at_shutdown=runs)
        return {"runs_completed_at_shutdown": runs}
