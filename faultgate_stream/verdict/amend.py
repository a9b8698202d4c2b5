"""Amended verdicts: decided runs are kept for a while, so that what arrives after a run's
verdict (a late span, a judge's answer) and changes a check's result produces the run's
verdict again, under the same run key, with a revision number and the verdict it replaces.

What "changes a check's result" means: some check's outcome (fired, passed or undecided;
per agent in a multi-agent run) differs, or a check's result appears (a judge answered).
A late span that only moves a reason's wording (one more step counted, say) changes
nothing a consumer acts on and amends nothing: it stays counted as late, as before.

The store is bounded three ways, each with a config key (``amend.*``) and a counter of
what it evicted (``faultgate_amend_store_evictions_total{reason}``): runs, bytes and age
(checked lazily, whenever the store is touched: with no traffic nothing needs room).
A fourth bound, spans per kept run, caps the work one late span can cost (a re-evaluation
of its whole run). A late span whose run is no longer kept is counted as unamendable
(``faultgate_late_spans_unamendable_total``), never dropped silently; it is still
counted late and still carries the verdict its run last got.

A kept run's spans are the records it was decided from, the same objects, out of the
garbage collector's reach: thousands of kept runs of tracked records were ~70,000 objects
walked by every full collection (the bench saw full collections of 100-230 ms every few
seconds at half load, and the verdict delay's p99 follow them). The reader makes its
records untracked as it builds them (native/core/src/read/conventions.rs); a record built in
Python (content from log events merged in) is untracked when its run is kept
(``untrack_acyclic``), as the verdict is. Until 2026-12-03 a kept run was packed into one
``bytes`` by a compiled packer and unpacked when evaluated again: packing every decided
run's every span was 3,300 instructions a span, 6.6% of the live hot path, for runs of
which nearly all leave the store unread (at the bench's half rate the byte bound evicts a
run within a second), and packed bytes saved 370 of ~1,045 B a span held.

The offline report never sees any of this: a file has no late spans (nothing completes
before end of input) and no store is built offline.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from operator import attrgetter

from typing import TYPE_CHECKING

from faultgate_stream import _native
from faultgate_stream.model.clock import Clock
from faultgate_stream.model.records import RunKey, SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult, Completion, RunVerdict
from faultgate_stream.verdict.config import AmendConfig
from faultgate_stream.verdict.ruleset import Ruleset

if TYPE_CHECKING:  # the offline command, which builds no store, needs no metrics library
    from faultgate_stream.model.telemetry import Telemetry

NS = 1_000_000_000
# Approximate bytes a kept run costs beyond its spans' own ``size``, by tracemalloc on
# 16-span runs under the default checks: the entry and the list of its spans ~310 B, the
# verdict it last got ~2.6 KB (results, reasons, released span ids).
ENTRY_BYTES = 3_000
# Why a kept run left the store (the ``reason`` of its eviction counter).
EVICTION_REASONS = ("max_runs", "max_bytes", "max_age", "max_run_spans")
# Why a late span could not amend its run: the run was kept once and evicted, or its trace
# was never a run (an agent's setup: no verdict to amend).
UNAMENDABLE_REASONS = ("evicted", "not_a_run")


_SIZE = attrgetter("size")


@dataclass(slots=True)
class Decided:
    """A decided run as the store keeps it: what re-evaluating it needs, and the verdict
    last published for it. Mutated only under the store's lock."""

    key: RunKey
    spans: tuple[SpanRecord, ...]    # the records it was decided from (untracked), late ones after them
    root: SpanRecord | None          # among them when it is one of them (checks tell it apart by identity)
    completion: Completion
    root_arrival_ns: int
    closed_ns: int
    ruleset: Ruleset                 # the rules the run was decided with (a reload does not change them)
    verdict: RunVerdict              # the latest verdict published for the run
    judged: tuple[CheckResult, ...]  # judge results, kept through later re-evaluations
    bytes: int
    kept_ns: int

    def run(self) -> Run:
        """A fresh ``Run`` of the kept spans (its derived facts are computed again)."""
        return Run(self.key, self.spans, self.root, self.completion, root_arrival_ns=self.root_arrival_ns,
                   closed_ns=self.closed_ns)


def outcome(r: CheckResult) -> str:
    return "undecided" if r.undecided else ("fired" if r.fired else "passed")


def changed_checks(old: tuple[CheckResult, ...], new: tuple[CheckResult, ...]) -> tuple[str, ...]:
    """Names of the checks whose outcome differs between two result sets, in result order."""
    before = {(r.check, r.agent): outcome(r) for r in old}
    after = {(r.check, r.agent): outcome(r) for r in new}
    out: dict[str, None] = {}
    for k in [*after, *before]:
        if before.get(k) != after.get(k):
            out[k[0]] = None
    return tuple(out)


def amendment(previous: RunVerdict, new: RunVerdict, checks: tuple[str, ...], by: str, now_ns: int) -> RunVerdict:
    """``new`` as the next revision of ``previous``. It releases no spans (the run's were
    released with its first verdict) and repeats the early findings already reported."""
    return new._replace(revision=previous.revision + 1, previous=previous.verdict, amended_checks=checks,
                        amended_by=by, early=previous.early, released_span_ids=frozenset(),
                        root_arrival_ns=previous.root_arrival_ns, decided_ns=now_ns)


class DecidedRuns:
    """Decided runs by run key, oldest first. ``lock`` is held by whoever reads or changes
    an entry and publishes its amendment, so revisions of one run go out in order."""

    def __init__(self, config: AmendConfig, clock: Clock, telemetry: Telemetry | None = None) -> None:
        self.config = config
        self._clock = clock
        self._runs: OrderedDict[RunKey, Decided] = OrderedDict()
        self.lock = threading.RLock()
        self.bytes = 0
        # by reason; ``faultgate_amend_store_evictions_total`` is read from it at scrape time:
        # a full store evicts a run for each one it keeps, and a counter's ``inc`` took a lock
        self.evictions = dict.fromkeys(EVICTION_REASONS, 0)
        if telemetry is not None:
            _register_gauges(self, telemetry)

    def __len__(self) -> int:
        return len(self._runs)

    def now_ns(self) -> int:
        return self._clock.now_ns()

    def keep(self, run: Run, verdict: RunVerdict, ruleset: Ruleset) -> None:
        if len(run.spans) > self.config.max_run_spans:
            with self.lock:
                self._count("max_run_spans")
            return
        spans = _native.untrack_acyclic(run.spans)  # the reader's records are untracked: one look at each
        root = run.root
        if root is not None and not (spans and spans[0] is root) and not any(s is root for s in spans):
            root = next((s for s in spans if s == root), root)  # an equal copy among them will do
        key = run.key
        with self.lock:
            now = self._clock.now_ns()  # one reading for the entry and the trim (a Python call each)
            # the verdict out of the collector's lists, as the export's cache keeps it (the same object)
            entry = Decided(key, spans, root, run.completion, run.root_arrival_ns, run.closed_ns, ruleset,
                            _native.untrack_acyclic(verdict), (), ENTRY_BYTES + sum(map(_SIZE, spans)), now)
            old = self._runs.pop(key, None)
            if old is not None:
                self.bytes -= old.bytes
            self._runs[key] = entry
            self.bytes += entry.bytes
            self._trim(now_ns=now)

    def get(self, key: RunKey) -> Decided | None:
        with self.lock:
            self._trim()
            return self._runs.get(key)

    def snapshot(self, key: RunKey) -> Run | None:
        """A kept run as it stands, for another thread to read (the judge's): its spans are
        copied under the lock, since a late span may grow the entry meanwhile."""
        with self.lock:
            entry = self.get(key)
            if entry is None:
                return None
            return entry.run()

    def grow(self, entry: Decided, span: SpanRecord) -> bool:
        """Add a late span to a kept run. False (and the run no longer kept) when that
        takes it past ``max_run_spans``."""
        with self.lock:
            if len(entry.spans) >= self.config.max_run_spans:
                self._drop(entry.key, "max_run_spans")
                return False
            entry.spans += (_native.untrack_acyclic(span),)
            entry.bytes += span.size
            self.bytes += span.size
            self._trim(keep=entry.key)
            return entry.key in self._runs

    def _count(self, reason: str) -> None:
        self.evictions[reason] += 1

    def _drop(self, key: RunKey, reason: str) -> None:
        entry = self._runs.pop(key, None)
        if entry is not None:
            self.bytes -= entry.bytes
            self._count(reason)

    def _trim(self, keep: RunKey | None = None, now_ns: int | None = None) -> None:
        """Evict the oldest runs while over a bound; the run being grown goes last.
        ``now_ns``: the clock's time when the caller just read it."""
        cfg = self.config
        oldest_kept = (self._clock.now_ns() if now_ns is None else now_ns) - int(cfg.max_age * NS)
        while self._runs:
            key, first = next(iter(self._runs.items()))
            if first.kept_ns < oldest_kept:
                reason = "max_age"
            elif len(self._runs) > cfg.max_runs:
                reason = "max_runs"
            elif self.bytes > cfg.max_bytes:
                reason = "max_bytes"
            else:
                return
            if key == keep and len(self._runs) > 1 and reason != "max_age":
                self._runs.move_to_end(key)
                continue
            self._drop(key, reason)


def _register_gauges(store: DecidedRuns, telemetry: Telemetry) -> None:
    """What the store holds right now and what it evicted, read at scrape time."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    from prometheus_client.registry import Collector

    from faultgate_stream.model.telemetry import describe

    class StoreGauges(Collector):
        def collect(self):
            for name, value in (("faultgate_amend_store_runs", len(store)),
                                ("faultgate_amend_store_bytes", store.bytes)):
                g = GaugeMetricFamily(name, describe(name))
                g.add_metric([], value)
                yield g
            evicted = CounterMetricFamily("faultgate_amend_store_evictions", describe("faultgate_amend_store_evictions"),
                                          labels=("reason",))
            for reason, n in list(store.evictions.items()):
                evicted.add_metric([reason], n)
            yield evicted

    telemetry.registry.register(StoreGauges())
