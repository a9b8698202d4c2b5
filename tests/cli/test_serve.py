"""``serve`` as an operator runs it: a process, a config file, JSON logs, SIGTERM."""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

from faultgate_stream.cli.replay import GrpcSender, replay
from tests.conftest import CORPUS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(tmp_path, config: str) -> subprocess.Popen:
    f = tmp_path / "config.yaml"
    f.write_text(config)
    return subprocess.Popen([sys.executable, "-m", "faultgate_stream.cli.main", "serve", "--config", str(f)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _lines_until(proc: subprocess.Popen, event: str, timeout: float = 30) -> list[dict]:
    lines, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(json.loads(line))
        if lines[-1].get("event") == event:
            return lines
    raise AssertionError(f"no {event!r} log line; got {lines} / {proc.stderr.read() if proc.poll() is not None else ''}")


def test_sigterm_completes_runs_in_flight_as_shutdown_and_exits_0(tmp_path):
    grpc_port, http_port, metrics_port = _free_port(), _free_port(), _free_port()
    proc = _serve(tmp_path, f"receive: {{grpc_endpoint: '127.0.0.1:{grpc_port}', http_endpoint: '127.0.0.1:{http_port}'}}\n"
                            f"metrics: {{endpoint: '127.0.0.1:{metrics_port}'}}\n"
                            "assemble: {root_grace: 10m}\n")
    try:
        started = _lines_until(proc, "started")[-1]
        assert started["endpoints"] == {"metrics": metrics_port, "http": http_port, "grpc": grpc_port}
        assert started["limits"]["root_grace"] == 600.0 and "search_loop" in started["checks"]
        sender = GrpcSender(f"127.0.0.1:{grpc_port}")
        replay([str(CORPUS / "faultgate-0.4.1/examples/traces.json")], sender)
        sender.close()
        proc.send_signal(signal.SIGTERM)
        lines = _lines_until(proc, "stopped")
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    verdicts = [line for line in lines if line["event"] == "verdict"]
    assert len(verdicts) == 5 and {v["completion"] for v in verdicts} == {"shutdown"}
    assert sum(v["verdict"] == "failed" for v in verdicts) == 2
    assert lines[-1]["runs_completed_at_shutdown"] == 5


def test_a_bad_config_fails_the_start_with_exit_2_naming_the_key(tmp_path):
    proc = _serve(tmp_path, "assemble: {root_grace: whenever}\n")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "assemble.root_grace: must be a duration" in err and "Traceback" not in err
