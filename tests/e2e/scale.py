"""The scale-out topology as an operator runs it, from the configs in deploy/collector/:
agent collector -> gateway collector (load_balancing, traceID, static resolver) -> N
``faultgate-stream serve`` replicas -> downstream collector. The gateway and the replicas
are ``faultgate-stream cluster``'s (``faultgate_stream.cli.cluster.Cluster``)."""
from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.cli.cluster import Cluster, Replica
from tests.peers import collector_binary, free_port, running_collector

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "collector"
TOOLS_PER_RUN = 4


def deploy_config(name: str) -> str:
    return (DEPLOY / name).read_text()


@contextlib.contextmanager
def env(**values: str) -> Iterator[None]:
    """The deploy configs read their endpoints from ${env:...}; the collectors inherit this."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def downstream(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """deploy/collector/downstream.yaml on a free port, writing under tmp_path/down."""
    port, out = free_port(), tmp_path / "down"
    out.mkdir()
    with env(DOWNSTREAM_OTLP_GRPC_ENDPOINT=f"127.0.0.1:{port}", DOWNSTREAM_DIR=str(out),
             DOWNSTREAM_DECISION_WAIT="3s"):
        with running_collector(deploy_config("downstream.yaml"), tmp_path, name="downstream") as c:
            yield f"127.0.0.1:{port}", out
    assert "deprecated" not in c.log()


@contextlib.contextmanager
def agent(tmp_path: Path, gateway: str) -> Iterator[str]:
    """deploy/collector/agent.yaml in front of ``gateway``; yields its OTLP/gRPC endpoint."""
    grpc, http = free_port(), free_port()
    with env(AGENT_OTLP_GRPC_ENDPOINT=f"127.0.0.1:{grpc}", AGENT_OTLP_HTTP_ENDPOINT=f"127.0.0.1:{http}",
             GATEWAY_ENDPOINT=gateway, AGENT_BATCH_TIMEOUT="100ms"):
        with running_collector(deploy_config("agent.yaml"), tmp_path, name="agent") as c:
            yield f"127.0.0.1:{grpc}"
    assert "deprecated" not in c.log()


def replica_config(tmp_path: Path, downstream_endpoint: str, **assemble: str) -> Path:
    """The config every replica gets: short waits so a test ends soon, export downstream."""
    settings = {"root_grace": "500ms", "idle_timeout": "3s", **assemble}
    path = tmp_path / "replica.yaml"
    path.write_text(json.dumps({
        "assemble": settings,
        "export": {"endpoint": downstream_endpoint, "retry_initial_interval": "200ms", "retry_max_interval": "1s",
                   "retry_max_elapsed": "0s"},
        "log": {"verdicts": True},
        "tick": "50ms",
        "shutdown_grace": "5s",
    }))
    return path


def cluster(tmp_path: Path, replicas: int, config: Path) -> Cluster:
    return Cluster(replicas, collector=str(collector_binary()), listen=f"127.0.0.1:{free_port()}",
                   config=str(config), workdir=tmp_path / "cluster")


def run_parts(run: int, now: int) -> tuple[ExportTraceServiceRequest, ExportTraceServiceRequest]:
    """One agent run as two requests: its tool spans, then its root ``invoke_agent`` span,
    so a ring change between the two splits the run."""
    trace = (0x5CA1E << 64 | run).to_bytes(16, "big")
    root_id = (run << 8 | 1).to_bytes(8, "big")
    tools, root = ExportTraceServiceRequest(), ExportTraceServiceRequest()
    spans = tools.resource_spans.add().scope_spans.add().spans
    for i in range(TOOLS_PER_RUN):
        s = spans.add(trace_id=trace, span_id=(run << 8 | 2 + i).to_bytes(8, "big"), parent_span_id=root_id,
                      name="execute_tool lookup", start_time_unix_nano=now + i, end_time_unix_nano=now + i + 1)
        s.attributes.add(key="gen_ai.operation.name").value.string_value = "execute_tool"
        s.attributes.add(key="gen_ai.tool.name").value.string_value = "lookup"
        s.attributes.add(key="gen_ai.tool.call.arguments").value.string_value = f'{{"id": {i}}}'
    r = root.resource_spans.add().scope_spans.add().spans.add(
        trace_id=trace, span_id=root_id, name="invoke_agent scaler", start_time_unix_nano=now,
        end_time_unix_nano=now + 1000)
    r.attributes.add(key="gen_ai.operation.name").value.string_value = "invoke_agent"
    r.attributes.add(key="gen_ai.agent.name").value.string_value = "scaler"
    return tools, root


def span_count(req: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)


def series(metrics_text: str, *names: str) -> Counter:
    """{'name{labels}': value} for the named counters (``_total`` samples only)."""
    out: Counter = Counter()
    for line in metrics_text.splitlines():
        head = line.split(" # ")[0]
        for name in names:
            if head.startswith(name + "{") or head.startswith(name + " "):
                key, value = head.rsplit(" ", 1)
                out[key] += float(value)
    return out


def summed(replicas: list[Replica], *names: str) -> Counter:
    total: Counter = Counter()
    for r in replicas:
        total.update(series(r.metrics(), *names))
    return total


def accounting(r: Replica) -> dict[str, float]:
    """The terms of the equation accepted = sent + failed + filtered + queued, read at once."""
    text = r.metrics()

    def val(name: str) -> float:
        return sum(series(text, name).values())

    return {"accepted": val("faultgate_receiver_accepted_spans_total"),
            "sent": val("faultgate_exporter_sent_spans_total"),
            "failed": val("faultgate_exporter_failed_spans_total"),
            "filtered": val("faultgate_exporter_filtered_spans_total"),
            "queued": val("faultgate_exporter_queue_spans"),
            "refused": val("faultgate_receiver_refused_spans_total"),
            "rejected": val("faultgate_receiver_rejected_spans_total"),
            "late": val("faultgate_late_spans_total"),
            "duplicates": val("faultgate_duplicate_spans_total")}


def wait_until(probe, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what} not reached within {timeout}s"
        time.sleep(0.3)


def spans_in(path: Path) -> list[dict]:
    """The spans a file exporter wrote to ``path`` (one OTLP/JSON document a line)."""
    spans: list[dict] = []
    if not path.exists():
        return spans
    text = path.read_text()
    # the exporter may be half-way through a line as we read: only whole lines count
    for line in text[:text.rfind("\n") + 1].splitlines():
        if line.strip():
            for rs in json.loads(line).get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    spans.extend(ss.get("spans", []))
    return spans
