"""The log on disk: a directory of append-only segment files, each record checksummed.

Why a segment file and not an embedded store: ``bench/wal_store.py`` drove SQLite in WAL
mode (synchronous=FULL), LMDB (PyPI ``lmdb`` 3.0) and a segment file the way the service
drives its log (8 requests in flight, 290 KB each, 166 a second: the live bench's 48 MB/s,
group commit, covered data deleted), interleaved, on this machine's disk: the segment file
kept up with all of it (p50 1.5-1.8 ms, p99 49-72 ms, 2.0-2.5 CPU ms a MB); LMDB with 58%
(p99 1.3-2.6 s, 2.4-2.8 CPU ms a MB); SQLite with 24% (p99 2.1-2.5 s, 9.0-9.7 CPU ms a MB).
A log is the one shape a database's pages and B-tree do not help: appends at the end,
reads only at start, deletion from the front; both stores write each request twice (a
journal and pages) and sync more than once a commit. What an embedded store would give,
this file gives as follows:

- every record carries a CRC-32 of its payload and one of its header (zlib's CRC-32,
  computed by the compiled core: ``_native.wal_checksum``, seven times zlib's speed), so a
  torn or corrupt record is found, never replayed; the scan at start cuts each segment at its
  first bad record (``truncate``), counts the bytes cut, and keeps the good ones;
- durability is ``fdatasync`` of the segment (and of the directory after a segment is
  created), made by one thread for every record written while the last sync ran;
- a segment is deleted whole once a durable checkpoint covers every request in it.

Record layout (little-endian): payload length u32, sequence u64, kind u8, payload CRC-32
u32, header CRC-32 u32 (of the 17 bytes before it), then the payload. ``sequence`` numbers
the requests; a void record carries the sequence it voids. A checkpoint carries the first
request not finished (everything below it is covered) and, as its payload, the sequence
read up to (``through``: everything from it on is uncovered) and the unfinished requests
between the two, as u64s: requests finish out of order (runs interleave in requests), and
a replay must re-read only those, or it would decide again a run it finished, from a part.
"""
from __future__ import annotations

import errno
import fcntl
import os
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from faultgate_stream._native import wal_checksum
from faultgate_stream.model.errors import BoundError, CapacityError, InputError
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.receive.wal.config import WalConfig

log = structlog.get_logger("faultgate_stream.receive.wal")

MAGIC = b"FGWAL\x001\n"            # a segment's first 8 bytes: format 1
HEAD = struct.Struct("<IQBI")      # payload length, sequence, kind, payload crc32
HEADER = struct.Struct("<IQBII")   # ... and the crc32 of the 17 bytes above
REQUEST, VOID, CHECKPOINT = 1, 2, 3
LOGS, LOGS_JSON = 4, 5             # logs requests (GenAI content), protobuf or OTLP/JSON: requests too
REQUESTS = frozenset({REQUEST, LOGS, LOGS_JSON})
SUFFIX = ".wal"
# After a failed write or sync the log refuses for this long before trying the disk again,
# so a dead disk costs a retry a second per sender, not a failed system call per request.
RETRY_AFTER_S = 1.0
# An acknowledgement waits at most this long for its sync: a disk that hangs (or a sync
# thread that died) costs the sender a retryable refusal, never a handler held for ever.
SYNC_WAIT_S = 10.0


def _record(kind: int, seq: int, payload: bytes, payload_crc: int | None = None) -> bytes:
    head = HEAD.pack(len(payload), seq, kind, wal_checksum(payload) if payload_crc is None else payload_crc)
    return head + wal_checksum(head).to_bytes(4, "little")


@dataclass(slots=True)
class Segment:
    number: int
    path: Path
    size: int
    high: int = 0     # the highest request sequence any record in it is about


@dataclass(slots=True)
class Entry:
    """A request found at start: where its payload is."""
    seq: int
    segment: Segment
    offset: int        # of the payload
    length: int
    kind: int = REQUEST


@dataclass(frozen=True, slots=True)
class Checkpoint:
    first: int = 0                  # requests below it are covered
    through: int = 0                # requests from it on are not
    unfinished: frozenset[int] = frozenset()   # those between the two that are not covered

    def covers(self, seq: int) -> bool:
        return seq < self.first or (seq < self.through and seq not in self.unfinished)

    def encode(self) -> bytes:
        return struct.pack(f"<{1 + len(self.unfinished)}Q", self.through, *sorted(self.unfinished))

    @classmethod
    def decode(cls, first: int, payload: bytes) -> Checkpoint:
        if len(payload) < 8 or len(payload) % 8:   # never written so: it covers nothing past ``first``
            return cls(first, first)
        through, *unfinished = struct.unpack(f"<{len(payload) // 8}Q", payload)
        return cls(first, max(first, through), frozenset(unfinished))


@dataclass(slots=True)
class Recovered:
    checkpoint: Checkpoint
    requests: list[Entry] = field(default_factory=list)   # not covered, not voided, in order
    cut_bytes: int = 0
    cut_records: int = 0                # segments cut at a bad record


class SegmentLog:
    """Appends from any thread; ``sync_loop`` runs in one thread of its own (batch mode)."""

    def __init__(self, config: WalConfig, telemetry: Telemetry) -> None:
        self._cfg = config
        self._dir = Path(config.dir)
        self._t = telemetry
        self._fsync_seconds = telemetry["faultgate_wal_fsync_seconds"]
        self._appended = telemetry["faultgate_wal_appended_bytes"]
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)     # the sync thread waits on it
        self._synced = threading.Condition(self._lock)   # acknowledgements wait on it
        self._segments: list[Segment] = []
        self._fd = -1                    # the active (last) segment's
        self._retired: list[int] = []    # earlier segments' fds, closed once synced
        self._dir_dirty = False
        self._next_seq = 1
        self._bytes = 0
        self._written = 0                # records written, any kind: what a sync covers
        self._durable = 0                # records known to be on disk
        # (first, last) tickets whose sync failed: their waiters are refused even when a later
        # sync (of a new segment) moves ``_durable`` past them; the last few are enough,
        # since every waiter is woken by the failure
        self._failures: deque[tuple[int, int]] = deque(maxlen=64)
        self._refuse_until = 0.0
        self._closed = False
        self._lock_fd = -1

    # ------------------------------------------------------------ start
    def open(self) -> Recovered:
        """Scan every segment, cut torn or corrupt tails, delete what is covered."""
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self._dir / "LOCK", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise InputError(f"durability.wal.dir: cannot write to {self._dir} ({e.strerror or e})") from None
        try:
            # two processes appending to one log would interleave sequences and cover each
            # other's records; the kernel drops the lock when its holder dies, even by kill -9
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InputError(f"durability.wal.dir: {self._dir} is in use by another process "
                             "(each replica needs a directory of its own)") from None
        rec = Recovered(checkpoint=Checkpoint())
        entries: list[Entry] = []
        voided: set[int] = set()
        high = 0
        for number, path in sorted((int(p.name[:-len(SUFFIX)]), p) for p in self._dir.iterdir()
                                   if p.name.endswith(SUFFIX) and p.name[:-len(SUFFIX)].isdigit()):
            seg = Segment(number, path, 0)
            for kind, seq, offset, length in self._scan(seg, rec):
                if kind in REQUESTS:
                    entries.append(Entry(seq, seg, offset, length, kind))
                    high = max(high, seq)
                    seg.high = max(seg.high, seq)
                elif kind == VOID:
                    voided.add(seq)
                    seg.high = max(seg.high, seq)
                elif kind == CHECKPOINT:   # the last one written stands
                    rec.checkpoint = Checkpoint.decode(seq, self.read(Entry(seq, seg, offset, length)))
            self._segments.append(seg)
            self._bytes += seg.size
        self._next_seq = max(high + 1, rec.checkpoint.through, 1)
        rec.requests = sorted((e for e in entries if not rec.checkpoint.covers(e.seq) and e.seq not in voided),
                              key=lambda e: e.seq)
        if rec.cut_bytes:
            self._t["faultgate_wal_cut_bytes"].inc(rec.cut_bytes)
            self._t["faultgate_wal_cut_tails"].inc(rec.cut_records)
        with self._lock:
            self._delete_covered(rec.checkpoint.first)
            try:
                self._open_segment()
            except CapacityError:
                pass   # a full or failing disk at start: counted; appends refuse, and retry it, until it works
        return rec

    def _scan(self, seg: Segment, rec: Recovered) -> Iterator[tuple[int, int, int, int]]:
        """(kind, sequence, payload offset, payload length) of each good record; the file is
        cut at the first bad one."""
        with open(seg.path, "rb+") as f:
            size = os.fstat(f.fileno()).st_size
            good = 0
            if f.read(len(MAGIC)) == MAGIC:
                good = pos = len(MAGIC)
                while pos < size:
                    raw = f.read(HEADER.size)
                    if len(raw) < HEADER.size:
                        break
                    length, seq, kind, payload_crc, head_crc = HEADER.unpack(raw)
                    if wal_checksum(raw[:HEAD.size]) != head_crc or pos + HEADER.size + length > size:
                        break
                    payload = f.read(length)
                    if wal_checksum(payload) != payload_crc:
                        break
                    pos += HEADER.size + length
                    good = pos
                    yield kind, seq, pos - length, length
            if good < size:
                # a torn tail (the process died mid-write) or a corrupt record: everything from
                # it on in this segment is cut; the records before it stand
                log.warning("wal_tail_cut", segment=seg.path.name, at=good, cut_bytes=size - good)
                rec.cut_bytes += size - good
                rec.cut_records += 1
                f.truncate(good)
                os.fsync(f.fileno())
            seg.size = good

    def read(self, entry: Entry) -> bytes:
        with open(entry.segment.path, "rb") as f:
            f.seek(entry.offset)
            return f.read(entry.length)

    # ------------------------------------------------------------ appending
    @property
    def bytes(self) -> int:
        return self._bytes

    @property
    def segments(self) -> int:
        return len(self._segments)

    @property
    def next_seq(self) -> int:
        with self._lock:
            return self._next_seq

    @property
    def opened(self) -> bool:
        return bool(self._segments)

    def append(self, payload: bytes, kind: int = REQUEST) -> tuple[int, int]:
        """Write a request; its (sequence, ticket) for ``wait``. Raises ``CapacityError``
        when the log is full or the disk failed (nothing is written then)."""
        size = HEADER.size + len(payload)
        if size > self._cfg.max_bytes:
            raise BoundError(f"a request of {len(payload)} bytes can never fit in the write-ahead log "
                             f"(durability.wal.max_bytes {self._cfg.max_bytes})", bound="wal_full")
        crc = wal_checksum(payload)   # outside the lock: the one per-byte cost
        with self._lock:
            self._check_writable()
            if self._bytes + size > self._cfg.max_bytes:
                raise CapacityError(f"the write-ahead log is full ({self._bytes} of {self._cfg.max_bytes} bytes, "
                                    "durability.wal.max_bytes): waiting for runs in flight to be decided and exported",
                                    bound="wal_full", retry_after_s=RETRY_AFTER_S)
            seq = self._next_seq
            self._write(_record(kind, seq, payload, crc), payload)
            self._next_seq = seq + 1
            self._segments[-1].high = seq
            if self._cfg.fsync == "always":
                self._sync_now()
            else:
                self._work.notify()
            return seq, self._written

    def mark(self, kind: int, seq: int, payload: bytes = b"") -> int:
        """A void or checkpoint record (never refused for room: both help free it); its ticket."""
        with self._lock:
            self._check_writable()
            self._write(_record(kind, seq, payload), payload)
            if kind == VOID:
                self._segments[-1].high = max(self._segments[-1].high, seq)
            if self._cfg.fsync == "always":
                self._sync_now()
            else:
                self._work.notify()
            return self._written

    def _check_writable(self) -> None:
        if self._closed:
            raise CapacityError("shutting down", bound="shutdown", retry_after_s=RETRY_AFTER_S)
        if self._refuse_until and time.monotonic() < self._refuse_until:
            raise CapacityError("the write-ahead log's disk failed; trying it again shortly", bound="wal_error",
                                retry_after_s=RETRY_AFTER_S)
        if self._fd < 0:
            self._open_segment()
        elif self._segments[-1].size >= self._cfg.segment_limit:
            self._open_segment()

    def _write(self, header: bytes, payload: bytes) -> None:
        seg = self._segments[-1]
        parts = [header, payload] if payload else [header]
        want = len(header) + len(payload)
        done = 0
        try:
            while done < want:
                if done == 0:
                    n = os.writev(self._fd, parts)
                else:
                    n = os.write(self._fd, (header + payload)[done:])
                if n <= 0:
                    raise OSError(errno.EIO, "short write")
                done += n
        except OSError as e:
            self._failed("write", e)
            # a partial record would be cut at the next start anyway; take it back now so that
            # records after it in this segment stay readable
            try:
                os.ftruncate(self._fd, seg.size)
            except OSError:
                self._retire()
            raise CapacityError(f"the write-ahead log could not write ({e.strerror or e})", bound="wal_error",
                                retry_after_s=RETRY_AFTER_S) from None
        seg.size += want
        self._bytes += want
        self._written += 1
        self._appended.inc(want)

    # ------------------------------------------------------------ durability
    def wait(self, ticket: int) -> None:
        """Return once record ``ticket`` is durable (at once unless ``fsync: batch``, where
        ``append`` already synced or never will); raise ``CapacityError`` when the sync
        that covered it failed."""
        if self._cfg.fsync != "batch":
            return
        deadline = time.monotonic() + SYNC_WAIT_S
        with self._synced:
            while True:
                if any(first <= ticket <= last for first, last in self._failures):
                    raise CapacityError("the write-ahead log could not sync to disk", bound="wal_error",
                                        retry_after_s=RETRY_AFTER_S)
                if self._durable >= ticket:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    self._t["faultgate_wal_errors"].labels("fsync").inc()
                    raise CapacityError(f"the write-ahead log's disk did not sync within {SYNC_WAIT_S:g}s",
                                        bound="wal_error", retry_after_s=RETRY_AFTER_S)
                self._synced.wait(left)

    def sync_loop(self, stopping: Callable[[], bool]) -> None:
        """Group commit: sync everything written since the last sync, wake its waiters.
        Returns when ``stopping()`` and nothing is left to sync."""
        while True:
            with self._work:
                while self._written <= self._durable and not stopping():
                    self._work.wait(0.5)
                if self._written <= self._durable:
                    return
                target, fds, retired, dir_dirty = self._take_sync()
            ok = self._sync(fds, dir_dirty)
            for fd in retired:
                _close(fd)
            with self._synced:
                if ok:
                    self._durable = max(self._durable, target)
                else:
                    self._failures.append((self._durable + 1, target))
                    self._durable = max(self._durable, target)   # settled: refused, not pending
                    self._retire()
                self._synced.notify_all()

    def _take_sync(self) -> tuple[int, list[int], list[int], bool]:
        """What a sync must cover (under the lock): every fd written since the last one."""
        fds = self._retired + ([self._fd] if self._fd >= 0 else [])
        retired, self._retired = self._retired, []
        dir_dirty, self._dir_dirty = self._dir_dirty, False
        return self._written, fds, retired, dir_dirty

    def sync(self) -> bool:
        """Make everything written so far durable, from the caller's thread (checkpoints)."""
        if self._cfg.fsync == "off":
            return True
        with self._lock:
            target, fds, retired, dir_dirty = self._take_sync()
        ok = self._sync(fds, dir_dirty)
        for fd in retired:
            _close(fd)
        if ok:
            with self._synced:
                self._durable = max(self._durable, target)
                self._synced.notify_all()
        return ok

    def _sync_now(self) -> None:
        """``fsync: always``: under the lock, the record just written and nothing else pending."""
        target, fds, retired, dir_dirty = self._take_sync()
        ok = self._sync(fds, dir_dirty)
        for fd in retired:
            _close(fd)
        if not ok:
            self._retire()
            raise CapacityError("the write-ahead log could not sync to disk", bound="wal_error",
                                retry_after_s=RETRY_AFTER_S)
        self._durable = target

    def _sync(self, fds: list[int], dir_dirty: bool) -> bool:
        started = time.perf_counter()
        try:
            for fd in fds:
                os.fdatasync(fd)
            if dir_dirty:
                _fsync_dir(self._dir)
        except OSError as e:
            self._failed("fsync", e)
            return False
        self._fsync_seconds.observe(time.perf_counter() - started)
        return True

    # ------------------------------------------------------------ segments
    def _open_segment(self) -> None:
        """A new active segment (under the lock). On failure the log refuses for a while."""
        number = self._segments[-1].number + 1 if self._segments else 1
        path = self._dir / f"{number:020d}{SUFFIX}"
        try:
            # O_APPEND: after a failed write is truncated away, the next one lands at the new end
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as e:
            self._failed("open", e)
            raise CapacityError(f"the write-ahead log could not open a segment ({e.strerror or e})",
                                bound="wal_error", retry_after_s=RETRY_AFTER_S) from None
        try:
            os.write(fd, MAGIC)
        except OSError as e:
            _close(fd)
            _unlink(path)
            self._failed("write", e)
            raise CapacityError(f"the write-ahead log could not write ({e.strerror or e})", bound="wal_error",
                                retry_after_s=RETRY_AFTER_S) from None
        self._retire()
        self._fd = fd
        self._segments.append(Segment(number, path, len(MAGIC), self._next_seq - 1))
        self._bytes += len(MAGIC)
        self._dir_dirty = True

    def _retire(self) -> None:
        if self._fd >= 0:
            if self._cfg.fsync == "batch":
                self._retired.append(self._fd)   # the sync thread syncs it, then closes it
            else:
                _close(self._fd)
            self._fd = -1

    def _failed(self, op: str, error: OSError) -> None:
        self._t["faultgate_wal_errors"].labels(op).inc()
        self._refuse_until = time.monotonic() + RETRY_AFTER_S
        log.error("wal_disk_error", op=op, error=error.strerror or str(error), errno=errno.errorcode.get(error.errno or 0, ""))

    def delete_covered(self, checkpoint: int) -> None:
        with self._lock:
            self._delete_covered(checkpoint)

    def _delete_covered(self, checkpoint: int) -> None:
        """Delete every segment but the active one whose records are all below ``checkpoint``
        (the first request not finished, which must be durable already: the active segment
        holds it)."""
        keep = []
        for seg in self._segments[:-1]:
            if seg.high < checkpoint:
                try:
                    seg.path.unlink()
                except FileNotFoundError:
                    pass
                except OSError as e:
                    self._failed("delete", e)
                    keep.append(seg)
                    continue
                self._bytes -= seg.size
            else:
                keep.append(seg)
        self._segments = keep + self._segments[-1:]

    def close(self) -> None:
        """Refuse further writes, sync and close (after the sync thread has stopped)."""
        with self._lock:
            self._closed = True
            target, fds, _, dir_dirty = self._take_sync()
            self._fd = -1
            self._work.notify_all()
        ok = self._cfg.fsync == "off" or self._sync(fds, dir_dirty)
        for fd in fds:
            _close(fd)
        if self._lock_fd >= 0:
            _close(self._lock_fd)   # and with it the flock
            self._lock_fd = -1
        with self._synced:   # nobody waits past the close
            if not ok:
                self._failures.append((self._durable + 1, target))
            self._durable = max(self._durable, target)
            self._synced.notify_all()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
