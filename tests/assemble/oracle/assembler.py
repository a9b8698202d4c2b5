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
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.assemble.content import merge
from tests.assemble.oracle.decided import DecisionCache
from tests.assemble.oracle.partition import partition
from faultgate_stream.model.clock import Clock
from faultgate_stream.model.consumers import RunConsumer
from faultgate_stream.model.errors import BoundError, CapacityError
from faultgate_stream.model.records import RunKey, SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import Completion

NS = 1_000_000_000


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


class _Trace:
    __slots__ = ("first_ns", "last_ns", "spans", "root_arrivals", "bytes", "contents", "content_count")

    def __init__(self, first_ns: int, last_ns: int) -> None:
        self.first_ns = first_ns
        self.last_ns = last_ns
        self.spans: dict[str, SpanRecord] = {}
        self.root_arrivals: dict[str, int] = {}  # candidate root span id -> arrival
        self.bytes = 0
        self.contents: dict[str, list[SpanRecord]] = {}  # span id -> its content records
        self.content_count = 0


class Assembler:
    def __init__(self, consumer: RunConsumer, clock: Clock, config: AssembleConfig | None = None) -> None:
        self._next = consumer
        self._clock = clock
        self.config = config or AssembleConfig()
        self._traces: OrderedDict[str, _Trace] = OrderedDict()  # oldest first
        self._decided = DecisionCache(self.config.decision_cache, self.config.decision_cache_bytes)
        self._bytes = 0
        self._spans = 0
        self.stats = Stats()
        # The earliest clock time at which ``advance`` has something to close (None: nothing
        # held). Exact after ``advance``; ingestion only moves it earlier, so between scans
        # it may be early (one scan too many), never late.
        self.due_ns: int | None = None

    # ------------------------------------------------------------ state, for self-metrics
    @property
    def traces_in_flight(self) -> int:
        return len(self._traces)

    @property
    def spans_in_flight(self) -> int:
        return self._spans

    @property
    def bytes_held(self) -> int:
        return self._bytes

    @property
    def decided_traces(self) -> int:
        return len(self._decided)

    @property
    def decided_bytes(self) -> int:
        return self._decided.bytes

    def holds_any(self, trace_ids) -> bool:
        """True while any of these traces has spans in flight (a durable source's commit
        waits for that)."""
        return any(t in self._traces for t in trace_ids)

    def drop_traces(self, trace_ids) -> int:
        """Forget these traces' runs in flight without a verdict: their partition moved to
        another replica, which re-reads them. Returns the spans dropped."""
        spans = 0
        for tid in trace_ids:
            t = self._traces.pop(tid, None)
            if t is not None:
                spans += len(t.spans)
                self._spans -= len(t.spans)
                self._bytes -= t.bytes
        return spans

    # ------------------------------------------------------------ ingestion
    def add(self, spans: Iterable[SpanRecord]) -> AddResult:
        """Take a batch. Raises ``CapacityError`` (nothing taken) when a bound is reached
        and ``on_full`` is ``refuse``; with ``evict``, the oldest runs are closed instead."""
        batch = list(spans)
        self._make_room(batch)
        now = self._clock.now_ns()
        res = AddResult()
        cap_hits = self.stats.span_cap_hits
        roots = new_traces = False
        decided = self._decided
        decided_traces = decided.traces
        for s in batch:
            if s.trace_id in decided_traces:
                root = decided.run_of(s.trace_id, s.span_id)
                if root is not None:
                    res.duplicates += 1
                    res.decided_duplicates[s.span_id] = RunKey(s.trace_id, root)
                    continue
                root = decided.run_of(s.trace_id, s.parent_id) if s.parent_id else None
                if root is None:
                    root = decided.named_by(s.trace_id, s.span_id)
                if root is not None:
                    decided.late(s.trace_id, s.span_id, root)
                    run = RunKey(s.trace_id, root)
                    res.late += 1
                    res.late_runs[s.span_id] = run
                    self._next.span_late(s, run)
                    continue
            t = self._traces.get(s.trace_id)
            if t is None:
                t = self._traces[s.trace_id] = _Trace(now, now)
                new_traces = True
            elif s.span_id in t.spans:
                res.duplicates += 1
                continue
            t.spans[s.span_id] = s
            t.last_ns = now
            t.bytes += s.size
            self._bytes += s.size
            self._spans += 1
            if s.is_agent or not s.parent_id:
                t.root_arrivals[s.span_id] = now
                roots = True
            res.accepted += 1
            self._next.span_arrived(s)
            if len(t.spans) >= self.config.max_spans_per_trace:
                # the same run would hit the same bound again on retry: close it early
                self.stats.span_cap_hits += 1
                self._close_trace(s.trace_id, Completion.EVICTED)
        if self.stats.span_cap_hits != cap_hits:
            for s in batch:
                if s.is_agent or not s.parent_id:
                    root = decided.run_of(s.trace_id, s.span_id)
                    if root is not None and s.span_id not in res.late_runs and s.span_id not in res.decided_duplicates:
                        res.closed_runs[s.span_id] = RunKey(s.trace_id, root)
        self.stats.duplicates += res.duplicates
        self.stats.late += res.late
        self.stats.decision_cache_evictions = decided.evictions  # the cache counts; the stats show it
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
        batch = list(contents)
        self._make_room(batch)
        now = self._clock.now_ns()
        res = ContentResult()
        for c in batch:
            if self._decided.run_of(c.trace_id, c.span_id) is not None:
                res.late += 1
                continue
            t = self._traces.get(c.trace_id)
            if t is None:
                t = self._traces[c.trace_id] = _Trace(now, now)
                self._due_by(now, roots=False, new_traces=True)
            held = t.contents.setdefault(c.span_id, [])
            if c in held:
                res.duplicates += 1
                continue
            if t.content_count >= self.config.max_spans_per_trace:
                res.capped += 1
                continue
            held.append(c)
            t.content_count += 1
            t.last_ns = now
            t.bytes += c.size
            self._bytes += c.size
            res.accepted += 1
        self.stats.contents_late += res.late
        self.stats.contents_duplicates += res.duplicates
        self.stats.contents_capped += res.capped
        return res

    def _merged(self, t: _Trace, members: list[SpanRecord]) -> list[SpanRecord]:
        """``members`` with their content records merged in; the records leave the buffer."""
        if not t.contents:
            return members
        out = []
        for s in members:
            held = t.contents.pop(s.span_id, None)
            if held:
                self.stats.contents_joined += len(held)
                t.content_count -= len(held)
                gone = sum(c.size for c in held)
                t.bytes -= gone
                self._bytes -= gone
                s = merge(s, held)
            out.append(s)
        return out

    def _make_room(self, batch: list[SpanRecord]) -> None:
        new_traces = len({s.trace_id for s in batch if s.trace_id not in self._traces})
        new_bytes = sum(s.size for s in batch)
        cfg = self.config

        def full() -> str:
            if len(self._traces) + new_traces > cfg.max_traces:
                return "max_traces"
            if self._bytes + new_bytes > cfg.max_bytes:
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
            raise CapacityError(f"assembler at {bound} ({len(self._traces)} traces, {self._bytes} bytes held)",
                                bound=bound, retry_after_s=max(1.0, cfg.root_grace))
        while bound and self._traces:
            self._close_trace(next(iter(self._traces)), Completion.EVICTED)
            bound = full()

    # ------------------------------------------------------------ completion
    def advance(self) -> int:
        """Complete every run that is due at the clock's time. Returns runs completed."""
        now = self._clock.now_ns()
        cfg = self.config
        grace = int(cfg.root_grace * NS)
        longest, idle = int(cfg.max_run_duration * NS), int(cfg.idle_timeout * NS)
        done = 0
        due: int | None = None
        for tid in list(self._traces):
            t = self._traces[tid]
            if now - t.first_ns >= longest:
                done += self._close_trace(tid, Completion.MAX_DURATION)
            elif t.root_arrivals and min(t.root_arrivals.values()) + grace <= now:
                done += self._close_due(tid, now - grace)
            elif not t.root_arrivals and now - t.last_ns >= idle:
                done += self._close_trace(tid, Completion.ORPHAN)
            t = self._traces.get(tid)
            if t is not None:  # what is left of it: when it is next due
                at = min(t.first_ns + longest,
                         min(t.root_arrivals.values()) + grace if t.root_arrivals else t.last_ns + idle)
                due = at if due is None or at < due else due
        self.due_ns = due
        return done

    def close_all(self, completion: Completion = Completion.COMPLETE, *, remember: bool = True) -> int:
        """End of input (offline) or shutdown (live): every run in flight completes now,
        ordered by first span start and, on a tie, by which trace arrived first, so
        reports list runs in the order faultgate lists the same traces. ``remember=False``
        when no span can follow (the end of a file): the decision cache, which is there to
        recognise late spans, is not filled (~1 ms of a gate file's ~27)."""
        runs: list[Run] = []
        for tid in list(self._traces):
            runs += self._take_runs(tid, completion, only_due_before=None, remember=remember)
        runs.sort(key=lambda r: r.spans[0].start_ns if r.spans else 0)  # stable: ties keep arrival order
        for r in runs:
            self._next.run_completed(r)
        return len(runs)

    def _close_due(self, tid: str, arrived_before: int) -> int:
        runs = self._take_runs(tid, Completion.GRACE, only_due_before=arrived_before)
        for r in runs:
            self._next.run_completed(r)
        return len(runs)

    def _close_trace(self, tid: str, completion: Completion) -> int:
        runs = self._take_runs(tid, completion, only_due_before=None)
        if completion is Completion.EVICTED:
            self.stats.evicted_runs += len(runs)
        for r in runs:
            self._next.run_completed(r)
        return len(runs)

    def _take_runs(self, tid: str, completion: Completion, only_due_before: int | None,
                   remember: bool = True) -> list[Run]:
        """Remove and return the runs of a trace: all of them, or (``only_due_before``) those
        whose root arrived before that time. Unattached spans go with an all-runs close,
        as one orphan run."""
        t = self._traces[tid]
        p = partition(t.spans)
        now = self._clock.now_ns()
        if only_due_before is not None:
            # candidates that are not run roots now (a nested agent, a span above every
            # agent) never will be: forget their arrival so the scan does not partition this
            # trace again on every tick until its real root is due
            for sid in [sid for sid in t.root_arrivals if sid not in p.runs]:
                del t.root_arrivals[sid]
        taken: list[Run] = []
        for root_id, members in p.runs.items():
            arrived = t.root_arrivals.get(root_id, 0)
            if only_due_before is not None and (not arrived or arrived > only_due_before):
                continue
            members = self._merged(t, members)
            root = next((s for s in members if s.span_id == root_id), t.spans[root_id])
            taken.append(Run(RunKey(tid, root_id), members, root, completion,
                             root_arrival_ns=arrived, closed_ns=now))
        closing_all = only_due_before is None
        if closing_all and (p.unattached or (p.outside and not taken)):
            # what no root claimed closes as one orphan run (spans above every agent, when
            # every agent run was already decided, join it rather than linger)
            c = Completion.ORPHAN if completion in (Completion.GRACE, Completion.COMPLETE) else completion
            members = self._merged(t, p.unattached or p.outside)
            taken.append(Run(RunKey(tid, ""), members, None, c, closed_ns=now))
        gone = [s for r in taken for s in r.spans]
        if taken and p.outside and (closing_all or (len(taken) == len(p.runs) and not p.unattached)):
            gone += p.outside  # no run is left that they could sit above: they leave with the last one
            taken[-1].outside_span_ids = frozenset(s.span_id for s in p.outside)
        self._forget(t, tid, taken, gone, remember)
        return taken

    def _forget(self, t: _Trace, tid: str, runs: list[Run], gone: list[SpanRecord], remember: bool = True) -> None:
        if remember:
            self._decided.decide(tid, [(r.key.root_span_id, r.spans) for r in runs])
            self.stats.decision_cache_evictions = self._decided.evictions
        for s in gone:
            if t.spans.pop(s.span_id, None) is not None:
                t.bytes -= s.size
                self._bytes -= s.size
                self._spans -= 1
            t.root_arrivals.pop(s.span_id, None)
        # roots no longer in the buffer (taken above) cannot be due again
        for sid in [sid for sid in t.root_arrivals if sid not in t.spans]:
            del t.root_arrivals[sid]
        if not t.spans:
            # content whose span never came (or came in another request that was refused)
            self.stats.contents_unjoined += t.content_count
            self._bytes -= sum(c.size for held in t.contents.values() for c in held)
            del self._traces[tid]
        else:
            # what is left waits for its own root; a fragment is an orphan once idle
            t.root_arrivals = {sid: at for sid, at in t.root_arrivals.items()
                               if t.spans[sid].is_agent or not t.spans[sid].parent_id}

