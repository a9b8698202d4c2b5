"""faultgate-stream replicas reading Kafka, a collector with the Kafka exporter in front,
a downstream collector behind, and a load that records what the front acknowledged."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from tests.e2e.downstream import agent_run_request, attrs, read_spans, span_keys
from tests.peers import HOST, free_port

TOOLS = 4   # spans per run: a root and four tool calls


def kafka_collector_config(grpc_port: int, bootstrap: str, topic: str) -> str:
    # The exporter as an operator would set it up for faultgate-stream: otlp_proto, keyed
    # by trace id (one message per trace of each request), and no sending queue, so an
    # acknowledgement to the sender means the broker has the message.
    return f"""receivers:
  otlp:
    protocols:
      grpc: {{endpoint: "{HOST}:{grpc_port}"}}
exporters:
  kafka:
    brokers: ["{bootstrap}"]
    traces: {{topic: {topic}, encoding: otlp_proto}}
    partition_traces_by_id: true
    sending_queue: {{enabled: false}}
service:
  pipelines:
    traces: {{receivers: [otlp], exporters: [kafka]}}
"""


@dataclass
class Replica:
    """One ``faultgate-stream serve`` process reading the topic in the group."""

    name: str
    config: Path
    stdout: Path
    metrics_port: int
    proc: subprocess.Popen | None = None
    started_at: float = 0.0

    def start(self) -> None:
        self.started_at = time.monotonic()
        with self.stdout.open("ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "faultgate_stream.cli.main", "serve", "--config",
                                          str(self.config)], stdout=out, stderr=subprocess.STDOUT)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()   # SIGKILL: nothing is flushed, nothing is handed over
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def metric(self, name: str) -> float:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                f"http://{HOST}:{self.metrics_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        values = [float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M)]
        return sum(values)

    def verdicts(self) -> list[dict]:
        out = []
        for line in self.stdout.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                with_json = json.loads(line)
                if with_json.get("event") == "verdict":
                    out.append(with_json)
        return out


def replica(tmp: Path, name: str, *, bootstrap: str, topic: str, group: str, downstream: int,
            instance: bool = True, handover_grace: str = "3s") -> Replica:
    metrics = free_port()
    config = tmp / f"{name}.yaml"
    config.write_text(f"""
receive:
  grpc_endpoint: ""
  http_endpoint: ""
  kafka:
    brokers: "{bootstrap}"
    topic: {topic}
    group_id: {group}
    group_instance_id: "{name if instance else ''}"
    commit_interval: 200ms
    lease_messages: 200
    handover_grace: {handover_grace}
    # the broker's minimum: a replica that vanished without leaving is noticed in 6 s
    client: {{session.timeout.ms: "6000", heartbeat.interval.ms: "1000"}}
metrics: {{endpoint: "{HOST}:{metrics}"}}
assemble: {{root_grace: 500ms}}
export: {{endpoint: "{HOST}:{downstream}", retry_initial_interval: 200ms, retry_max_interval: 1s}}
""")
    return Replica(name, config, tmp / f"{name}.out", metrics)


@dataclass
class Load:
    """Sends runs over OTLP/gRPC at a steady rate; records what was acknowledged."""

    endpoint: str
    runs: int
    rate: float
    first_run: int = 0
    acked: set = field(default_factory=set)
    acked_runs: dict = field(default_factory=dict)   # trace id hex -> root span id hex
    errors: list = field(default_factory=list)
    sent: int = 0
    _thread: threading.Thread | None = None
    _halt: threading.Event = field(default_factory=threading.Event)

    def halt(self) -> None:
        self._halt.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # Each run goes out in two requests, its tool spans first and its root one step
        # later (as spans end: children before their parent), so a trace spans two Kafka
        # messages and a rebalance between them would split it if anything routed wrongly.
        channel = grpc.insecure_channel(self.endpoint)
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        started = time.monotonic()
        waiting_root = None
        for i in range(self.runs + 1):
            if self._halt.is_set():
                break
            delay = started + i / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            batch = []
            if i < self.runs:
                children, root = _halves(agent_run_request(self.first_run + i, tools=TOOLS))
                batch.append(("children", children))
            if waiting_root is not None:
                batch.append(("root", waiting_root))
            waiting_root = root if i < self.runs else None
            for part, req in batch:
                try:
                    stub.Export(req, timeout=10)
                except grpc.RpcError as e:   # recorded, asserted in the test's own thread
                    self.errors.append(f"{part} of step {i}: {e.code()} {e.details()}")
                    continue
                self.acked.update(span_keys(req))
                if part == "root":
                    span = req.resource_spans[0].scope_spans[0].spans[0]
                    self.acked_runs[span.trace_id.hex()] = span.span_id.hex()
                    self.sent += 1
        channel.close()

    def join(self, timeout: float) -> None:
        assert self._thread is not None
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the load did not finish"


def _halves(req):
    """(the request's tool spans, its root) as two requests with the same resource."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    spans = req.resource_spans[0].scope_spans[0].spans
    out = []
    for part in (spans[1:], spans[:1]):
        r = ExportTraceServiceRequest()
        r.resource_spans.add().scope_spans.add().spans.extend(part)
        out.append(r)
    return out[0], out[1]


def downstream_roots(out: Path) -> list[tuple[str, str, str]]:
    """(trace id, span id, verdict) of every root span the downstream got with a verdict,
    duplicates included."""
    return [(s["traceId"], s["spanId"], a["faultgate.verdict"]) for s in read_spans(out)
            if "faultgate.verdict" in (a := attrs(s))]


def downstream_keys(out: Path) -> set[tuple[str, str]]:
    return {(s["traceId"], s["spanId"]) for s in read_spans(out)}
