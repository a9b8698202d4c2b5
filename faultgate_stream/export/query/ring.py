"""The verdict API's store: the latest verdicts in a bounded ring, served masked. A
``VerdictConsumer`` beside the other sinks.

Contract
--------
* ``verdict(v)`` keeps the run's verdict as its newest entry; an amended verdict (same run
  id, a later revision) replaces the run's earlier one, so each run is there once, as it
  now stands. It never waits on a reader for longer than a dict operation, and never
  raises for a reader.
* A verdict becomes its masked record (``record.record``) when a reader first asks for it,
  and the record is kept in its place: every run is decided, few are ever asked about, and
  building a record (masking every reason, formatting times) was a fifth of the service's
  CPU a run when it was done for each (``bench/hot_path.py --profile``). Nothing reaches a
  reader but a record.
* Bounded by count (``query.max_verdicts``) and by estimated bytes (``query.max_bytes``,
  ``record.size_of``): the oldest go first, each counted by the bound that made room.
* Readers (the API, on the metrics endpoint's event loop) get the matching records, newest
  first; a record is never changed once built.

Threads: verdicts arrive on the completion scan's thread (and the judge stage's, for
amendments); requests are answered on the metrics host's loop. One lock guards the map.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from faultgate_stream.export.query.config import QueryConfig
from faultgate_stream.export.query.record import Redact, record, size_of
from faultgate_stream.model.verdict import EarlyFinding, RunVerdict

MAX_VERDICTS, MAX_BYTES = "max_verdicts", "max_bytes"


class VerdictRing:
    def __init__(self, config: QueryConfig, redact: Redact) -> None:
        self.max_verdicts = config.max_verdicts
        self.max_bytes = config.max_bytes
        self._redact = redact
        self._lock = threading.Lock()
        # run id -> [verdict, or its record once a reader asked; estimated bytes; trace id]
        self._records: OrderedDict[str, list[Any]] = OrderedDict()
        self._by_trace: dict[str, list[str]] = {}  # trace id -> its kept runs' ids, oldest first
        self.bytes = 0
        self.evicted = {MAX_VERDICTS: 0, MAX_BYTES: 0}

    def __len__(self) -> int:
        return len(self._records)

    # -- VerdictConsumer ---------------------------------------------------------------

    def early(self, finding: EarlyFinding) -> None:
        """Served with the run's verdict, which carries its early findings."""

    def verdict(self, v: RunVerdict) -> None:
        if v.setup_only:
            return
        size = size_of(v)
        run_id = str(v.key)
        with self._lock:
            old = self._records.pop(run_id, None)
            if old is not None:
                self.bytes -= old[1]
            else:
                self._by_trace.setdefault(v.key.trace_id, []).append(run_id)
            self._records[run_id] = [v, size, v.key.trace_id]
            self.bytes += size
            while len(self._records) > self.max_verdicts:
                self._evict(MAX_VERDICTS)
            while self.bytes > self.max_bytes and len(self._records) > 1:
                self._evict(MAX_BYTES)

    def _evict(self, reason: str) -> None:
        run_id, (_, size, trace_id) = self._records.popitem(last=False)
        self.bytes -= size
        runs = self._by_trace[trace_id]
        runs.remove(run_id)
        if not runs:
            del self._by_trace[trace_id]
        self.evicted[reason] += 1

    # -- readers -----------------------------------------------------------------------

    def newest(self, keep: Callable[[dict[str, Any]], bool], limit: int) -> tuple[list[dict[str, Any]], int]:
        """Up to ``limit`` records that ``keep`` accepts, newest first, and how many matched in all."""
        with self._lock:
            entries = list(self._records.values())
        out, matched = [], 0
        for r in map(self._record, reversed(entries)):
            if keep(r):
                matched += 1
                if len(out) < limit:
                    out.append(r)
        return out, matched

    def runs_of(self, trace_id: str) -> list[dict[str, Any]]:
        """The kept records of a trace's runs (a trace can hold several), oldest first."""
        with self._lock:
            entries = [self._records[run_id] for run_id in self._by_trace.get(trace_id, ())]
        return [self._record(e) for e in entries]

    def _record(self, entry: list[Any]) -> dict[str, Any]:
        """The entry's record, built (outside the lock) the first time it is read. Two readers
        at once may both build it: the same record, and the last one stays."""
        kept = entry[0]
        if isinstance(kept, dict):
            return kept
        entry[0] = rec = record(kept, self._redact)
        return rec


class RingMetrics(Collector):
    """The ring's size, bounds and evictions, read at scrape time."""

    def __init__(self, ring: VerdictRing, describe: Callable[[str], str]) -> None:
        self._ring = ring
        self._help = describe

    def collect(self) -> Iterator[Metric]:
        ring = self._ring
        for name, value in (("faultgate_query_verdicts", len(ring)), ("faultgate_query_max_verdicts", ring.max_verdicts),
                            ("faultgate_query_bytes", ring.bytes), ("faultgate_query_max_bytes", ring.max_bytes)):
            g = GaugeMetricFamily(name, self._help(name))
            g.add_metric([], value)
            yield g
        c = CounterMetricFamily("faultgate_query_evicted_verdicts", self._help("faultgate_query_evicted_verdicts"),
                                labels=["reason"])
        for reason, n in ring.evicted.items():
            c.add_metric([reason], n)
        yield c
