"""Which store the write-ahead log is built on: SQLite in WAL mode (the standard library),
LMDB (PyPI ``lmdb``, when installed) and a plain segment file with a CRC-32 per record,
each driven the way the service drives its log, in one run.

    .venv/bin/python bench/wal_store.py [--rate REQUESTS_PER_S] [--seconds S] [--bytes B] [--writers K]

``K`` writer threads each append a request's bytes and wait until it is durable, at a fixed
aggregate rate (default: the live bench's export-on maximum, ~85k spans/s of 570-byte spans
in 512-span requests: 166 requests/s of ~290 KB, 48 MB/s); one commit thread makes every
record appended since its last commit durable at once (group commit: one fsync for all of
them). What was appended more than a second ago is deleted as covered, as checkpoints
would, so each store runs at a steady size. Per store, printed: the commit latency an
acknowledgement waits (p50, p99), commits per second, and the process CPU each megabyte
costs (what the service would lose on its one core).

The last line is ``RESULT`` with each store's p99 and CPU per MB. Standard library (and
``lmdb`` if it is installed).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import struct
import tempfile
import threading
import time
import zlib
from pathlib import Path

HEADER = struct.Struct("<IIQ")   # length, crc32, sequence number
SEGMENT_BYTES = 64 * 1024 * 1024


class Segments:
    """A directory of append-only files; each record is length, CRC-32, sequence, bytes.
    A segment is deleted whole once every record in it is covered."""

    name = "segment"

    def __init__(self, path: Path) -> None:
        self._dir = path
        path.mkdir()
        self._segments: list[tuple[int, Path]] = []   # (first seq, path)
        self._fd = -1
        self._size = 0

    def _rotate(self, seq: int) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        p = self._dir / f"{seq:020d}.wal"
        self._fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._segments.append((seq, p))
        self._size = 0
        dfd = os.open(self._dir, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)

    def commit(self, batch: list[tuple[int, bytes]]) -> None:
        if self._fd < 0 or self._size >= SEGMENT_BYTES:
            self._rotate(batch[0][0])
        parts = []
        for seq, body in batch:
            parts.append(HEADER.pack(len(body), zlib.crc32(body), seq))
            parts.append(body)
        self._size += os.writev(self._fd, parts)
        os.fdatasync(self._fd)

    def delete_below(self, seq: int) -> None:
        while len(self._segments) > 1 and self._segments[1][0] <= seq:
            os.unlink(self._segments.pop(0)[1])

    def close(self) -> None:
        os.close(self._fd)


class Sqlite:
    name = "sqlite"

    def __init__(self, path: Path) -> None:
        path.mkdir()
        self._db = sqlite3.connect(path / "wal.db", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("CREATE TABLE records (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        self._commits = 0

    def commit(self, batch: list[tuple[int, bytes]]) -> None:
        self._db.execute("BEGIN")
        self._db.executemany("INSERT INTO records VALUES (?, ?)", batch)
        self._db.execute("COMMIT")

    def delete_below(self, seq: int) -> None:
        self._db.execute("DELETE FROM records WHERE seq < ?", (seq,))
        # the WAL file grows until a checkpoint copies it into the database: keep it bounded
        self._commits += 1
        if self._commits % 10 == 0:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        self._db.close()


class Lmdb:
    name = "lmdb"

    def __init__(self, path: Path) -> None:
        import lmdb

        self._env = lmdb.open(str(path), map_size=8 << 30, sync=True, metasync=True, writemap=False)

    def commit(self, batch: list[tuple[int, bytes]]) -> None:
        with self._env.begin(write=True) as txn:
            for seq, body in batch:
                txn.put(seq.to_bytes(8, "big"), body, append=True)

    def delete_below(self, seq: int) -> None:
        with self._env.begin(write=True) as txn:
            cur = txn.cursor()
            if cur.first():
                while cur.key() and int.from_bytes(cur.key(), "big") < seq:
                    if not cur.delete():
                        break

    def close(self) -> None:
        self._env.close()


def drive(store, rate: float, seconds: float, body: bytes, writers: int) -> dict[str, float]:
    cv = threading.Condition()
    pending: list[tuple[int, bytes]] = []
    durable = [0]
    seq = [0]
    stop = threading.Event()
    latencies: list[float] = []
    commits = [0]
    appended_at: list[tuple[float, int]] = []

    def committer() -> None:
        while True:
            with cv:
                while not pending and not stop.is_set():
                    cv.wait(0.05)
                if not pending and stop.is_set():
                    return
                batch = pending[:]
                pending.clear()
            store.commit(batch)
            commits[0] += 1
            now = time.monotonic()
            while appended_at and now - appended_at[0][0] > 1.0:
                covered = appended_at.pop(0)[1]
                store.delete_below(covered)
            with cv:
                durable[0] = batch[-1][0]
                cv.notify_all()

    interval = writers / rate
    start = time.monotonic()
    end = start + seconds

    def writer(offset: float) -> None:
        at = start + offset
        while True:
            now = time.monotonic()
            if at > now:
                time.sleep(at - now)
            if time.monotonic() >= end:
                return
            t0 = time.monotonic()
            with cv:
                seq[0] += 1
                mine = seq[0]
                pending.append((mine, body))
                appended_at.append((t0, mine))
                cv.notify_all()
                while durable[0] < mine:
                    cv.wait()
            latencies.append(time.monotonic() - t0)
            at += interval

    c = threading.Thread(target=committer)
    cpu0 = sum(os.times()[:2])
    c.start()
    ws = [threading.Thread(target=writer, args=(i * interval / writers,)) for i in range(writers)]
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    stop.set()
    c.join()
    cpu = sum(os.times()[:2]) - cpu0
    store.close()
    lat = sorted(latencies)
    mb = len(lat) * len(body) / 1e6
    return {"p50_ms": statistics.median(lat) * 1e3, "p99_ms": lat[int(0.99 * (len(lat) - 1))] * 1e3,
            "requests_per_s": len(lat) / seconds, "commits_per_s": commits[0] / seconds,
            "cpu_ms_per_mb": cpu / mb * 1e3 if mb else float("nan"), "mb_per_s": mb / seconds}


def append_cost(body: bytes, n: int) -> None:
    """The service's own log (receive/wal/segments.py), one request at a time: process CPU
    (user and system, every thread: the crc32, the write into the page cache, the sync
    thread's fdatasync and wake-ups) per request and per span of the live bench's 512."""
    from faultgate_stream.model.telemetry import Telemetry
    from faultgate_stream.receive.wal.config import WalConfig
    from faultgate_stream.receive.wal.segments import SegmentLog

    for fsync in ("off", "batch", "always"):
        path = Path(tempfile.mkdtemp(prefix="faultgate-wal-cost-", dir=os.environ.get("WAL_BENCH_DIR")))
        try:
            log = SegmentLog(WalConfig(dir=str(path), fsync=fsync, max_bytes=64 << 30), Telemetry())
            log.open()
            stop = threading.Event()
            syncer = threading.Thread(target=log.sync_loop, args=(stop.is_set,))
            if fsync == "batch":
                syncer.start()
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                log.wait(log.append(body)[1])
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            stop.set()
            if fsync == "batch":
                syncer.join()
            log.close()
        finally:
            shutil.rmtree(path, ignore_errors=True)
        print(f"segments.py fsync={fsync:<6} CPU {cpu / n * 1e6:6.0f} us a request = {cpu / n / 512 * 1e6:.2f} us "
              f"a span of 512; wall {wall / n * 1e3:.2f} ms a request (one at a time: no group to share a sync)")
    from faultgate_stream._native import wal_checksum

    for name, checksum in (("the log's checksum (_native.wal_checksum)", wal_checksum),
                           ("zlib.crc32, the same CRC-32, which the log used before", zlib.crc32)):
        cpu0 = time.process_time()
        for _ in range(n):
            checksum(body)
        print(f"{name}: {(time.process_time() - cpu0) / n * 1e6:.0f} us a request")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=166.0, help="requests a second (default 166)")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--bytes", type=int, default=290_000, help="bytes a request (default 290000: 512 spans)")
    p.add_argument("--writers", type=int, default=8, help="requests in flight (default 8, as bench/live.py)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--append-cost", type=int, metavar="N", help="instead: the CPU the service's own log costs a "
                   "request, over N requests one at a time, with fsync off, batch and always")
    args = p.parse_args()
    if args.append_cost:
        append_cost(os.urandom(args.bytes), args.append_cost)
        return 0
    stores = [Segments, Sqlite]
    try:
        import lmdb  # noqa: F401
        stores.append(Lmdb)
    except ImportError:
        print("lmdb is not installed: measuring SQLite and the segment file only")
    body = os.urandom(args.bytes)  # incompressible, like nothing in particular: no store compresses
    results: dict[str, list[dict[str, float]]] = {s.name: [] for s in stores}
    root = Path(tempfile.mkdtemp(prefix="faultgate-wal-store-", dir=os.environ.get("WAL_BENCH_DIR")))
    try:
        for rnd in range(args.rounds):
            for s in stores:   # interleaved, so the shared disk's moods fall on each
                path = root / f"{s.name}-{rnd}"
                r = drive(s(path), args.rate, args.seconds, body, args.writers)
                shutil.rmtree(path, ignore_errors=True)
                results[s.name].append(r)
                print(f"round {rnd + 1} {s.name:<8} {r['requests_per_s']:7.1f} req/s {r['mb_per_s']:6.1f} MB/s "
                      f"{r['commits_per_s']:6.1f} commits/s  latency p50 {r['p50_ms']:6.2f} ms p99 {r['p99_ms']:7.2f} ms"
                      f"  CPU {r['cpu_ms_per_mb']:6.2f} ms/MB", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    parts = []
    for name, rs in results.items():
        p99 = statistics.median(r["p99_ms"] for r in rs)
        cpu = statistics.median(r["cpu_ms_per_mb"] for r in rs)
        rate = statistics.median(r["requests_per_s"] for r in rs)
        print(f"{name:<8} median of {len(rs)}: {rate:.1f} req/s, p99 {p99:.2f} ms, CPU {cpu:.2f} ms/MB")
        parts.append(f"{name}_p99_ms={p99:.1f} {name}_cpu_ms_per_mb={cpu:.2f}")
    print("RESULT " + " ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
