"""The live sessions stage: a ``VerdictConsumer`` beside the other sinks, and a ticker.

Run verdicts are filed on the thread that published them (a receiver's, the completion
scan's, the judge's); the ticker thread decides idle sessions every ``TICK_S``. Both take
one lock around the tracker, and session verdicts go to the session sinks from inside it,
so sinks hear of one session at a time. Sinks never wait (each has its own queue), and a
sink that raises is logged and counted, and the others still hear of the session.

Replicas: the stage sees the runs routed to its replica. Behind a collector's
``loadbalancing`` exporter with ``routing_key: traceID`` (the default), a session's runs
are different traces and land on different replicas: each replica then decides its share
of the session as a session of its own (fewer runs, smaller totals), and a budget may be
crossed with none of them seeing it. Route by ``session.id`` (``routing_key: attributes``)
to judge whole sessions (README, Sessions; docs/windowed-budgets.md says the same of
windowed budgets).
"""
from __future__ import annotations

import threading
from collections.abc import Callable

import structlog
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream.model.clock import Clock
from faultgate_stream.model.session import SessionConsumer, SessionEnd, SessionVerdict
from faultgate_stream.model.telemetry import Telemetry, describe
from faultgate_stream.model.threads import Threads
from faultgate_stream.model.verdict import EarlyFinding, RunVerdict
from faultgate_stream.sessions.config import SessionsConfig
from faultgate_stream.sessions.tracker import Tracker

log = structlog.get_logger("faultgate_stream.sessions")

# How often the ticker looks for idle sessions: idle timeouts are minutes, so a second
# late is nothing, and the scan is a look at the oldest session.
TICK_S = 1.0


class SessionStage:
    def __init__(self, config: SessionsConfig, sinks: list[SessionConsumer], clock: Clock, telemetry: Telemetry,
                 threads: Threads, on_error: Callable[[str], None] | None = None, tick: float | None = None) -> None:
        self.config = config
        self._sinks = sinks
        self._clock = clock
        self._threads = threads
        self._on_error = on_error
        # a short idle timeout (tests, demos) is looked at four times within it
        self._tick = tick if tick is not None else min(TICK_S, config.idle_timeout / 4)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.tracker = Tracker(config, self._emit)
        telemetry.registry.register(SessionGauges(self))

    def _emit(self, s: SessionVerdict) -> None:
        for sink in self._sinks:
            try:
                sink.session(s)
            except Exception:
                name = type(sink).__name__
                log.exception("session_sink_failed", sink=name)
                if self._on_error is not None:
                    self._on_error(name)

    def early(self, finding: EarlyFinding) -> None:
        """Sessions are judged from whole runs."""

    def verdict(self, v: RunVerdict) -> None:
        with self._lock:
            self.tracker.add(v, self._clock.now_ns())

    def start(self) -> None:
        self._thread = self._threads.start("sessions", self._run)

    def _run(self) -> None:
        while not self._stop.wait(self._tick):
            with self._lock:
                self.tracker.advance(self._clock.now_ns())

    def stop(self) -> int:
        """Decide every open session as ``shutdown``; how many. Safe without ``start`` and twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._tick + 1.0)
            self._thread = None
        with self._lock:
            return self.tracker.close_all(SessionEnd.SHUTDOWN, self._clock.now_ns())


class SessionGauges(Collector):
    """The store's size and what its bounds did, read at scrape time."""

    def __init__(self, stage: SessionStage) -> None:
        self._stage = stage

    def collect(self):
        t = self._stage.tracker
        with self._stage._lock:
            open_, held, agents, c = t.open_sessions, t.held_runs, len(t.agents), t.counts
            counters = {"faultgate_session_runs_without_id": c.runs_without_session,
                        "faultgate_session_late_amendments": c.late_amendments,
                        "faultgate_session_agent_events_evicted": c.evicted_agent_events,
                        "faultgate_session_agents_evicted": c.evicted_agents}
            closed = {"max_sessions": c.evicted_sessions, "max_runs": c.max_runs_sessions}
        for name, value in (("faultgate_sessions_open", open_), ("faultgate_session_runs_held", held),
                            ("faultgate_session_budget_agents", agents)):
            g = GaugeMetricFamily(name, describe(name))
            g.add_metric([], value)
            yield g
        for name, value in counters.items():
            m = CounterMetricFamily(name, describe(name))
            m.add_metric([], value)
            yield m
        m = CounterMetricFamily("faultgate_sessions_closed_early", describe("faultgate_sessions_closed_early"),
                                labels=["reason"])
        for reason, value in closed.items():
            m.add_metric([reason], value)
        yield m
