"""deploy/collector/: every config the operator copies is accepted by the real collector
(``otelcol validate``) under the component names the collector uses today, and the ones a
test can run here are run (agent, gateway-static and downstream in tests/e2e/test_scale_out.py,
gateway-dns below). gateway-k8s needs a Kubernetes API server to watch, which this machine
does not have: it is validated only."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import grpc
import pytest
import yaml
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from tests.e2e.downstream import agent_run_request
from tests.e2e.scale import deploy_config, env
from tests.peers import collector_binary, free_port, running_collector

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "collector"
CONFIGS = ["agent.yaml", "gateway-static.yaml", "gateway-dns.yaml", "gateway-k8s.yaml", "downstream.yaml"]
# names the collector still accepts but warns about at start ("alias is deprecated")
DEPRECATED = {"exporters": {"otlp", "otlphttp", "loadbalancing"}}


@pytest.mark.parametrize("name", CONFIGS)
def test_the_collector_validates_the_config(name):
    r = subprocess.run([str(collector_binary()), "validate", "--config", str(DEPLOY / name)],
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "FAULTGATE_REPLICAS": "[127.0.0.1:4317, 127.0.0.1:4318]"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "deprecated" not in (r.stdout + r.stderr).lower()


@pytest.mark.parametrize("name", CONFIGS)
def test_the_config_uses_todays_component_names(name):
    doc = yaml.safe_load((DEPLOY / name).read_text())
    for kind, old in DEPRECATED.items():
        used = {k.split("/")[0] for k in doc.get(kind, {})}
        assert not used & old, f"{name}: deprecated {kind} {used & old}"
    if name.startswith("gateway"):
        lb = doc["exporters"]["load_balancing"]
        assert lb["routing_key"] == "traceID"
        assert lb["sending_queue"]["enabled"] and lb["retry_on_failure"]["enabled"]


def test_the_dns_gateway_routes_to_the_replica_its_name_resolves_to(live_service, tmp_path):
    """gateway-dns.yaml as shipped, its name being 127.0.0.1 (the DNS resolver looks it up
    like any name; a test cannot add records to this machine's resolver)."""
    live = live_service()
    gateway = free_port()
    with env(FAULTGATE_DNS_NAME="127.0.0.1", FAULTGATE_PORT=str(live.service.ports["grpc"]),
             FAULTGATE_DNS_INTERVAL="1s", GATEWAY_OTLP_GRPC_ENDPOINT=f"127.0.0.1:{gateway}"):
        with running_collector(deploy_config("gateway-dns.yaml"), tmp_path, name="gateway-dns") as c:
            channel = grpc.insecure_channel(f"127.0.0.1:{gateway}")
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            # the first resolution may not have finished when the receiver is up
            deadline = time.monotonic() + 30
            while True:
                try:
                    stub.Export(agent_run_request(7), timeout=10)
                    break
                except grpc.RpcError:
                    assert time.monotonic() < deadline, c.log()[-3000:]
                    time.sleep(0.5)
            verdicts = live.sink.wait_for(1, timeout=60)
            channel.close()
    assert verdicts[0].steps == 4 and verdicts[0].agent == "steady"
    assert "deprecated" not in c.log()
