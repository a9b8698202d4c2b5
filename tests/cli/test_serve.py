"""``serve`` as an operator runs it: a process, a config file, JSON logs, SIGTERM."""
from __future__ import annotations

import ctypes
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
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
    # a service that never writes the line must not hold the test (and the suite) in
    # readline() for ever: past the timeout it is killed, and readline() sees the end
    lines, deadline = [], time.monotonic() + timeout
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(json.loads(line))
            if lines[-1].get("event") == event:
                return lines
    finally:
        killer.cancel()
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


def _tgkill(pid: int, tid: int, sig: int) -> None:
    """A signal to one thread of another process (Linux's tgkill; Python has none of its own)."""
    number = {"x86_64": 234, "aarch64": 131}[platform.machine()]  # SYS_tgkill
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, pid, tid, sig) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _asleep(pid: int, for_s: float = 1.0, timeout: float = 20) -> None:
    """Until the process's main thread has slept on a lock for ``for_s`` on end (it waits
    for a stop once started)."""
    since, deadline = None, time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/task/{pid}/wchan") as f:
            sleeping = "futex" in f.read()
        now = time.monotonic()
        since = (since or now) if sleeping else None
        if since is not None and now - since >= for_s:
            return
        time.sleep(0.02)
    raise AssertionError(f"the main thread of {pid} never slept for {for_s} s")


def test_a_sigterm_the_kernel_hands_to_another_thread_still_stops_the_service(tmp_path):
    # A process-directed signal goes to any thread that does not block it, often one of
    # gRPC's; Python runs the handler on the main thread only when that thread runs, and a
    # main thread asleep in Event.wait() never did: the service went on for minutes (a full
    # test run hung in the test above). Here the signal is sent to a thread that is not the
    # main one, on purpose.
    grpc_port, metrics_port = _free_port(), _free_port()
    proc = _serve(tmp_path, f"receive: {{grpc_endpoint: '127.0.0.1:{grpc_port}', http_endpoint: ''}}\n"
                            f"metrics: {{endpoint: '127.0.0.1:{metrics_port}'}}\n")
    try:
        _lines_until(proc, "started")
        _asleep(proc.pid)  # sent earlier, the main thread is still running and handles it
        others = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
        assert others, "the service runs no thread besides its main one"
        _tgkill(proc.pid, others[-1], signal.SIGTERM)
        lines = _lines_until(proc, "stopped", timeout=20)
        assert proc.wait(timeout=30) == 0 and lines[-1]["event"] == "stopped"
    finally:
        proc.kill()


def test_a_bad_config_fails_the_start_with_exit_2_naming_the_key(tmp_path):
    proc = _serve(tmp_path, "assemble: {root_grace: whenever}\n")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "assemble.root_grace: must be a duration" in err and "Traceback" not in err


def test_sighup_swaps_the_policy_under_traffic_and_an_invalid_one_is_rejected(tmp_path):
    from tests.live.test_receivers import _request, _span
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    policy = tmp_path / "policy.json"
    policy.write_text('{"allow": ["lookup", "refund"]}')
    grpc_port, metrics_port = _free_port(), _free_port()
    proc = _serve(tmp_path, f"receive: {{grpc_endpoint: '127.0.0.1:{grpc_port}', http_endpoint: ''}}\n"
                            f"metrics: {{endpoint: '127.0.0.1:{metrics_port}'}}\n"
                            "assemble: {root_grace: 300ms}\n"
                            f"checks: {{bindings: [{{agents: ['*'], policy: '{policy}'}}]}}\n")
    channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)

    def run(trace: int) -> None:
        root = _span(trace, 1, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="shop")
        call = _span(trace, 2, parent=1, name="execute_tool refund", gen_ai__operation__name="execute_tool",
                     gen_ai__tool__name="refund", gen_ai__tool__call__arguments="{}")
        stub.Export(_request(root, call), timeout=5)

    try:
        _lines_until(proc, "started")
        run(1)                                    # refund allowed
        _lines_until(proc, "verdict")
        policy.write_text('{"allow": ["lookup"]}')
        proc.send_signal(signal.SIGHUP)
        _lines_until(proc, "reloaded")
        run(2)                                    # refund no longer allowed
        after = _lines_until(proc, "verdict")[-1]
        policy.write_text('{"allow": "lookup", "max_calls": -1}')
        run(3)                                    # in flight while the bad policy is refused
        proc.send_signal(signal.SIGHUP)
        rejected = _lines_until(proc, "reload_rejected")[-1]
        during = _lines_until(proc, "verdict")[-1]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        channel.close()
        proc.kill()
    assert after["trace_id"].endswith("2") and "policy" in after["fired"]
    assert "tool 'refund' not in allowlist" in after["fired"]["policy"]["reason"]
    assert "allow must be a list" in rejected["reason"]
    assert during["trace_id"].endswith("3") and "policy" in during["fired"]  # the kept policy judged it
