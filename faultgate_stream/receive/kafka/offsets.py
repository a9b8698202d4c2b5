"""Which offset a partition may commit: the low-water mark of messages not yet finished.

A message is *finished* when every run it brought spans to is decided and everything that
deciding queued for export (its spans, the annotated root, evaluation records) has left
the export queue. Finishing is checked in two steps, because export is asynchronous:

1. no trace of the message is still held by the assembler (all its runs decided; the
   verdict path queued the root before the assembler let the trace go), then
2. the export queue has passed the *mark* taken at that moment (every item queued before
   it was sent or failed for good).

Offsets are committed as the first unfinished message's offset (Kafka's "next to read"),
so a restarted replica re-reads exactly what was not finished. Tracking is per trace, not
per run: a trace with one run decided and another in flight keeps its messages pending,
which can only re-read more, never less.

The commit point never cuts through a trace: finished messages are let go only up to a
point that no trace read so far has messages on both sides of. Otherwise a new owner
would re-read that trace from its later messages alone (a run's root without its tools)
and decide it again on that part.

Owned by the source's one consumer thread; no locking here.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

TopicPartition = tuple[str, int]


class Progress(Protocol):
    """What the source asks the later stages (wired in ``faultgate_stream.durable``)."""

    def undecided(self, trace_ids: Iterable[str]) -> bool:
        """True while any of these traces has runs in flight in the assembler."""

    def export_mark(self) -> int:
        """A mark covering everything queued for export so far."""

    def exported(self, mark: int) -> bool:
        """True once everything queued up to ``mark`` was sent, or failed for good."""

    def drop(self, trace_ids: Iterable[str]) -> int:
        """Forget these traces' runs in flight without a verdict (a handover); the spans
        dropped, for the count."""


@dataclass(slots=True)
class _Message:
    offset: int
    traces: tuple[str, ...]
    replay: bool              # read below the lease an earlier owner left: may have had verdicts
    mark: int | None = None   # set once its traces are decided: the export mark to wait for


@dataclass(slots=True)
class PartitionLog:
    pending: deque[_Message] = field(default_factory=deque)
    next_offset: int | None = None   # one past the last message read; None before the first
    committed: int | None = None     # the offset last committed by us
    # trace id -> offset of its last pending message: the commit point may pass a trace's
    # messages only all together (bounded by the pending messages)
    last_of: dict[str, int] = field(default_factory=dict)

    def safe_offset(self) -> int | None:
        """The offset to commit: the first unfinished message, else one past the last read."""
        return self.pending[0].offset if self.pending else self.next_offset

    def traces(self) -> set[str]:
        return {t for m in self.pending for t in m.traces}


class OffsetTracker:
    def __init__(self) -> None:
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self.pending = 0   # messages read and not finished, all partitions

    def log(self, tp: TopicPartition) -> PartitionLog:
        log = self._logs.get(tp)
        if log is None:
            log = self._logs[tp] = PartitionLog()
        return log

    def partitions(self) -> list[TopicPartition]:
        return list(self._logs)

    def read(self, tp: TopicPartition, offset: int, trace_ids: Iterable[str], replay: bool = False) -> None:
        """A message was taken (its spans handed on) or settled (rejected: no traces)."""
        log = self.log(tp)
        message = _Message(offset, tuple(set(trace_ids)), replay)
        log.pending.append(message)
        for t in message.traces:
            log.last_of[t] = offset
        log.next_offset = offset + 1
        self.pending += 1

    def advance(self, progress: Progress, *, whole_traces: bool = True) -> list[_Message]:
        """Finish what can be finished, oldest first per partition; return the messages
        finished (so replay bookkeeping can forget them). ``whole_traces=False`` lets the
        finished prefix go whole, cutting through traces: for a reader that re-reads only
        the messages ``unfinished`` names (the write-ahead log), never a finished one."""
        finished: list[_Message] = []
        for log in self._logs.values():
            limit = self._first_unfinished(log, progress)
            # pop the finished prefix, but only as far as a cut that leaves no trace with
            # messages on both sides of it: the commit point is the new head, not `limit`
            cut, reach = 0, -1
            for i, m in enumerate(log.pending):
                if m.offset >= limit:
                    break
                if not whole_traces:
                    cut = i + 1
                    continue
                reach = max(reach, max((log.last_of[t] for t in m.traces), default=-1))
                after = log.pending[i + 1].offset if i + 1 < len(log.pending) else log.next_offset
                if after is not None and reach < after:
                    cut = i + 1
            for _ in range(cut):
                head = log.pending.popleft()
                for t in head.traces:
                    if log.last_of.get(t) == head.offset:
                        del log.last_of[t]
                self.pending -= 1
                finished.append(head)
        return finished

    @staticmethod
    def _first_unfinished(log: PartitionLog, progress: Progress) -> int:
        """The offset of the first message not finished (one past the last read if none).
        Every message up to the first undecided one gets its export mark now, not one per
        call: a mark taken later also covers what later verdicts queued meanwhile, so
        under steady load a message taken one call at a time would wait on export for
        ever newer items, and the commit would crawl one message per commit interval."""
        limit: int | None = None
        for m in log.pending:
            if m.mark is None:
                if m.traces and progress.undecided(m.traces):
                    return m.offset if limit is None else limit
                m.mark = progress.export_mark()
            if limit is None and not progress.exported(m.mark):
                limit = m.offset   # marks only grow along the log: nothing past it has left either
        if limit is not None:
            return limit
        return log.next_offset if log.next_offset is not None else 0

    def unfinished(self, tp: TopicPartition, progress: Progress) -> list[int]:
        """Offsets of every message of the partition not finished yet, in order (``advance``
        stops at the first). A message decided since it was read gets its export mark here;
        a mark taken out of order only covers more, so the first unfinished stays the first."""
        out = []
        for m in self.log(tp).pending:
            if m.mark is None:
                if m.traces and progress.undecided(m.traces):
                    out.append(m.offset)
                    continue
                m.mark = progress.export_mark()
            if not progress.exported(m.mark):
                out.append(m.offset)
        return out

    def remove(self, tp: TopicPartition) -> PartitionLog:
        """Stop tracking a partition (revoked or lost); its log, for the handover."""
        log = self._logs.pop(tp, PartitionLog())
        self.pending -= len(log.pending)
        return log
