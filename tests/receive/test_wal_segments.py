"""The write-ahead log's files (receive/wal/segments.py), on the real file system: records
come back as written, a torn or corrupt tail is cut at the last good record and counted,
covered segments are deleted, a full log and a full disk refuse retryably."""
from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
import zlib
from pathlib import Path

import pytest

from faultgate_stream.model.errors import CapacityError, InputError
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.receive.wal.config import WalConfig
from faultgate_stream.receive.wal.segments import CHECKPOINT, HEAD, HEADER, MAGIC, REQUEST, VOID, Checkpoint, SegmentLog

MiB = 1024 * 1024


def _log(path: Path, **kw) -> tuple[SegmentLog, Telemetry]:
    t = Telemetry()
    return SegmentLog(WalConfig(dir=str(path), **kw), t), t


def _value(t: Telemetry, name: str, *labels: str) -> float:
    value = t.registry.get_sample_value(name + "_total", dict(zip(("op",), labels)) if labels else None)
    return value or 0.0


def _run_sync(log: SegmentLog) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    th = threading.Thread(target=log.sync_loop, args=(stop.is_set,), daemon=True)
    th.start()
    return th, stop


def test_requests_come_back_in_order_after_a_restart_less_the_voided_and_the_covered(tmp_path):
    log, _ = _log(tmp_path)
    assert log.open().requests == []
    th, stop = _run_sync(log)
    payloads = [os.urandom(100 + i) for i in range(6)]
    seqs = []
    for p in payloads:
        seq, ticket = log.append(p)
        log.wait(ticket)
        seqs.append(seq)
    log.mark(VOID, seqs[4])
    log.mark(CHECKPOINT, seqs[2], Checkpoint(seqs[2], seqs[2]).encode())   # the first two are covered
    stop.set()
    th.join(5)
    log.close()

    again, _ = _log(tmp_path)
    rec = again.open()
    assert rec.checkpoint.first == seqs[2]
    assert [e.seq for e in rec.requests] == [seqs[2], seqs[3], seqs[5]]
    assert [again.read(e) for e in rec.requests] == [payloads[2], payloads[3], payloads[5]]
    seq, _ = again.append(b"next")
    assert seq == seqs[-1] + 1   # sequences go on from where the log was
    again.close()


def test_a_checkpoint_covers_what_finished_out_of_order_and_the_last_one_stands(tmp_path):
    """Requests finish out of order (a run's children in one, its root in a later one): a
    checkpoint names the unfinished ones below the point it was read up to."""
    log, _ = _log(tmp_path, fsync="always")
    log.open()
    seqs = [log.append(f"request {i}".encode())[0] for i in range(8)]
    log.mark(CHECKPOINT, seqs[0], Checkpoint(seqs[0], seqs[3]).encode())   # an earlier one: superseded
    log.mark(CHECKPOINT, seqs[2], Checkpoint(seqs[2], seqs[6], frozenset({seqs[2], seqs[4]})).encode())
    log.close()
    again, _ = _log(tmp_path)
    rec = again.open()
    assert [e.seq for e in rec.requests] == [seqs[2], seqs[4], seqs[6], seqs[7]]
    assert [again.read(e) for e in rec.requests] == [b"request 2", b"request 4", b"request 6", b"request 7"]
    again.close()


def test_a_record_on_disk_is_laid_out_with_zlibs_crc32_so_logs_written_before_read_back(tmp_path):
    """The checksums are computed by the compiled core (``_native.wal_checksum``), the
    format is zlib's CRC-32 as before: a record checked here with the standard library's
    zlib, and a log written by hand with it replayed, payloads of many sizes."""
    log, _ = _log(tmp_path / "written", fsync="always")
    log.open()
    payload = os.urandom(300_000)
    seq, _ = log.append(payload)
    log.close()
    data = sorted((tmp_path / "written").glob("*.wal"))[0].read_bytes()[len(MAGIC):]
    length, got_seq, kind, payload_crc, head_crc = HEADER.unpack(data[:HEADER.size])
    assert (length, got_seq, kind) == (len(payload), seq, REQUEST)
    assert payload_crc == zlib.crc32(payload) and head_crc == zlib.crc32(data[:HEAD.size])
    assert data[HEADER.size:] == payload

    by_hand = tmp_path / "by-hand"
    by_hand.mkdir()
    payloads = [os.urandom(n) for n in (0, 1, 15, 16, 17, 63, 64, 65, 4096, 70_001)]
    records = []
    for i, p in enumerate(payloads, start=1):
        head = HEAD.pack(len(p), i, REQUEST, zlib.crc32(p))
        records.append(head + zlib.crc32(head).to_bytes(4, "little") + p)
    (by_hand / f"{1:020d}.wal").write_bytes(MAGIC + b"".join(records))
    again, t = _log(by_hand)
    rec = again.open()
    assert [again.read(e) for e in rec.requests] == payloads
    assert rec.cut_bytes == 0 and _value(t, "faultgate_wal_cut_tails") == 0
    again.close()


@pytest.mark.parametrize("damage", ["torn header", "torn payload", "flipped payload byte", "flipped header byte"])
def test_a_torn_or_corrupt_tail_is_cut_at_the_last_good_record_and_counted(tmp_path, damage):
    log, _ = _log(tmp_path, fsync="always")
    log.open()
    good = [log.append(os.urandom(500)) for _ in range(3)]
    log.append(os.urandom(500))
    log.close()
    seg = sorted(tmp_path.glob("*.wal"))[-1]
    data = bytearray(seg.read_bytes())
    last = len(data) - (HEADER.size + 500)
    if damage == "torn header":
        del data[last + 10:]
    elif damage == "torn payload":
        del data[-100:]
    elif damage == "flipped payload byte":
        data[-7] ^= 0xFF
    else:
        data[last + 5] ^= 0x01   # the sequence number: the header's own CRC catches it
    seg.write_bytes(bytes(data))

    again, t = _log(tmp_path)
    rec = again.open()
    assert [e.seq for e in rec.requests] == [s for s, _ in good]
    assert rec.cut_bytes == len(data) - last
    assert _value(t, "faultgate_wal_cut_tails") == 1
    assert _value(t, "faultgate_wal_cut_bytes") == len(data) - last
    assert seg.stat().st_size == last   # cut on disk: a second start finds nothing to cut
    again.close()
    third, t3 = _log(tmp_path)
    assert [e.seq for e in third.open().requests] == [s for s, _ in good]
    assert _value(t3, "faultgate_wal_cut_tails") == 0
    third.close()


def test_a_corrupt_record_in_an_older_segment_costs_only_the_rest_of_that_segment(tmp_path):
    log, _ = _log(tmp_path, fsync="always", max_bytes=64 * MiB, segment_bytes=1 * MiB)
    log.open()
    seqs = [log.append(os.urandom(300_000))[0] for _ in range(8)]   # 3 records a segment
    log.close()
    first = sorted(tmp_path.glob("*.wal"))[0]
    data = bytearray(first.read_bytes())
    data[len(MAGIC) + HEADER.size + 300_000 + HEADER.size + 10] ^= 0xFF   # the second record's payload
    first.write_bytes(bytes(data))
    again, _ = _log(tmp_path, max_bytes=64 * MiB, segment_bytes=1 * MiB)
    rec = again.open()
    found = [e.seq for e in rec.requests]
    assert found[0] == seqs[0] and seqs[1] not in found and seqs[-1] in found
    assert found == sorted(found)
    again.close()


def test_covered_segments_are_deleted_and_the_log_stays_in_its_bound(tmp_path):
    log, _ = _log(tmp_path, max_bytes=8 * MiB, segment_bytes=1 * MiB)
    log.open()
    th, stop = _run_sync(log)
    body = os.urandom(200_000)
    for _ in range(200):   # 40 MB through an 8 MiB log
        seq, ticket = log.append(body)
        log.wait(ticket)
        log.mark(CHECKPOINT, seq, Checkpoint(seq, seq).encode())   # everything before this one is covered
        assert log.sync()
        log.delete_covered(seq)
        assert log.bytes <= 8 * MiB
        assert sum(p.stat().st_size for p in tmp_path.glob("*.wal")) == log.bytes
    stop.set()
    th.join(5)
    log.close()
    assert len(list(tmp_path.glob("*.wal"))) <= 3


def test_a_full_log_refuses_retryably_until_a_checkpoint_frees_room(tmp_path):
    log, _ = _log(tmp_path, max_bytes=4 * MiB, segment_bytes=1 * MiB, fsync="off")
    log.open()
    body = os.urandom(300_000)
    seqs = []
    with pytest.raises(CapacityError) as refused:
        for _ in range(100):
            seqs.append(log.append(body)[0])
    assert refused.value.bound == "wal_full" and refused.value.retry_after_s > 0
    assert 10 <= len(seqs) <= 14
    log.mark(CHECKPOINT, seqs[-1], Checkpoint(seqs[-1], seqs[-1]).encode())
    log.delete_covered(seqs[-1])
    assert log.append(body)[0] == seqs[-1] + 1
    log.close()


def test_a_second_process_cannot_open_a_log_in_use(tmp_path):
    log, _ = _log(tmp_path)
    log.open()
    code = ("import sys; from faultgate_stream.model.telemetry import Telemetry; "
            "from faultgate_stream.receive.wal.config import WalConfig; "
            "from faultgate_stream.receive.wal.segments import SegmentLog; "
            f"SegmentLog(WalConfig(dir={str(tmp_path)!r}), Telemetry()).open()")
    out = subprocess.run([os.sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "in use by another process" in out.stderr
    log.close()
    again, _ = _log(tmp_path)   # released at close (and by the kernel when a holder dies)
    again.open()
    again.close()


def test_an_unwritable_directory_is_named_at_start(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    log, _ = _log(blocker / "wal")
    with pytest.raises(InputError, match="durability.wal.dir: cannot write"):
        log.open()


@pytest.fixture
def tiny_disk(tmp_path):
    """A 2 MiB tmpfs: a disk that really fills (ENOSPC from the kernel)."""
    mnt = tmp_path / f"disk-{uuid.uuid4().hex[:8]}"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here to fill a disk: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.parametrize("fsync", ["batch", "always", "off"])
def test_a_full_disk_refuses_retryably_is_counted_and_the_log_recovers_when_room_comes_back(tiny_disk, fsync):
    log, t = _log(tiny_disk / "wal", max_bytes=64 * MiB, segment_bytes=1 * MiB, fsync=fsync)
    log.open()
    th, stop = _run_sync(log) if fsync == "batch" else (None, None)
    body = os.urandom(100_000)
    seqs = []
    with pytest.raises(CapacityError) as refused:
        for _ in range(100):
            seq, ticket = log.append(body)
            log.wait(ticket)
            seqs.append(seq)
    assert refused.value.bound == "wal_error"
    assert _value(t, "faultgate_wal_errors", "write") + _value(t, "faultgate_wal_errors", "open") >= 1
    # room comes back (the covered segments deleted): the log takes requests again, once
    # its refusal window after a disk error has passed
    log.delete_covered(seqs[-1] + 1)
    time.sleep(1.1)
    seq, ticket = log.append(b"after")
    log.wait(ticket)
    if th is not None:
        stop.set()
        th.join(5)
    log.close()
    again, _ = _log(tiny_disk / "wal", max_bytes=64 * MiB, segment_bytes=1 * MiB)
    rec = again.open()
    assert rec.requests and again.read(rec.requests[-1]) == b"after"
    again.close()


def test_a_disk_already_full_at_start_opens_the_log_and_refuses_retryably_until_room_comes(tiny_disk):
    filler = tiny_disk / "filler"
    with pytest.raises(OSError):
        with filler.open("wb") as f:
            for _ in range(100):
                f.write(b"\0" * 1024 * 1024)
    log, t = _log(tiny_disk / "wal", max_bytes=64 * MiB, segment_bytes=1 * MiB, fsync="always")
    log.open()   # no exception: the service starts, and answers senders
    with pytest.raises(CapacityError) as refused:
        log.append(b"first")
    assert refused.value.bound == "wal_error"
    assert _value(t, "faultgate_wal_errors", "open") + _value(t, "faultgate_wal_errors", "write") >= 1
    filler.unlink()
    time.sleep(1.1)
    seq, _ = log.append(b"first")
    log.close()
    again, _ = _log(tiny_disk / "wal")
    assert [again.read(e) for e in again.open().requests] == [b"first"]
    again.close()
