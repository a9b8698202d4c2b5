"""Spans in, runs out, on an injected clock.

A run is complete when its root has arrived and ``root_grace`` has passed since, or when
``max_run_duration`` since its trace's first span runs out; a fragment whose root never
arrives is closed as an orphan after ``idle_timeout`` without a new span. Offline, end of
input (``close_all``) completes every run. Duplicates (OTLP retries) are dropped by
(trace id, span id); spans that arrive after their run's verdict are reported as late.

Content that came apart from its spans (GenAI log events, ``add_contents``) waits beside
them and is merged into its span when the run completes (``content.merge``); content for a
span already decided is late, content whose span never came is unjoined: both counted.

Determinism: membership is decided when a run completes, from parent links, and a run's
spans are sorted there, so arrival order and batching cannot change a verdict.

The bookkeeping is compiled (``faultgate_stream._native.TraceTable``, native/py/src/assemble/):
the spans held per trace, duplicates, late spans and the decision cache, partitioning a
trace into runs, and which traces are due. This module is the orchestrator: it checks the
bounds, builds the ``Run``s and tells its consumer, in the order the table reports what
happened.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from faultgate_stream import _native
from faultgate_stream.assemble.content import merge
from faultgate_stream.model.clock import Clock
from faultgate_stream.model.consumers import RunConsumer
from faultgate_stream.model.errors import BoundError, CapacityError
from faultgate_stream.model.records import RunKey, SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import Completion

if TYPE_CHECKING:  # imported where it is needed: offline, ``check`` passes its own limits
    from faultgate_stream.assemble.config import AssembleConfig

NS = 1_000_000_000
# The table keeps times and byte counts as 128-bit integers, counts as 64-bit ones: a bound
# past these is no bound.
_UNBOUNDED = 2**100
_UNBOUNDED_COUNT = 2**62
# What ``TraceTable.due`` says a trace needs.
_DUE = {0: Completion.MAX_DURATION, 1: Completion.GRACE, 2: Completion.ORPHAN}
_new_tuple = tuple.__new__


# The result and state classes below are plain classes with slots, not dataclasses: a
# dataclass costs its import ~2 M instructions to define (its methods are compiled from
# source each time the module loads), which a `check` command pays for every one.

class AddResult:
    """What one ``add`` did with its batch."""

    __slots__ = ("accepted", "duplicates", "late", "late_runs", "decided_duplicates", "closed_runs")

    def __init__(self) -> None:
        self.accepted = self.duplicates = self.late = 0
        self.late_runs: dict[str, RunKey] = {}  # late span id -> the run it was decided in
        # a retry of a span whose run was already decided (its first copy was taken): the run
        self.decided_duplicates: dict[str, RunKey] = {}
        # root candidates of this batch whose run this batch closed (the trace hit
        # max_spans_per_trace): their verdict is already out, so they must not wait for one
        self.closed_runs: dict[str, RunKey] = {}


class Stats:
    """Counters for every bound and drop, read by the service's self-metrics."""

    __slots__ = ("duplicates", "late", "evicted_runs", "refused_batches", "span_cap_hits", "decision_cache_evictions",
                 "contents_joined", "contents_late", "contents_unjoined", "contents_capped", "contents_duplicates")

    def __init__(self) -> None:
        self.duplicates = self.late = self.evicted_runs = self.refused_batches = 0
        self.span_cap_hits = self.decision_cache_evictions = 0
        # GenAI content from log records, by what became of it
        self.contents_joined = 0      # merged into its span
        self.contents_late = 0        # its span's run was already decided
        self.contents_unjoined = 0    # its span never arrived before the trace was done
        self.contents_capped = 0      # over max_spans_per_trace content records for one trace
        self.contents_duplicates = 0  # the same record again (a retried export)


class ContentResult:
    """What one ``add_contents`` did with its batch."""

    __slots__ = ("accepted", "late", "duplicates", "capped")

    def __init__(self) -> None:
        self.accepted = self.late = self.duplicates = self.capped = 0


def _ns(seconds: float) -> int:
    return int(seconds * NS) if seconds * NS < _UNBOUNDED else _UNBOUNDED


class Assembler:
    def __init__(self, consumer: RunConsumer, clock: Clock, config: AssembleConfig | None = None) -> None:
        self._next = consumer
        self._clock = clock
        if config is None:
            from faultgate_stream.assemble.config import AssembleConfig

            config = AssembleConfig()
        self.config = cfg = config
        self._grace_ns = _ns(cfg.root_grace)
        self._table = _native.TraceTable(self._grace_ns, _ns(cfg.max_run_duration), _ns(cfg.idle_timeout),
                                         min(cfg.max_spans_per_trace, _UNBOUNDED_COUNT),
                                         min(cfg.decision_cache, _UNBOUNDED_COUNT),
                                         min(cfg.decision_cache_bytes, _UNBOUNDED))
        self.stats = Stats()
        # The earliest clock time at which ``advance`` has something to close (None: nothing
        # held). Exact after ``advance``; ingestion only moves it earlier, so between scans
        # it may be early (one scan too many), never late.
        self.due_ns: int | None = None

    # ------------------------------------------------------------ state, for self-metrics
    @property
    def traces_in_flight(self) -> int:
        return self._table.traces

    @property
    def spans_in_flight(self) -> int:
        return self._table.spans

    @property
    def bytes_held(self) -> int:
        return self._table.bytes

    @property
    def decided_traces(self) -> int:
        return self._table.decided_traces

    @property
    def decided_bytes(self) -> int:
        return self._table.decided_bytes

    def holds_any(self, trace_ids) -> bool:
        """True while any of these traces has spans in flight (a durable source's commit
        waits for that)."""
        return self._table.holds_any(trace_ids)

    def drop_traces(self, trace_ids) -> int:
        """Forget these traces' runs in flight without a verdict: their partition moved to
        another replica, which re-reads them. Returns the spans dropped."""
        return self._table.drop_traces(trace_ids)

    def _counted(self) -> None:
        """The table counts what happens inside it; the stats show it."""
        table, stats = self._table, self.stats
        stats.decision_cache_evictions = table.decided_evictions
        stats.contents_joined = table.contents_joined
        stats.contents_unjoined = table.contents_unjoined

    # ------------------------------------------------------------ ingestion
    def add(self, spans: Iterable[SpanRecord]) -> AddResult:
        """Take a batch. Raises ``CapacityError`` (nothing taken) when a bound is reached
        and ``on_full`` is ``refuse``; with ``evict``, the oldest runs are closed instead.
        The consumer hears of the accepted spans once, in arrival order (``spans_arrived``),
        unless a late span or a run closed at ``max_spans_per_trace`` comes between them:
        it hears of everything in the order it happened."""
        batch = spans if type(spans) is list else list(spans)
        self._make_room(batch)
        now = self._clock.now_ns()
        accepted, duplicates, late, cap_hits, roots, new_traces, events, dups, closed = self._table.add(batch, now)
        res = AddResult()
        res.accepted, res.duplicates, res.late = accepted, duplicates, late
        nxt = self._next
        for kind, a, b in events:
            if kind == 0:
                nxt.spans_arrived(a)
            elif kind == 1:
                run = RunKey(a.trace_id, b)
                res.late_runs[a.span_id] = run
                nxt.span_late(a, run)
            else:
                # the same run would hit the same bound again on retry: it was closed early
                self.stats.span_cap_hits += 1
                self._hand_on(self._runs(a, b, Completion.EVICTED), Completion.EVICTED)
        if dups is not None:
            res.decided_duplicates = {s.span_id: RunKey(s.trace_id, root) for s, root in dups}
        if closed is not None:
            res.closed_runs = {s.span_id: RunKey(s.trace_id, root) for s, root in closed}
        self.stats.duplicates += duplicates
        self.stats.late += late
        self._counted()
        if roots or new_traces:
            self._due_by(now, roots, new_traces)
        return res

    def _due_by(self, now: int, roots: bool, new_traces: bool) -> None:
        """Records that arrived at ``now`` make something due: a root at ``root_grace``
        from now, a new trace (or fragment) at its idle or maximum time."""
        cfg = self.config
        after = min(([cfg.root_grace] if roots else [])
                    + ([cfg.idle_timeout, cfg.max_run_duration] if new_traces else []))
        due = now + int(after * NS)
        if self.due_ns is None or due < self.due_ns:
            self.due_ns = due

    def add_contents(self, contents: Iterable[SpanRecord]) -> ContentResult:
        """Take content records (``read.log_events``) to merge into their spans when their
        run completes. Bounds and refusals as ``add``: the records count against
        ``max_bytes`` and ``max_traces``, and up to ``max_spans_per_trace`` per trace."""
        batch = contents if type(contents) is list else list(contents)
        self._make_room(batch)
        now = self._clock.now_ns()
        res = ContentResult()
        res.accepted, res.late, res.duplicates, res.capped, new_traces = self._table.add_contents(batch, now)
        if new_traces:
            self._due_by(now, roots=False, new_traces=True)
        self.stats.contents_late += res.late
        self.stats.contents_duplicates += res.duplicates
        self.stats.contents_capped += res.capped
        return res

    def _make_room(self, batch: list[SpanRecord]) -> None:
        new_traces, new_bytes = self._table.room(batch)
        cfg = self.config
        table = self._table

        def full() -> str:
            if table.traces + new_traces > cfg.max_traces:
                return "max_traces"
            if table.bytes + new_bytes > cfg.max_bytes:
                return "max_bytes"
            return ""

        bound = full()
        if not bound:
            return
        # A request no amount of waiting lets in is permanent, naming the limit; only one
        # that fits once runs complete is refused retryably (issue 9, defect 10).
        if new_traces > cfg.max_traces:
            self.stats.refused_batches += 1
            raise BoundError(f"request has {new_traces} new traces, more than the assembler holds "
                             f"(assemble.max_traces: {cfg.max_traces}); send smaller batches", bound="max_traces")
        if new_bytes > cfg.max_bytes:
            self.stats.refused_batches += 1
            raise BoundError(f"request has {new_bytes} bytes of spans, more than the assembler holds "
                             f"(assemble.max_bytes: {cfg.max_bytes}); send smaller batches", bound="max_bytes")
        if cfg.on_full == "refuse":
            self.stats.refused_batches += 1
            raise CapacityError(f"assembler at {bound} ({table.traces} traces, {table.bytes} bytes held)",
                                bound=bound, retry_after_s=max(1.0, cfg.root_grace))
        while bound and table.traces:
            self._close_trace(table.oldest(), Completion.EVICTED)
            bound = full()

    # ------------------------------------------------------------ completion
    def advance(self) -> int:
        """Complete every run that is due at the clock's time. Returns runs completed. Only
        the traces that are due are looked at (the table keeps them by deadline)."""
        now = self._clock.now_ns()
        done = 0
        table, run_completed = self._table, self._next.run_completed
        grace_before = now - self._grace_ns
        for tid, due in table.due(now):
            completion = _DUE[due]
            if completion is Completion.GRACE:  # most runs: ``_take`` and ``_hand_on`` inlined, counted once below
                runs = self._runs(tid, table.take(tid, grace_before), completion)
                done += len(runs)
                for r in runs:
                    run_completed(r)
            else:
                done += self._close_trace(tid, completion)
        self._counted()
        self.due_ns = table.next_due()
        return done

    def close_all(self, completion: Completion = Completion.COMPLETE, *, remember: bool = True) -> int:
        """End of input (offline) or shutdown (live): every run in flight completes now,
        ordered by first span start and, on a tie, by which trace arrived first, so
        reports list runs in the order faultgate lists the same traces. ``remember=False``
        when no span can follow (the end of a file): the decision cache, which is there to
        recognise late spans, is not filled (~1 ms of a gate file's ~27)."""
        runs: list[Run] = []
        for tid, taken in self._table.take_all(remember):
            runs += self._runs(tid, taken, completion)
        self._counted()
        runs.sort(key=lambda r: r.spans[0].start_ns if r.spans else 0)  # stable: ties keep arrival order
        for r in runs:
            self._next.run_completed(r)
        return len(runs)

    def _close_trace(self, tid: str, completion: Completion) -> int:
        return self._hand_on(self._take(tid, completion), completion)

    def _take(self, tid: str, completion: Completion, due_before: int | None = None) -> list[Run]:
        """The runs of a trace: all of them, or (``due_before``) those whose root arrived
        by then. Unattached spans go with an all-runs close, as one orphan run."""
        return self._runs(tid, self._table.take(tid, due_before), completion)

    def _hand_on(self, runs: list[Run], completion: Completion) -> int:
        self._counted()
        if completion is Completion.EVICTED:
            self.stats.evicted_runs += len(runs)
        for r in runs:
            self._next.run_completed(r)
        return len(runs)

    def _runs(self, tid: str, taken: list[tuple], completion: Completion) -> list[Run]:
        """The ``Run``s of what the table took from a trace (``TraceTable.take``): each
        run's members with their content records merged in; what no root claimed as an
        orphan run."""
        now = self._clock.now_ns()
        orphan = Completion.ORPHAN if completion in (Completion.GRACE, Completion.COMPLETE) else completion
        runs = []
        for root_id, members, root, arrived, merges, outside, ordered in taken:
            if merges is not None:  # a content record joins its span: its times and id stay
                for i, held in merges:
                    merged = merge(members[i], held)
                    if members[i] is root:
                        root = merged
                    members[i] = merged
            # the keys built as the tuples they are (``tuple.__new__``): a NamedTuple's own
            # ``__new__`` is a Python frame, one a run
            if root is None:
                run = Run(_new_tuple(RunKey, (tid, "")), members, None, orphan, closed_ns=now, ordered=ordered)
            else:
                run = Run(_new_tuple(RunKey, (tid, root_id)), members, root, completion, root_arrival_ns=arrived,
                          closed_ns=now, ordered=ordered)
            if outside is not None:
                run.outside_span_ids = outside
            runs.append(run)
        return runs
