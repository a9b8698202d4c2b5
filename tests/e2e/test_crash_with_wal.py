"""``kill -9`` without Kafka, with the write-ahead log on (``durability.wal``): nothing
acknowledged is lost. The load of tests/e2e/test_crash_without_kafka.py (which measures what
the same crash loses without the log), sent straight to a ``faultgate-stream serve``
subprocess over OTLP/gRPC, a real downstream collector writing files behind it. The service
is killed under load and started again on the same directory; also killed again while it
replays, and started on a log whose last write the crash tore. Figures (lost spans,
duplicates, replays counted, recovery time) are printed: run with ``-s`` (the README's
Durability section quotes them)."""
from __future__ import annotations

import socket
import time
from collections import Counter
from pathlib import Path

from tests.e2e.downstream import downstream_config
from tests.kafka.replicas import Load, Replica, downstream_keys, downstream_roots
from tests.peers import HOST, eventually, free_port, running_collector

RUNS = 1200
RATE = 60.0   # runs a second, each in two requests: the crash test's load


class Serve:
    """One ``faultgate-stream serve`` process at a time (tests/kafka/replicas.py's ``Replica``)
    on fixed ports and one WAL directory, its config rewritten before each start."""

    def __init__(self, tmp: Path, downstream: int, wal: Path) -> None:
        self.downstream, self.wal = downstream, wal
        self.grpc = free_port()
        self.replica = Replica("serve", tmp / "serve.yaml", tmp / "serve.out", free_port())
        self.stdout = self.replica.stdout

    def start(self, extra: str = "", root_grace: str = "500ms") -> float:
        self.replica.config.write_text(f"""
receive: {{grpc_endpoint: "{HOST}:{self.grpc}", http_endpoint: "", max_request_bytes: 4MiB}}
metrics: {{endpoint: "{HOST}:{self.replica.metrics_port}"}}
assemble: {{root_grace: {root_grace}, idle_timeout: 5s{extra}}}
export: {{endpoint: "{HOST}:{self.downstream}", retry_initial_interval: 200ms, retry_max_interval: 1s,
          retry_max_elapsed: 0s}}
durability: {{wal: {{dir: "{self.wal}", checkpoint_interval: 200ms}}}}
""")
        self.replica.start()
        return time.monotonic()

    def kill9(self) -> float:
        self.replica.kill9()
        return time.monotonic()

    def stop(self) -> None:
        self.replica.stop()

    def metric(self, name: str) -> float:
        return self.replica.metric(name)

    def listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex((HOST, self.grpc)) == 0

    def events(self, event: str) -> int:
        return self.stdout.read_text(errors="replace").count(f'"event": "{event}"')


def _decided(out: Path) -> set[str]:
    return {t for t, _, _ in downstream_roots(out)}


def _settled_keys(out: Path) -> set:
    return eventually(lambda: (k := downstream_keys(out)) == downstream_keys(out) and k, what="a settled file")


def test_kill_9_under_load_with_the_wal_loses_nothing_acknowledged(tmp_path):
    down, out = free_port(), tmp_path / "out"
    out.mkdir()
    with running_collector(downstream_config(down, out), tmp_path, name="downstream"):
        svc = Serve(tmp_path, down, tmp_path / "wal")
        try:
            svc.start()
            eventually(svc.listening, timeout=30, what="the service listening")
            load = Load(f"{HOST}:{svc.grpc}", RUNS, RATE)
            load.start()
            eventually(lambda: len(load.acked_runs) >= RUNS // 3, timeout=120, what="a third of the load")
            killed_at = svc.kill9()
            acked_before_kill = dict(load.acked_runs)
            time.sleep(1.0)
            restarted_at = svc.start()
            eventually(svc.listening, timeout=60, interval=0.05, what="the restarted service listening")
            up = time.monotonic() - restarted_at   # imports, the log's replay, the receivers
            eventually(lambda: set(acked_before_kill) <= _decided(out), timeout=120, interval=0.2,
                       what="every run acknowledged before the kill decided")
            recovery, since_kill = time.monotonic() - restarted_at, time.monotonic() - killed_at
            load.join(timeout=120)
            eventually(lambda: downstream_keys(out) >= load.acked, timeout=120,
                       what="every acknowledged span downstream")
            eventually(lambda: svc.metric("faultgate_wal_pending_requests") == 0, timeout=60,
                       what="everything checkpointed")
            replayed = svc.metric("faultgate_wal_replayed_verdicts_total")
            replayed_requests = svc.metric("faultgate_wal_replayed_requests_total")
            wal_seconds = svc.metric("faultgate_wal_recovery_seconds")
            wal_bytes = svc.metric("faultgate_wal_bytes")
        finally:
            svc.stop()
        keys = _settled_keys(out)
        roots = downstream_roots(out)
    per_run = Counter((t, s) for t, s, _ in roots)
    lost_spans = len(load.acked - keys)
    # the only failed calls are those made while no process listened (the sender retries those)
    assert all("UNAVAILABLE" in e for e in load.errors), load.errors[:3]
    assert lost_spans == 0
    assert set(load.acked_runs.items()) <= set(per_run)   # every acknowledged run decided, on its own root
    duplicates = sum(n - 1 for n in per_run.values())
    assert replayed_requests >= 1 and duplicates <= replayed
    assert wal_bytes < 64 * 1024 * 1024   # covered segments were deleted
    print(f"\nOTLP + WAL kill -9: {len(load.acked)} spans / {len(load.acked_runs)} runs acknowledged "
          f"({len(load.errors)} calls refused while down); lost {lost_spans} spans; all "
          f"{len(load.acked_runs)} acknowledged runs decided; {duplicates} verdicts reached the downstream twice, "
          f"{int(replayed)} counted as replayed ({int(replayed_requests)} requests replayed in {wal_seconds:.2f} s); "
          f"recovery {recovery:.1f} s from the restart ({since_kill:.1f} s from the kill) to every run "
          f"acknowledged before the kill decided, {up:.1f} s of it until the restarted process listened")


def test_a_kill_during_replay_then_a_torn_tail_still_lose_nothing_acknowledged(tmp_path):
    """Phase 1 takes 300 runs and decides none (root_grace 10 min); killed. Phase 2 replays
    them with room for only 40 runs at a time (so the replay waits on capacity) and is
    killed while it does. A torn record, a write the crash interrupted, is appended to the
    log. Phase 3 cuts it, replays again and decides every run."""
    runs = 300
    down, out = free_port(), tmp_path / "out"
    out.mkdir()
    with running_collector(downstream_config(down, out), tmp_path, name="downstream"):
        svc = Serve(tmp_path, down, tmp_path / "wal")
        try:
            svc.start(root_grace="10m")
            eventually(svc.listening, timeout=30, what="the service listening")
            load = Load(f"{HOST}:{svc.grpc}", runs, 200.0)
            load.start()
            load.join(timeout=120)
            assert load.errors == [] and len(load.acked_runs) == runs
            svc.kill9()
            assert _decided(out) == set()

            opened = svc.events("wal_opened")   # phase 1's, with nothing to replay
            svc.start(extra=", max_traces: 40", root_grace="1s")
            eventually(lambda: svc.events("wal_replaying") == 1, timeout=60, interval=0.05, what="the replay begun")
            time.sleep(1.5)
            assert svc.events("wal_opened") == opened, "the replay ended before the kill: nothing was tested"
            svc.kill9()
            decided_in_replay = len(_decided(out))

            segments = sorted((tmp_path / "wal").glob("*.wal"))
            torn = b"\x10\x27\x00\x00" + b"\x00" * 9   # the first 13 bytes of a record's header
            with segments[-1].open("ab") as f:
                f.write(torn)

            restarted_at = svc.start()
            eventually(lambda: set(load.acked_runs) <= _decided(out), timeout=120, interval=0.2,
                       what="every acknowledged run decided")
            recovery = time.monotonic() - restarted_at
            eventually(lambda: downstream_keys(out) >= load.acked, timeout=60, what="every acknowledged span downstream")
            cut = svc.metric("faultgate_wal_cut_tails_total")
            cut_bytes = svc.metric("faultgate_wal_cut_bytes_total")
            replayed = svc.metric("faultgate_wal_replayed_verdicts_total")
        finally:
            svc.stop()
        per_run = Counter((t, s) for t, s, _ in downstream_roots(out))
    assert cut >= 1 and cut_bytes >= len(torn)
    assert set(load.acked_runs.items()) <= set(per_run)
    assert 0 < decided_in_replay < runs
    assert sum(n - 1 for n in per_run.values()) <= replayed
    print(f"\nkill -9 during replay ({decided_in_replay} of {runs} runs decided before it), then a torn tail "
          f"({int(cut_bytes)} bytes cut): all {runs} runs decided, {len(load.acked)} spans downstream; recovery "
          f"{recovery:.1f} s")
