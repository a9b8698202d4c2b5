"""``faultgate-stream cluster --replicas 2``: the one-host layout started as a user starts
it, fed over OTLP through its gateway collector, stopped with Ctrl-C (SIGINT)."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from faultgate_stream.pipeline import assemble_runs
from faultgate_stream.read.files import read_file
from tests.peers import collector_binary, free_port

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "examples/traces/traces.json", ROOT / "examples/traces/retail_gaps.json"]


def _verdicts(log: Path) -> list[dict]:
    out = []
    for line in log.read_text().splitlines() if log.exists() else []:
        if line.startswith("{"):
            doc = json.loads(line)
            if doc.get("event") == "verdict":
                out.append(doc)
    return out


def test_cluster_with_two_replicas_routes_each_trace_to_one_replica_and_stops_on_ctrl_c(tmp_path):
    listen, work = f"127.0.0.1:{free_port()}", tmp_path / "cluster"
    config = tmp_path / "replica.yaml"
    # with a write-ahead log: each replica gets a directory of its own under it
    config.write_text(f"assemble: {{root_grace: 500ms}}\ndurability: {{wal: {{dir: \"{tmp_path / 'wal'}\"}}}}\n")
    proc = subprocess.Popen([sys.executable, "-m", "faultgate_stream.cli.main", "cluster", "--replicas", "2",
                             "--collector", str(collector_binary()), "--listen", listen, "--config", str(config),
                             "--workdir", str(work)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = []
        while not banner or "Ctrl-C to stop" not in banner[-1]:
            line = proc.stdout.readline()
            assert line, f"cluster exited: {proc.wait()} {proc.stderr.read()}"
            banner.append(line)
        assert sum("replica " in line and "OTLP/gRPC 127.0.0.1:" in line for line in banner) == 2
        r = subprocess.run([sys.executable, "-m", "faultgate_stream.cli.main", "replay", *map(str, FILES),
                            "--endpoint", listen, "--quiet"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        expected = sum(len(assemble_runs(read_file(str(f))[1])) for f in FILES)
        logs = [work / "replica-0.log", work / "replica-1.log"]
        deadline = time.monotonic() + 60
        while sum(len(_verdicts(p)) for p in logs) < expected:
            assert time.monotonic() < deadline, [len(_verdicts(p)) for p in logs]
            time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    per_replica = [_verdicts(p) for p in logs]
    assert all(per_replica), "each replica decided some runs"
    traces = [{v["trace_id"] for v in vs} for vs in per_replica]
    assert not traces[0] & traces[1]
    assert sum(map(len, per_replica)) == expected
    counts = [int(n) for n in re.findall(r"\d+: (\d+)", out.splitlines()[-1])]
    assert counts == [len(v) for v in per_replica]
    # the replicas stopped after the gateway: each logged its clean stop
    for p in logs:
        assert '"event": "stopped"' in p.read_text(), (p.name, p.read_text()[-3000:], err)
    for i, p in enumerate(logs):
        opened = [json.loads(line) for line in p.read_text().splitlines() if '"wal_opened"' in line]
        assert [o["dir"] for o in opened] == [str(tmp_path / "wal" / f"replica-{i}")]
        assert list((tmp_path / "wal" / f"replica-{i}").glob("*.wal"))


def test_the_cluster_never_hands_one_port_to_two_of_its_parts(tmp_path, monkeypatch):
    # The kernel's free port is free only until bound, and no part binds before its process
    # starts: picks in a row may repeat, and once put a replica on the gateway's own port
    # (CI: "listen tcp 127.0.0.1:43089: bind: address already in use"). Here the kernel is
    # made to repeat itself.
    from faultgate_stream.cli import cluster
    picks = iter([4317, 4317, 5001, 5001, 5001, 5002, 5002, 5003, 4317, 5004, 5005])
    monkeypatch.setattr(cluster, "free_port", lambda host="127.0.0.1": next(picks))
    c = cluster.Cluster(2, collector="otelcol", listen="127.0.0.1:4317", workdir=tmp_path)
    ports = [c.gateway_metrics_port, *c._ports(0), c._ports(1)[0]]  # noqa: SLF001
    assert ports == [5001, 5002, 5003, 5004], ports
