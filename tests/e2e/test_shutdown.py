"""SIGTERM under load: runs in flight get a ``shutdown`` verdict, every span acknowledged to
the client reaches the downstream collector, and the process exits 0."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from tests.e2e.downstream import agent_run_request, downstream_config, read_spans, span_keys
from tests.peers import eventually, free_port, running_collector


def test_sigterm_under_load_flushes_everything_acknowledged(tmp_path):
    down, grpc_port, metrics_port, out = free_port(), free_port(), free_port(), tmp_path / "out"
    out.mkdir()
    config = tmp_path / "faultgate.yaml"
    config.write_text(f"""
receive: {{grpc_endpoint: "127.0.0.1:{grpc_port}", http_endpoint: ""}}
metrics: {{endpoint: "127.0.0.1:{metrics_port}"}}
assemble: {{root_grace: 60s}}
export: {{endpoint: "127.0.0.1:{down}", retry_initial_interval: 200ms, retry_max_interval: 1s}}
shutdown_grace: 20s
""")
    with running_collector(downstream_config(down, out), tmp_path):
        proc = subprocess.Popen([sys.executable, "-m", "faultgate_stream.cli.main", "serve", "--config", str(config)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert json.loads(proc.stdout.readline())["event"] == "started"
            # stdout is read while the service runs: a pipe nobody reads fills and blocks
            # the service's verdict log (that is how a request once waited 5 s here)
            out_lines: list[str] = []
            reader = threading.Thread(target=lambda: out_lines.extend(proc.stdout), daemon=True)
            reader.start()
            acked: set[tuple[str, str]] = set()
            runs_acked: set[str] = set()
            refusals: list[grpc.StatusCode] = []   # what the load saw; asserted below, in this thread
            refused = threading.Event()

            def load() -> None:
                channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
                stub = trace_service_pb2_grpc.TraceServiceStub(channel)
                run = 0
                while not refused.is_set():
                    req = agent_run_request(run)
                    try:
                        stub.Export(req, timeout=5)
                    except grpc.RpcError as e:
                        refusals.append(e.code())
                        refused.set()
                        break
                    acked.update(span_keys(req))
                    runs_acked.add(req.resource_spans[0].scope_spans[0].spans[0].trace_id.hex())
                    run += 1
                channel.close()

            th = threading.Thread(target=load)
            th.start()
            eventually(lambda: len(runs_acked) >= 50, what="some load")
            proc.send_signal(signal.SIGTERM)
            th.join(timeout=60)
            assert not th.is_alive()
            proc.wait(timeout=60)
            reader.join(timeout=30)
            stderr = proc.stderr.read()
        finally:
            proc.kill()
        # refused at once and retryably (the sender keeps the data), never left to time out
        assert refusals == [grpc.StatusCode.UNAVAILABLE], refusals
        assert proc.returncode == 0, stderr
        lines = [json.loads(x) for x in out_lines if x.startswith("{")]
        verdicts = [x for x in lines if x.get("event") == "verdict"]
        assert {v["trace_id"] for v in verdicts} == runs_acked
        assert {v["completion"] for v in verdicts} == {"shutdown"}
        stopped = next(x for x in lines if x.get("event") == "stopped")
        assert stopped["unflushed"] == {"spans": 0, "queued": 0}
        keys = eventually(lambda: (k := {(s["traceId"], s["spanId"]) for s in read_spans(out)}) >= acked and k,
                          timeout=30, what="every acknowledged span downstream")
    assert keys >= acked and len(acked) >= 250
