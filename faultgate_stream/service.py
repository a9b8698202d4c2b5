"""The live service: the only module that knows every stage, and wires them.

Downstream first, upstream last (the collector's ``graph.go``): sinks, then evaluation,
then the assembler and its ticker, then the receivers. Shutdown runs the other way: stop
accepting, complete every run in flight as ``shutdown``, then stop the rest.
"""
from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import structlog
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream import __version__
from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.live import LiveAssembler
from faultgate_stream.checks.plugins.isolate import PluginMetrics
from faultgate_stream.checks.telemetry import WindowStoreMetrics
from faultgate_stream.checks.window_store import WindowStore
from faultgate_stream.model.errors import InputError
from faultgate_stream.config import ServiceConfig
from faultgate_stream.durable import ServiceProgress
from faultgate_stream.export.log.sink import VerdictLog
from faultgate_stream.export.metrics import endpoint as metrics_endpoint
from faultgate_stream.export.metrics import runtime
from faultgate_stream.export.metrics.sink import MetricsSink
from faultgate_stream.export.query import api as query_api
from faultgate_stream.export.query.ring import RingMetrics, VerdictRing
from faultgate_stream.export.spans.exporter import SpanExporter
from faultgate_stream.export.spans.forward import Forwarder
from faultgate_stream.export.spans.sender import sender_for
from faultgate_stream.export.spans.sink import SpanSink
from faultgate_stream.export.spans.state import ExportState
from faultgate_stream.export.stream.sink import VerdictStream
from faultgate_stream.gate.live import LiveGate
from faultgate_stream.judge.contract import QUESTIONS, Question
from faultgate_stream.judge.openai import get_judge
from faultgate_stream.judge.route import Router
from faultgate_stream.judge.stage import JudgeStage, QueueGauge
from faultgate_stream.model.clock import Clock, WallClock
from faultgate_stream.model.consumers import SpanConsumer, VerdictConsumer, VerdictFanout
from faultgate_stream.model.telemetry import CATALOG, Telemetry, describe
from faultgate_stream.model.threads import Threads
from faultgate_stream.model.verdict import Completion
from faultgate_stream.read.projection import Projection
from faultgate_stream.receive import http_server, security
from faultgate_stream.receive.decode import Reader
from faultgate_stream.receive.grpc_server import GrpcReceiver
from faultgate_stream.receive.http_host import ConnectionLimits, HttpHost
from faultgate_stream.receive.kafka.replay import ReplayLedger
from faultgate_stream.receive.wal.stage import WriteAheadLog
from faultgate_stream.sessions.stage import SessionStage
from faultgate_stream.verdict import ruleset
from faultgate_stream.verdict.amend import DecidedRuns
from faultgate_stream.verdict.evaluate import Evaluator
from faultgate_stream.verdict.profile import Profiler
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
    """Built stage by stage, one builder each, downstream first: every builder gets the
    consumer the stage after it feeds and returns the one the stage before it feeds."""

    def __init__(self, config: ServiceConfig, *, clock: Clock | None = None, telemetry: Telemetry | None = None,
                 extra_sinks: list[VerdictConsumer] | None = None) -> None:
        self.config = config
        self.telemetry = telemetry or Telemetry(root_grace=config.assemble.root_grace)
        runtime.register(self.telemetry.registry)
        self.log = structlog.get_logger("faultgate_stream")
        self.threads = Threads(self.telemetry)  # every background thread, for readiness
        # windowed budgets' counts across runs: one store for the service's life, kept on reload
        self.windows = WindowStore(max_keys=config.checks.windows.max_keys,
                                   max_events_per_key=config.checks.windows.max_events_per_key)
        self.telemetry.registry.register(WindowStoreMetrics(self.windows))
        self.ruleset = ruleset.build(config.checks, store=self.windows,
                                     evictions=self.telemetry["faultgate_ruleset_agent_cache_evictions"])
        self.profiler = self._build_profiler()
        # the receivers read only the span attributes these checks and the run's facts need
        self.reader = Reader(Projection(self.ruleset.attributes | (self.profiler.attributes if self.profiler else
                                                                    frozenset())),
                             max_span_bytes=config.export.max_span_bytes)
        redact = get_redactor(config.log.redact)
        sinks = self._build_sinks(redact) + list(extra_sinks or [])
        self.replays = self._build_replays()
        if self.replays is not None:
            sinks.append(self.replays)
        self.wal_replays = ReplayLedger(self.telemetry["faultgate_wal_replayed_verdicts"]) \
            if config.durability.wal.enabled else None
        if self.wal_replays is not None:
            sinks.append(self.wal_replays)
        clock = clock or WallClock()
        self.sessions = self._build_sessions(sinks, clock)
        if self.sessions is not None:
            sinks.append(self.sessions)
        self.evaluator = self._build_evaluate(VerdictFanout(sinks, self._sink_failed), clock)
        self.assembler = self._build_assemble(self.evaluator, clock)
        self.ingest = self._build_forward(self.assembler)
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self.wal = self._build_wal(self.ingest)
        self._build_receive(self.wal or self.ingest)
        self.kafka = self._build_kafka(self.ingest)

    # -- export: verdict sinks, each independent ------------------------------------------

    def _build_sinks(self, redact: Callable[[str], str]) -> list[VerdictConsumer]:
        config = self.config
        sinks: list[VerdictConsumer] = [MetricsSink(self.telemetry, config.metrics.max_agents,
                                                     config.metrics.max_label_length, redact)]
        if config.log.verdicts:
            sinks.append(VerdictLog(structlog.get_logger("faultgate_stream.verdict"), redact))
        self.stream = self._build_stream(redact)
        if self.stream is not None:
            sinks.append(self.stream)
        self.query = self._build_query(redact)
        if self.query is not None:
            sinks.append(self.query)
        span_sink = self._build_span_export(redact)
        if span_sink is not None:
            sinks.append(span_sink)
        self.gate = self._build_gate()
        if self.gate is not None:
            sinks.append(self.gate.sink)
        self.judge = self._build_judge(redact)
        if self.judge is not None:
            sinks.append(self.judge)
        return sinks

    def _build_profiler(self) -> Profiler | None:
        """A run's profile (shape, session, task) is worked out only for what reads it: the
        gate's drift, the sessions stage, judge routing by drift."""
        c = self.config
        if not ((c.gate.bands and c.gate.drift.enabled) or c.sessions.enabled or "drifted" in c.judge.when):
            return None
        return Profiler(c.sessions.end_attribute, c.sessions.monotonic)

    def _build_sessions(self, sinks: list[VerdictConsumer], clock: Clock) -> SessionStage | None:
        """Fed run verdicts like a sink; its session verdicts go to every sink that takes them."""
        if not self.config.sessions.enabled:
            return None
        takers = [s for s in sinks if callable(getattr(s, "session", None))]
        return SessionStage(self.config.sessions, takers, clock, self.telemetry, self.threads, self._sink_failed)

    def _build_judge(self, redact: Callable[[str], str]) -> JudgeStage | None:
        """The live judge, when ``judge.spec`` is set: fed first verdicts like a sink, its
        answers go back through the evaluator as amendments (``start``)."""
        jc = self.config.judge
        stage = None
        if jc.spec:
            every_run = tuple(QUESTIONS[n] for n in jc.checks)

            def questions(agent: str) -> tuple[Question, ...]:
                # every run's, then those the spec of the agent's binding names (the rules in
                # force now: a reload applies to the next verdict's questions)
                named = self.ruleset.judged(agent)
                return every_run + tuple(QUESTIONS[n] for n in named if n not in jc.checks)

            gate = self.gate
            router = Router(jc.when, jc.sample, gate.drifted if gate is not None else None)
            stage = JudgeStage(jc, get_judge(jc.spec, timeout=jc.timeout), questions, self.telemetry,
                               self.threads, redact, router=router)
        self.telemetry.registry.register(QueueGauge(stage))
        return stage

    def _build_gate(self) -> LiveGate | None:
        """The rolling gate, when bands are configured: fed verdicts like the other sinks,
        read at scrape time."""
        if not self.config.gate.bands:
            return None
        return LiveGate(self.config.gate, self.telemetry)

    def _build_stream(self, redact: Callable[[str], str]) -> VerdictStream | None:
        config = self.config
        if not config.receive.grpc_endpoint:
            return None
        return VerdictStream(redact, config.stream, registry=self.telemetry.registry)

    def _build_query(self, redact: Callable[[str], str]) -> VerdictRing | None:
        """The verdict API's ring: fed verdicts like the other sinks, served on the metrics
        endpoint (``_build_receive``)."""
        self._redact = redact
        if not self.config.query.enabled:
            return None
        ring = VerdictRing(self.config.query, redact)
        self.telemetry.registry.register(RingMetrics(ring, describe))
        return ring

    def _build_span_export(self, redact: Callable[[str], str]) -> SpanSink | None:
        """Span export's two sides share one state: the sink behind evaluation (returned)
        and the forwarder in front of the assembler (``_build_forward``)."""
        ex = self.config.export
        self.exporter: SpanExporter | None = None
        if not ex.endpoint:
            return None
        self.export = ExportState.build(ex, self.telemetry, redact)
        self.queue, self.held = self.export.queue, self.export.held
        self.span_sink = SpanSink(self.export)
        senders = {"traces": sender_for(ex.endpoint, ex)}
        senders["logs"] = sender_for(ex.logs_endpoint, ex) if ex.logs_endpoint else senders["traces"]
        self.exporter = SpanExporter(self.queue, senders, ex, self.telemetry, self.threads)
        self._senders = senders
        self.telemetry.registry.register(_ExportGauges(self.export, self.span_sink))
        return self.span_sink

    # -- verdict, assemble ----------------------------------------------------------------

    def _build_evaluate(self, sinks: VerdictConsumer, clock: Clock) -> Evaluator:
        """With ``amend`` on, decided runs are kept a while, so that late spans (and judge
        answers) can amend their verdicts."""
        amend = self.config.amend
        decided = DecidedRuns(amend, clock, self.telemetry) if amend.enabled else None
        evaluator = Evaluator(self.ruleset, sinks, telemetry=self.telemetry, decided=decided, profile=self.profiler,
                              isolation=self.config.checks.isolation, threads=self.threads)
        # plug-ins' counters, read at scrape time from the stage that runs them (if any yet)
        self.telemetry.registry.register(PluginMetrics(lambda: evaluator.isolation))
        return evaluator

    def _build_assemble(self, evaluator: Evaluator, clock: Clock) -> LiveAssembler:
        config = self.config
        return LiveAssembler(Assembler(evaluator, clock, config.assemble), clock, self.telemetry, config.tick,
                             self.threads)

    def _build_forward(self, assembler: LiveAssembler) -> SpanConsumer:
        """With span export on, every received span is teed to it before assembly."""
        if self.exporter is None:
            return assembler
        return Forwarder(assembler, self.export)

    # -- receive, and the metrics endpoint ------------------------------------------------

    def _build_receive(self, ingest: SpanConsumer) -> None:
        config = self.config
        rc, mc = config.receive, config.metrics
        refused = self.telemetry["faultgate_http_refused_connections"]
        limits = ConnectionLimits(rc.http_idle_timeout, rc.http_max_connections)
        # two hosts, two event loops: probes and scrapes never wait behind a request's parse
        self.http = HttpHost("http", limits, lambda site: refused.labels(site).inc())
        self.metrics_http = HttpHost("metrics-http", limits, lambda site: refused.labels(site).inc())
        api = () if self.query is None else query_api.routes(
            self.query, self.gate.status if self.gate is not None else None, self._redact)
        self.metrics_http.add("metrics", metrics_endpoint.app(self.telemetry.registry, lambda: self.ready,
                                                              security.token_of(mc, "metrics"), api),
                              mc.endpoint, security.ssl_context(mc.tls, "metrics"))
        token = security.token_of(rc)
        if rc.http_endpoint:
            # GenAI content in log records goes straight to the assembler: logs are not forwarded
            self.http.add("http", http_server.app(ingest, self.telemetry, rc.max_request_bytes, token,
                                                  contents=self.wal or self.assembler,
                                                  request_timeout=rc.request_timeout, reader=self.reader),
                          rc.http_endpoint, security.ssl_context(rc.tls), raw_body=True)
        interceptors = (security.BearerTokenInterceptor(token),) if token else ()
        # each open Subscribe stream holds a worker thread of the sync server for its
        # lifetime: without room for them, subscribers would starve OTLP Export
        self.grpc = GrpcReceiver(rc.grpc_endpoint, ingest, self.telemetry, max_request_bytes=rc.max_request_bytes,
                                 workers=rc.grpc_workers + config.stream.max_subscribers,
                                 credentials=security.grpc_credentials(rc.tls), interceptors=interceptors,
                                 contents=self.wal or self.assembler, request_timeout=rc.request_timeout,
                                 max_streams_per_connection=rc.grpc_max_streams_per_connection,
                                 reader=self.reader) if rc.grpc_endpoint else None
        if self.grpc is not None and self.stream is not None:
            self.grpc.add_generic_rpc_handlers((self.stream.handler(),))

    def _sink_failed(self, sink: str) -> None:
        self.telemetry["faultgate_internal_errors"].labels(f"sink_{sink}").inc()

    @property
    def ready(self) -> bool:
        """Started, not shutting down, and no background thread has died."""
        return self._ready.is_set() and self.threads.healthy and self.assembler.scan_alive

    # -- the durable source (Kafka), beside the receivers -----------------------------------

    def _build_replays(self) -> ReplayLedger | None:
        """Counts verdicts of runs the Kafka source re-read; a verdict sink like the others."""
        if not self.config.receive.kafka.enabled:
            return None
        return ReplayLedger(self.telemetry["faultgate_kafka_replayed_verdicts"])

    def _build_kafka(self, ingest: SpanConsumer):
        if self.replays is None:
            return None
        # imported here: confluent-kafka loads librdkafka, which a service without Kafka never needs
        from faultgate_stream.receive.kafka.source import KafkaSource
        progress = ServiceProgress(self.assembler, self.export if self.exporter is not None else None, self.telemetry)
        return KafkaSource(self.config.receive.kafka, ingest, progress, self.telemetry, self.replays,
                           max_message_bytes=self.config.receive.max_request_bytes, reader=self.reader)

    # -- the write-ahead log, between the OTLP receivers and the span path --------------------

    def _build_wal(self, ingest: SpanConsumer) -> WriteAheadLog | None:
        """What the OTLP receivers accept is logged before it is acknowledged; finished is
        judged as for Kafka (``ServiceProgress``)."""
        if self.wal_replays is None:
            return None
        progress = ServiceProgress(self.assembler, self.export if self.exporter is not None else None, self.telemetry)
        return WriteAheadLog(self.config.durability.wal, ingest, progress, self.telemetry, self.wal_replays,
                             self.threads, self.reader, contents=self.assembler)

    @property
    def ports(self) -> dict[str, int]:
        out = {**self.metrics_http.ports, **self.http.ports}
        if self.grpc is not None:
            out["grpc"] = self.grpc.port
        return out

    def start(self) -> None:
        if self.exporter is not None:
            self.exporter.start()
        if self.judge is not None:
            self.judge.start(self.evaluator)
        if self.sessions is not None:
            self.sessions.start()
        self.assembler.start()
        self.metrics_http.start()
        if self.kafka is not None:
            self.kafka.start()
        if self.wal is not None:
            self.wal.start()   # replays what no checkpoint covers, before the receivers open
        self.http.start()
        if self.grpc is not None:
            self.grpc.start()
        self._ready.set()
        self.log.info("started", version=__version__, endpoints=self.ports,
                      limits=asdict(self.config.assemble), max_request_bytes=self.config.receive.max_request_bytes,
                      checks=self.ruleset.names,
                      bindings=[{"agents": list(b.agents), "source": b.source} for b in self.ruleset.bindings],
                      gate=self.gate.bands.sources if self.gate is not None else [])

    def reload(self) -> bool:
        """Re-read the policy, spec and band files (SIGHUP). A valid set replaces the old one for
        runs that start afterwards; an invalid one is rejected, the old one kept, and the
        reason logged and counted. Runs in flight keep the rules they started with."""
        try:
            new = ruleset.build(self.config.checks, self.ruleset.generation + 1, self.windows,
                                self.telemetry["faultgate_ruleset_agent_cache_evictions"])
            bands = self.gate.load_bands() if self.gate is not None else None
        except (InputError, ValueError) as e:
            self.telemetry["faultgate_config_reloads"].labels("rejected").inc()
            self.log.error("reload_rejected", reason=str(e), generation=self.ruleset.generation)
            return False
        # widened before the new checks judge anything: a span read in between keeps what they read
        self.reader.projection = self.reader.projection.widened(new.attributes)
        self.ruleset = new
        self.evaluator.reload(new)
        if self.gate is not None and bands is not None:
            self.gate.apply(bands)  # windows are kept: a reload changes the yardstick, not the history
        self.telemetry["faultgate_config_reloads"].labels("applied").inc()
        self.log.info("reloaded", generation=new.generation, checks=new.names,
                      bindings=[{"agents": list(b.agents), "source": b.source} for b in new.bindings])
        return True

    def shutdown(self, grace: float | None = None) -> dict[str, Any]:
        """Stop accepting (new data is refused retryably), complete every run in flight as
        ``shutdown``, flush the export queue within ``grace``, then stop. Safe twice."""
        if self._stopped.is_set():
            return {}
        self._stopped.set()
        self._ready.clear()
        grace = self.config.shutdown_grace if grace is None else grace
        if self.kafka is not None:
            # first: its runs in flight are finished or handed over, not closed as shutdown
            self.kafka.stop()
        runs = self.assembler.shutdown(Completion.SHUTDOWN)
        # the plug-ins' results of those runs, within the grace; verdicts still waiting then
        # go out with those results undecided
        out_plugins = self.evaluator.close(grace)
        if self.judge is not None:
            # before the sinks close: a call in progress gets its timeout, the rest is counted
            self.judge.stop(min(grace, self.config.judge.timeout))
        if self.sessions is not None:
            # after the last run verdicts: the sessions they end go out before the sinks close
            out_sessions = self.sessions.stop()
        if self.stream is not None:
            self.stream.close()  # after the shutdown verdicts are queued: subscribers get them, then OK
        out: dict[str, Any] = {"runs_completed_at_shutdown": runs}
        if self.sessions is not None:
            out["sessions_decided_at_shutdown"] = out_sessions
        if out_plugins:
            out["verdicts_without_plugin_results"] = out_plugins
        if self.exporter is not None:
            # spans no run claimed still go out, unannotated
            self.span_sink.export_held({sid: h for (_, sid), h in self.held.release_all().items()}, None)
            out["unflushed"] = self.exporter.shutdown(grace)
            for sender in {id(s): s for s in self._senders.values()}.values():
                sender.close()
        if self.grpc is not None:
            self.grpc.stop(min(grace, 1.0))
        self.http.stop()
        if self.wal is not None:
            self.wal.stop()   # last: a checkpoint covering what was decided and flushed
        self.metrics_http.stop()
        self.log.info("stopped", **out)
        return out


class _ExportGauges(Collector):
    """Export state read at scrape time."""

    def __init__(self, state: ExportState, sink: SpanSink) -> None:
        self._s = state
        self._sink = sink

    def collect(self):
        # the queue's own counts come from its ledger (export/spans/telemetry.py)
        g = GaugeMetricFamily("faultgate_exporter_held_spans", _help("faultgate_exporter_held_spans"))
        g.add_metric([], len(self._s.held))
        yield g
        c = CounterMetricFamily("faultgate_exporter_annex_cache_evictions",
                                _help("faultgate_exporter_annex_cache_evictions"))
        c.add_metric([], self._sink.annex_evictions)
        yield c
        c = CounterMetricFamily("faultgate_exporter_verdict_cache_evictions", _help("faultgate_exporter_verdict_cache_evictions"))
        c.add_metric([], self._s.cache.evictions)
        yield c
        c = CounterMetricFamily("faultgate_exporter_evaluation_key_cache_evictions",
                                _help("faultgate_exporter_evaluation_key_cache_evictions"))
        c.add_metric([], self._s.evaluation_keys.evicted)
        yield c


def _help(name: str) -> str:
    return next(s.help for s in CATALOG if s.name == name)
