"""The assembler on the real clock, shared by every receiver thread.

One lock guards the assembler. A ticker thread runs the completion scan when the first
run held is due (its root's arrival plus ``root_grace``, or an idle or maximum time), and
at least every ``tick``; ingestion also runs it first when a run is due or a tick is
overdue, so a busy receiver cannot starve it (contrib PR #48699: with ingestion starving
the ticker, memory climbed while CPU stayed flat). A run is thus closed at its deadline,
not at the next tick after it: with a 0.1 s tick the verdict delay's p99 sat near
``root_grace`` + 0.5 s at half load, the tick, the ticker's wait for the lock behind
receivers and the garbage collector's pauses adding up. Self-metrics are recorded here,
after each call, from the assembler's counters.

Between scans the ticker may hand its idle time to a hook (``between_scans``): the service
runs the garbage collector there (``cli/heap.py``), so that its pauses fall where no run is
due rather than inside a scan, where every run after the pause waits for it.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream.assemble.assembler import AddResult, Assembler, ContentResult, Stats
from faultgate_stream.model.clock import Clock
from faultgate_stream.model.errors import CapacityError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.telemetry import CATALOG, Telemetry
from faultgate_stream.model.threads import Threads
from faultgate_stream.model.verdict import Completion

# Called with the nanoseconds until the first run held is due (or the tick, when none is),
# from the ticker thread, without the assembler lock.
IdleHook = Callable[[int], object]

log = structlog.get_logger("faultgate_stream.assemble")


class LiveAssembler:
    """A ``SpanConsumer``: receivers call ``consume`` from any thread."""

    def __init__(self, assembler: Assembler, clock: Clock, telemetry: Telemetry, tick: float,
                 threads: Threads | None = None) -> None:
        self._asm = assembler
        self._clock = clock
        self._t = telemetry
        self._tick_ns = int(tick * 1e9)
        self._lock = threading.Lock()
        self._last_scan = self._scan_started = clock.now_ns()
        self._scan_failed = False
        self._seen = Stats()
        self._stop = threading.Event()
        self._wake = threading.Event()  # set when a record makes a run due before the ticker's next wake-up
        self._wake_at = 0
        self._closing = False
        self._thread: threading.Thread | None = None
        self._idle: IdleHook | None = None
        self._threads = threads or Threads(telemetry)
        self._internal = telemetry["faultgate_internal_errors"].labels("completion_scan")
        telemetry.registry.register(_InMemory(assembler))

    def consume(self, spans: list[SpanRecord], request: object = None) -> AddResult:
        return self._take(self._asm.add, spans)

    def consume_contents(self, contents: list[SpanRecord], request: object = None) -> ContentResult:
        """A ``ContentConsumer``: GenAI content from log records, held to join its spans."""
        return self._take(self._asm.add_contents, contents)

    def _take(self, add, records: list[SpanRecord]):
        # Checked before the lock too: shutdown holds the lock while it completes every run
        # and hands the verdicts to the sinks, which may wait on a full stdout pipe or a
        # slow subscriber; a request must be refused at once meanwhile, not wait its
        # deadline out (a SIGTERM drain once held one for 5 s).
        if self._closing:
            raise CapacityError("shutting down", bound="shutdown", retry_after_s=1.0)
        with self._lock:
            if self._closing:
                # the sender keeps the data and retries: another replica, or us after a restart
                raise CapacityError("shutting down", bound="shutdown", retry_after_s=1.0)
            # An overdue scan runs first: the runs it completes were due before these records
            # came, exactly as if the ticker had not been held up.
            if self._scan_due(self._clock.now_ns()):
                self._scan()
            try:
                return add(records)
            finally:
                self._record()
                due = self._asm.due_ns
                if due is not None and due < self._wake_at:
                    self._wake.set()

    def holds_any(self, trace_ids) -> bool:
        with self._lock:
            return self._asm.holds_any(trace_ids)

    def drop_traces(self, trace_ids) -> int:
        with self._lock:
            return self._asm.drop_traces(trace_ids)

    def _deadline(self) -> int | None:
        """The first deadline of the runs held, unless the last scan left it due (the scan
        failed, or could not close the run): that one waits for the tick, no scan loop."""
        due = self._asm.due_ns
        return due if due is not None and due > self._scan_started and not self._scan_failed else None

    def _scan_due(self, now: int) -> bool:
        due = self._deadline()
        return now - self._last_scan >= self._tick_ns or (due is not None and now >= due)

    def _scan(self) -> None:
        started = time.perf_counter()
        self._scan_started = self._clock.now_ns()
        try:
            self._asm.advance()
            self._scan_failed = False
        except Exception:
            # a bug, never an answer to input: counted and logged, and the next tick scans
            # again; neither the ticker nor the request that ran an overdue scan fails on it
            self._scan_failed = True
            self._internal.inc()
            log.exception("completion_scan_failed")
        self._last_scan = self._clock.now_ns()
        self._t["faultgate_completion_scan_seconds"].observe(time.perf_counter() - started)

    def _record(self) -> None:
        s, seen = self._asm.stats, self._seen
        for attr, metric in (("duplicates", "faultgate_duplicate_spans"), ("late", "faultgate_late_spans"),
                             ("evicted_runs", "faultgate_runs_evicted"),
                             ("decision_cache_evictions", "faultgate_decision_cache_evictions")):
            delta = getattr(s, attr) - getattr(seen, attr)
            if delta:
                self._t[metric].inc(delta)
                setattr(seen, attr, getattr(s, attr))
        for attr, outcome in (("contents_joined", "joined"), ("contents_late", "late"),
                              ("contents_unjoined", "unjoined"), ("contents_capped", "capped"),
                              ("contents_duplicates", "duplicate")):
            delta = getattr(s, attr) - getattr(seen, attr)
            if delta:
                self._t["faultgate_log_contents"].labels(outcome).inc(delta)
                setattr(seen, attr, getattr(s, attr))

    def between_scans(self, hook: IdleHook | None) -> None:
        """Give the ticker's idle time to ``hook`` (see ``IdleHook``); None stops it."""
        self._idle = hook

    def free_ns(self) -> int:
        """Nanoseconds until a scan has work: the first deadline held, else the tick; 0
        when a run is due now."""
        with self._lock:
            return self._free_ns(self._clock.now_ns())

    def _free_ns(self, now: int) -> int:
        due = self._deadline()
        return self._tick_ns if due is None else min(self._tick_ns, max(0, due - now))

    def start(self) -> None:
        self._thread = self._threads.start("completion-scan", self._run)

    @property
    def scan_alive(self) -> bool:
        """The ticker runs (or was never started, offline and in tests): readiness needs it."""
        return self._thread is None or self._thread.is_alive() or self._stop.is_set()

    def _run(self) -> None:
        while not self._stop.is_set():
            idle = self._idle
            if idle is not None:
                try:
                    idle(self.free_ns())  # outside the lock: receivers go on taking spans meanwhile
                except Exception:
                    # a bug in the hook must not stop completion: counted, logged, scans go on
                    self._internal.inc()
                    log.exception("between_scans_failed")
            with self._lock:
                now = self._clock.now_ns()
                wait = self._free_ns(now)
                self._wake_at = now + wait
                self._wake.clear()
            self._wake.wait(wait / 1e9)
            if self._stop.is_set():
                return
            with self._lock:
                self._scan()
                self._record()

    def shutdown(self, completion: Completion = Completion.SHUTDOWN) -> int:
        """Refuse new spans (retryably), stop the ticker and complete every run in flight.
        Safe without ``start`` and twice."""
        with self._lock:
            self._closing = True
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            n = self._asm.close_all(completion)
            self._record()
        return n


class _InMemory(Collector):
    """Gauges read at scrape time: what the assembler holds right now."""

    def __init__(self, assembler: Assembler) -> None:
        self._asm = assembler

    def collect(self):
        for name, value in (("faultgate_runs_in_memory", self._asm.traces_in_flight),
                            ("faultgate_spans_in_memory", self._asm.spans_in_flight),
                            ("faultgate_memory_held_bytes", self._asm.bytes_held),
                            ("faultgate_decision_cache_traces", self._asm.decided_traces),
                            ("faultgate_decision_cache_bytes", self._asm.decided_bytes),
                            ("faultgate_runs_in_memory_limit", self._asm.config.max_traces),
                            ("faultgate_memory_limit_bytes", self._asm.config.max_bytes)):
            g = GaugeMetricFamily(name, next(s.help for s in CATALOG if s.name == name))
            g.add_metric([], value)
            yield g

