"""helm/faultgate-stream rendered by real helm (lint, template with the default and the full
values file) and every manifest validated offline against the Kubernetes schemas that
``kubernetes-validate`` ships. ServiceMonitor and PrometheusRule are CRDs (prometheus-operator)
it has no schema for: their rules go through Debian's promtool instead, and their selectors
are checked against the Service they must find."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from faultgate_stream.checks.base import each
from faultgate_stream.config import load
from faultgate_stream.verdict import ruleset

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "faultgate-stream"
FULL = CHART / "examples" / "values-full.yaml"
KUBE = "1.31.0"        # helm's --kube-version and the schema version validated against
CRDS = {"ServiceMonitor", "PrometheusRule"}
SYNCED = {"deploy/prometheus/rules/faultgate-stream.rules.yaml": "files/faultgate-stream.rules.yaml",
          "deploy/grafana/faultgate-stream.json": "files/faultgate-stream.json"}


def helm_binary() -> str:
    r = subprocess.run(["bash", str(ROOT / "scripts" / "install_peers.sh"), "--print-helm"], capture_output=True,
                       text=True, check=True)
    path = r.stdout.strip()
    assert Path(path).is_file(), f"helm is not installed at {path}; run `bash scripts/install_peers.sh`"
    return path


def helm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([helm_binary(), *args], capture_output=True, text=True, timeout=120)


def render(*values: str, release: str = "fgs") -> list[dict]:
    r = helm("template", release, str(CHART), "--namespace", "observability", "--kube-version", KUBE, *values)
    assert r.returncode == 0, r.stderr
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


VALUES = {"default": (), "full": ("-f", str(FULL))}


@pytest.mark.parametrize("values", VALUES)
def test_helm_lint_passes_strictly(values):
    r = helm("lint", "--strict", str(CHART), "--kube-version", KUBE, *VALUES[values])
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("values", VALUES)
def test_every_rendered_manifest_is_valid_for_kubernetes(values, tmp_path):
    docs = render(*VALUES[values])
    kinds = {d["kind"] for d in docs}
    assert {"StatefulSet", "Service", "ConfigMap", "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor",
            "PrometheusRule"} <= kinds
    for d in docs:
        if d["kind"] in CRDS:
            continue
        kubernetes_validate.validate(d, KUBE, strict=True)
    # the CRDs: the rules are Prometheus rules, the monitor finds the metrics Service
    rule = by_kind(docs, "PrometheusRule")[0]
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rule["spec"]))
    r = subprocess.run(["promtool", "check", "rules", str(rules_file)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    monitor = by_kind(docs, "ServiceMonitor")[0]
    services = by_kind(docs, "Service")
    found = [s for s in services
             if all(s["metadata"]["labels"].get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
             and any(p["name"] == monitor["spec"]["endpoints"][0]["port"] for p in s["spec"]["ports"])]
    assert len(found) == 1 and found[0]["spec"].get("clusterIP") != "None"


@pytest.mark.parametrize("values", VALUES)
def test_the_pods_run_non_root_read_only_with_probes_and_a_grace_that_fits_the_flush(values):
    docs = render(*VALUES[values])
    sts = by_kind(docs, "StatefulSet")[0]
    pod = sts["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["limits"]["cpu"]
    config = yaml.safe_load(by_kind(docs, "ConfigMap")[0]["data"]["config.yaml"])
    grace = float(config["shutdown_grace"].rstrip("s"))
    pre_stop = float(container["lifecycle"]["preStop"]["exec"]["command"][1])
    assert pod["terminationGracePeriodSeconds"] > grace + pre_stop
    # the headless Service gives the StatefulSet its stable names
    headless = [s for s in by_kind(docs, "Service") if s["spec"].get("clusterIP") == "None"]
    assert len(headless) == 1 and sts["spec"]["serviceName"] == headless[0]["metadata"]["name"]


def test_the_rendered_config_is_one_the_service_accepts_with_its_policies_and_specs(tmp_path):
    docs = render("-f", str(FULL))
    data = [d for d in by_kind(docs, "ConfigMap") if "config.yaml" in d["data"]][0]["data"]
    mount = tmp_path / "etc"
    mount.mkdir()
    for name, text in data.items():
        (mount / name).write_text(text.replace("/etc/faultgate-stream/", f"{mount}/"))
    config = load(mount / "config.yaml", {})
    assert config.receive.grpc_endpoint == "0.0.0.0:4317" and config.shutdown_grace == 25.0
    rules = ruleset.build(config.checks)
    assert [b.agents for b in rules.bindings] == [("retail*",), ("support-*",)]
    # rules files (CEL), every run's and a binding's, and the plug-ins' limits (a rules file
    # is one check of several results: ``each`` lists its rules)
    assert {"cancel_without_reason", "unconfirmed_cancel"} <= {c.name for c in each(rules.checks)}
    assert "refund_over_500" in {c.name for c in each(rules.bindings[1].checks)}
    assert config.checks.isolation.cpu_budget == 0.005
    band = json.loads(data["band.gate.json"])
    assert band["runs"] == 2 and band["scenarios"]


def test_with_the_wal_each_replica_logs_to_a_claim_of_its_own_mounted_where_the_config_says(tmp_path):
    docs = render("-f", str(FULL))
    sts = by_kind(docs, "StatefulSet")[0]
    claims = sts["spec"]["volumeClaimTemplates"]
    assert [c["metadata"]["name"] for c in claims] == ["wal"]
    assert claims[0]["spec"]["resources"]["requests"]["storage"] == "8Gi"
    assert claims[0]["spec"]["storageClassName"] == "fast-ssd"
    mount = [m for m in sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] if m["name"] == "wal"]
    data = [d for d in by_kind(docs, "ConfigMap") if "config.yaml" in d["data"]][0]["data"]
    path = tmp_path / "config.yaml"
    path.write_text(data["config.yaml"])
    wal = load(path, {}).durability.wal
    assert mount[0]["mountPath"] == wal.dir and wal.max_bytes == 6 * 1024 ** 3 and wal.fsync == "batch"
    # without it, no claim and no log
    plain = by_kind(render(), "StatefulSet")[0]
    assert "volumeClaimTemplates" not in plain["spec"]
    assert "durability" not in yaml.safe_load(by_kind(render(), "ConfigMap")[0]["data"]["config.yaml"])


def test_a_config_change_changes_the_pod_checksum_so_the_pods_roll():
    def checksum(*values: str) -> str:
        sts = by_kind(render(*values), "StatefulSet")[0]
        return sts["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum() == checksum()
    assert checksum() != checksum("--set", "config.assemble.root_grace=5s")


@pytest.mark.parametrize("bad", ["replicas=0", "config.receive.grpc_endpoint=0.0.0.0:1", "ports.metrics=70000",
                                 "unknownKey=1"])
def test_the_values_schema_rejects_bad_values(bad):
    r = helm("template", "fgs", str(CHART), "--kube-version", KUBE, "--set", bad)
    assert r.returncode != 0 and "values don't meet the specifications of the schema" in r.stderr, r.stderr


def test_the_dashboard_configmap_carries_the_grafana_sidecar_label_and_valid_json():
    cm = [d for d in by_kind(render(), "ConfigMap") if d["metadata"]["name"].endswith("-dashboard")][0]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["faultgate-stream.json"])["panels"]


@pytest.mark.parametrize("source", SYNCED)
def test_the_chart_files_are_copies_of_their_sources(source):
    copy = CHART / SYNCED[source]
    src = ROOT / source
    if src.exists():
        assert copy.read_bytes() == src.read_bytes(), f"run scripts/sync_chart_files.sh: {copy} differs from {src}"
    else:
        # the source is written elsewhere; until it lands the chart ships a placeholder
        assert "placeholder" in copy.read_text().lower()


def test_the_gateway_values_example_uses_the_k8s_resolver_on_the_headless_service():
    doc = yaml.safe_load((CHART / "examples" / "values-gateway.yaml").read_text())
    lb = doc["config"]["exporters"]["load_balancing"]
    assert lb["routing_key"] == "traceID"
    assert lb["resolver"]["k8s"]["service"].startswith("faultgate-stream-headless")
    # installed as release "faultgate-stream" in "observability", the name it points at
    headless = [s for s in by_kind(render(release="faultgate-stream"), "Service")
                if s["spec"].get("clusterIP") == "None"][0]
    assert lb["resolver"]["k8s"]["service"] == f"{headless['metadata']['name']}.observability"
