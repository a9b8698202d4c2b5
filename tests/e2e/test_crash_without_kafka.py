"""What ``kill -9`` loses without Kafka: the OTLP path holds runs in flight and the export
queue in memory only, so acknowledged spans of undecided runs (their held roots) and those
runs' verdicts die with the process. The same load as tests/kafka/test_durability.py's
kill -9 test, sent straight to the replica over OTLP/gRPC; the figures it prints (``-s``)
are the README's. With Kafka as the source the same crash loses nothing (that test)."""
from __future__ import annotations

import subprocess
import sys
import time

from tests.e2e.downstream import downstream_config
from tests.kafka.replicas import Load, downstream_keys, downstream_roots
from tests.peers import HOST, eventually, free_port, running_collector

RUNS = 1200
RATE = 60.0


def test_kill_9_without_kafka_loses_runs_in_flight(tmp_path):
    down, grpc_port, metrics_port, out = free_port(), free_port(), free_port(), tmp_path / "out"
    out.mkdir()
    config = tmp_path / "faultgate.yaml"
    config.write_text(f"""
receive: {{grpc_endpoint: "{HOST}:{grpc_port}", http_endpoint: ""}}
metrics: {{endpoint: "{HOST}:{metrics_port}"}}
assemble: {{root_grace: 500ms}}
export: {{endpoint: "{HOST}:{down}", retry_initial_interval: 200ms, retry_max_interval: 1s}}
""")
    with running_collector(downstream_config(down, out), tmp_path, name="downstream"):
        proc = subprocess.Popen([sys.executable, "-m", "faultgate_stream.cli.main", "serve", "--config", str(config)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            load = Load(f"{HOST}:{grpc_port}", RUNS, RATE)
            eventually(lambda: _listening(grpc_port), timeout=30, what="the service listening")
            load.start()
            eventually(lambda: len(load.acked_runs) >= RUNS // 3, timeout=120, what="a third of the load")
            proc.kill()
            proc.wait(timeout=10)
            load.halt()
            load.join(timeout=30)
        finally:
            proc.kill()
        acked, runs = set(load.acked), dict(load.acked_runs)
        # what reached the downstream before the kill is all there will ever be: wait for
        # the file exporter to flush, until two reads agree
        time.sleep(1.0)
        keys = eventually(lambda: (k := downstream_keys(out)) == downstream_keys(out) and k, what="a settled file")
        decided = {t for t, _, _ in downstream_roots(out)}
    lost_spans = len(acked - keys)
    lost_runs = len(set(runs) - decided)
    print(f"\nOTLP kill -9: {len(acked)} spans / {len(runs)} runs acknowledged; lost {lost_spans} spans "
          f"({100 * lost_spans / len(acked):.1f}%) and {lost_runs} verdicts ({100 * lost_runs / len(runs):.1f}%)")
    # the runs in flight at the kill (root_grace 500 ms at 60 runs/s: about 30) never got
    # a verdict, and their held roots, acknowledged, never reached the downstream
    assert lost_runs >= 1 and lost_spans >= lost_runs


def _listening(port: int) -> bool:
    import socket
    with socket.socket() as s:
        return s.connect_ex((HOST, port)) == 0
