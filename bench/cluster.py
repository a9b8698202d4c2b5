"""One-host layout throughput: ``faultgate-stream cluster`` with 1 and with N replicas,
measured in the same run, through the real gateway collector (load_balancing, traceID).

    .venv/bin/python bench/cluster.py [--replicas 2] [--runs 6000] [--rounds 2] [--collector PATH]

Load: 16-span agent runs (1 invoke_agent + 15 execute_tool), 512 spans per request, fresh
trace ids every request, sent by 4 threads to the gateway. A window is timed from the first
request to the moment the replicas' ``faultgate_runs_total`` summed reaches the runs sent:
work done, not work queued. Configurations are interleaved (1, N, 1, N, ...) so the noise
of a shared machine falls on both; the last line is
``RESULT replicas=N spans_per_s=<median> one_replica_spans_per_s=<median> ratio=<x.xx>``.

The gateway collector, the load generator and the replicas share the host's cores, so the
ratio is bounded by what is left for the replicas, not only by the replicas themselves.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faultgate_stream.cli.cluster import Cluster, ClusterError, find_collector, free_port  # noqa: E402

SPANS_PER_RUN = 16
RUNS_PER_REQUEST = 32
THREADS = 4


def requests(runs: int, salt: int) -> list[bytes]:
    now = time.time_ns()
    out = []
    for first in range(0, runs, RUNS_PER_REQUEST):
        req = ExportTraceServiceRequest()
        spans = req.resource_spans.add().scope_spans.add().spans
        for run in range(first, min(first + RUNS_PER_REQUEST, runs)):
            trace = (salt << 64 | run).to_bytes(16, "big")
            root_id = (run << 8 | 1).to_bytes(8, "big")
            root = spans.add(trace_id=trace, span_id=root_id, name="invoke_agent bench",
                             start_time_unix_nano=now, end_time_unix_nano=now + 1000)
            root.attributes.add(key="gen_ai.operation.name").value.string_value = "invoke_agent"
            root.attributes.add(key="gen_ai.agent.name").value.string_value = "bench"
            for i in range(SPANS_PER_RUN - 1):
                s = spans.add(trace_id=trace, span_id=(run << 8 | 2 + i).to_bytes(8, "big"),
                              parent_span_id=root_id, name="execute_tool search",
                              start_time_unix_nano=now + i, end_time_unix_nano=now + i + 1)
                s.attributes.add(key="gen_ai.operation.name").value.string_value = "execute_tool"
                s.attributes.add(key="gen_ai.tool.name").value.string_value = "search"
                s.attributes.add(key="gen_ai.tool.call.arguments").value.string_value = f'{{"q": "item {i}"}}'
        out.append(req.SerializeToString())
    return out


def window(cluster: Cluster, bodies: list[bytes], runs: int) -> float:
    """Spans per second, from the first request sent to the last run decided."""
    channel = grpc.insecure_channel(cluster.listen, options=[("grpc.max_send_message_length", 64 << 20)])
    export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                 request_serializer=None, response_deserializer=None)
    chunks = [bodies[i::THREADS] for i in range(THREADS)]
    started = time.monotonic()

    def send(mine: list[bytes]) -> None:
        for b in mine:
            export(b, timeout=60)

    threads = [threading.Thread(target=send, args=(c,)) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    deadline = time.monotonic() + 120
    while sum(r.sample("faultgate_runs_total") for r in cluster.replicas) < runs:
        if time.monotonic() > deadline:
            raise SystemExit("bench/cluster.py: runs still undecided 120 s after the load stopped")
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    channel.close()
    return runs * SPANS_PER_RUN / elapsed


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--runs", type=int, default=6000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--collector", default="")
    args = p.parse_args()
    collector = args.collector or find_collector_from_checkout()
    work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    config = work / "replica.yaml"
    # root_grace short, verdict log off: the bench measures the pipeline, not stdout
    config.write_text("assemble: {root_grace: 200ms}\nlog: {verdicts: false, level: warning}\n")
    results: dict[int, list[float]] = {1: [], args.replicas: []}
    for rnd in range(args.rounds):
        for n in (1, args.replicas):
            bodies = requests(args.runs, salt=rnd * 100 + n)
            with Cluster(n, collector=collector, listen=f"127.0.0.1:{free_port()}", config=str(config),
                         workdir=work / f"r{rnd}-n{n}") as c:
                rate = window(c, bodies, args.runs)
            results[n].append(rate)
            print(f"round {rnd} replicas={n}: {rate:,.0f} spans/s", flush=True)
    one, many = statistics.median(results[1]), statistics.median(results[args.replicas])
    print(f"RESULT replicas={args.replicas} spans_per_s={many:.0f} one_replica_spans_per_s={one:.0f} "
          f"ratio={many / one:.2f}")
    return 0


def find_collector_from_checkout() -> str:
    try:
        return find_collector()
    except ClusterError:
        out = subprocess.run(["bash", str(ROOT / "scripts/install_peers.sh"), "--print-path"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
