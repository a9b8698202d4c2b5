"""The decision cache: which spans of a decided trace went with which run, kept compact.

A span that arrives after its run's verdict must be recognised as late (or as a retry of
one already decided), so the assembler remembers, per decided trace, each span id with the
root span id of its run, and the parents those spans named that never arrived. Tens of
thousands of traces stay here for the life of the process, so the shape matters twice:

- **Memory.** A dict of 16-character id strings cost ~1,800 B per 16-span trace
  (tracemalloc). Here a trace whose ids are lowercase hex (every OTLP id: ``read/ids.py``)
  is one ``bytearray`` of 17-byte records, kind (``s`` a span, ``p`` a parent that never
  arrived), span id and root id, 8 bytes each: ~490 B for the same trace.
- **Garbage collection.** A ``bytearray`` holds no references, so the collector never
  tracks it; the per-trace ``NamedTuple`` before it was tracked (a tuple subclass is never
  untracked), and full collections walked 25,000 of them in a long-running service.

A trace with other ids (offline formats name spans as they like) or with more than
``PACKED_MAX`` records (a bounded linear search) is kept as two dicts instead. Both forms
answer the same questions; ``bytes`` counts what each costs, ``assemble.decision_cache``
and ``assemble.decision_cache_bytes`` bound them, and ``evictions`` counts what went.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

_HEX = "0123456789abcdef"
RECORD = 17                      # kind, span id, root span id
SPAN, PARENT = 0x73, 0x70        # b"s", b"p"
NO_ROOT = bytes(8)               # the root of an orphan run ("": it never arrived); all-zero ids are invalid in OTLP
# Records a packed trace holds before it becomes dicts: a lookup searches its records (a
# 512-record search is ~1 us), so a trace that late spans keep growing stays O(1).
PACKED_MAX = 512
# Bytes a packed trace costs beyond its records: the cache's slot and link, the trace id
# string, the bytearray's header and spare room (tracemalloc, CPython 3.11: 491 B for a
# 16-span trace, 272 of them records).
PACKED_TRACE_BYTES = 220
# ... and a record kept in the dicts: a dict slot and a 16-character id string (the root's
# is shared); ~65 bytes each by sys.getsizeof, ~40 the slot.
WIDE_ENTRY_BYTES = 170


class _Wide:
    """A trace kept as dicts: span id -> root span id, and parent id -> root span id."""

    __slots__ = ("spans", "parents")

    def __init__(self) -> None:
        self.spans: dict[str, str] = {}
        self.parents: dict[str, str] = {}


def _packable(ids: Iterable[str]) -> bool:
    ids = list(ids)
    return all(len(i) == 16 for i in ids) and not "".join(ids).strip(_HEX)


def _key(kind: int, span_id: str) -> bytes | None:
    if len(span_id) != 16 or span_id.strip(_HEX):
        return None
    return bytes((kind,)) + bytes.fromhex(span_id)


def _find(packed: bytearray, key: bytes) -> str | None:
    at = packed.find(key)
    while at >= 0 and at % RECORD:  # a match across two fields: search on
        at = packed.find(key, at + 1)
    if at < 0:
        return None
    root = bytes(packed[at + 9:at + RECORD])
    return "" if root == NO_ROOT else root.hex()


def _record(kind: int, span_id: str, root: str) -> str:
    return f"{kind:02x}{span_id}{root or '0' * 16}"


class DecisionCache:
    """Decided traces, oldest first, bounded by count and by bytes."""

    def __init__(self, max_traces: int, max_bytes: int) -> None:
        self.max_traces = max_traces
        self.max_bytes = max_bytes
        self._traces: OrderedDict[str, bytearray | _Wide] = OrderedDict()
        self.bytes = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._traces)

    @property
    def traces(self) -> OrderedDict[str, bytearray | _Wide]:
        """Read-only: the ingestion loop asks ``trace_id in traces`` for every span."""
        return self._traces

    def run_of(self, trace_id: str, span_id: str) -> str | None:
        """The root span id of the run this span was decided in, or None."""
        return self._lookup(trace_id, span_id, SPAN)

    def named_by(self, trace_id: str, span_id: str) -> str | None:
        """The run whose decided spans named this span as their parent (it never came)."""
        return self._lookup(trace_id, span_id, PARENT)

    def _lookup(self, trace_id: str, span_id: str, kind: int) -> str | None:
        entry = self._traces.get(trace_id)
        if entry is None:
            return None
        if type(entry) is _Wide:
            return (entry.spans if kind == SPAN else entry.parents).get(span_id)
        key = _key(kind, span_id)
        return _find(entry, key) if key is not None else None

    def decide(self, trace_id: str, runs: Iterable[tuple[str, list]]) -> None:
        """Remember the spans of runs just decided (``(root span id, spans)``), and the
        parents they named that are not among the decided spans."""
        runs = list(runs)
        spans = [(s.span_id, root) for root, members in runs for s in members]
        known = {sid for sid, _ in spans}
        parents: dict[str, str] = {}
        for root, members in runs:
            for s in members:
                if s.parent_id and s.parent_id not in known:
                    parents.setdefault(s.parent_id, root)
        self._add(trace_id, spans, list(parents.items()))
        self.trim(keep=trace_id)

    def late(self, trace_id: str, span_id: str, root: str) -> None:
        """Remember a late span of a decided run (its children are late too)."""
        self._add(trace_id, [(span_id, root)], [])
        if self.bytes > self.max_bytes:
            self.trim(keep=trace_id)

    def _add(self, trace_id: str, spans: list[tuple[str, str]], parents: list[tuple[str, str]]) -> None:
        entry = self._traces.get(trace_id)
        if entry is None:
            entry = self._traces[trace_id] = bytearray()
            self.bytes += PACKED_TRACE_BYTES
        else:
            # an id already remembered keeps its first run; a parent that was decided
            # itself is a span, not a missing parent
            spans = [(sid, r) for sid, r in spans if self.run_of(trace_id, sid) is None]
            parents = [(sid, r) for sid, r in parents
                       if self.run_of(trace_id, sid) is None and self.named_by(trace_id, sid) is None]
        if not spans and not parents:
            return
        if type(entry) is bytearray:
            ids = [sid for sid, _ in spans] + [sid for sid, _ in parents] + list({r for _, r in spans + parents if r})
            if len(entry) // RECORD + len(spans) + len(parents) <= PACKED_MAX and _packable(ids):
                entry += bytes.fromhex("".join([_record(SPAN, sid, r) for sid, r in spans]
                                               + [_record(PARENT, sid, r) for sid, r in parents]))
                self.bytes += RECORD * (len(spans) + len(parents))
                return
            entry = self._widen(trace_id, entry)
        for sid, r in spans:
            entry.spans.setdefault(sid, r)
        for sid, r in parents:
            entry.parents.setdefault(sid, r)
        self.bytes += WIDE_ENTRY_BYTES * (len(spans) + len(parents))

    def _widen(self, trace_id: str, packed: bytearray) -> _Wide:
        wide = _Wide()
        for at in range(0, len(packed), RECORD):
            sid = bytes(packed[at + 1:at + 9]).hex()
            root = bytes(packed[at + 9:at + RECORD])
            (wide.spans if packed[at] == SPAN else wide.parents)[sid] = "" if root == NO_ROOT else root.hex()
        n = len(packed) // RECORD
        self.bytes += (WIDE_ENTRY_BYTES - RECORD) * n
        self._traces[trace_id] = wide
        return wide

    def _cost(self, entry: bytearray | _Wide) -> int:
        if type(entry) is _Wide:
            return PACKED_TRACE_BYTES + WIDE_ENTRY_BYTES * (len(entry.spans) + len(entry.parents))
        return PACKED_TRACE_BYTES + len(entry)

    def trim(self, keep: str | None = None) -> None:
        """Forget the oldest decided traces while over either bound. The trace being added
        to is forgotten last: its own late spans may be what filled the cache, and it then
        goes too rather than grow past the bound."""
        while self._traces and (len(self._traces) > self.max_traces or self.bytes > self.max_bytes):
            tid = next(iter(self._traces))
            if tid == keep and len(self._traces) > 1:
                self._traces.move_to_end(tid)
                continue
            self.bytes -= self._cost(self._traces.pop(tid))
            self.evictions += 1
