"""The Grafana dashboard and the Argo Rollouts AnalysisTemplate against real data.

The example traces (and the gate's example: a band, the GPT candidate as version B, a GLM
run as version A, four GLM runs as version C) are replayed into a running service with a
live gate and shadow policies, whose spans go to a real downstream collector; a real
Prometheus (Debian's) scrapes the service; then every query of every panel
and template variable of ``deploy/grafana/faultgate-stream.json`` (variables substituted as
Grafana would: "All" is ``.*``, ``$__rate_interval`` a minute) and the AnalysisTemplate's
query run against that Prometheus, and each must return data.

Grafana itself is not available here (no package in the registries this machine reaches), so
the dashboard is not rendered: what is tested is that each panel's PromQL is valid and has
data behind it, and that exemplar-enabled panels have trace-id exemplars for their trace links.
Argo Rollouts is not run either: its documented evaluation of ``successCondition`` /
``failureCondition`` (and of ``failureLimit`` / ``inconclusiveLimit`` over measurements) is
implemented below, small, and applied to the query's real results.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from pathlib import Path

import pytest
import yaml

from faultgate_stream.checks.config import BindingConfig, ChecksConfig, ShadowConfig
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.export.metrics.config import MetricsConfig
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.gate.config import GateBandConfig, GateConfig
from faultgate_stream.model.telemetry import CATALOG, exposed_name
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.verdict import ruleset
from tests.conftest import CORPUS
from tests.e2e.downstream import downstream_config
from tests.gate.test_live_gate import versioned
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector, running_prometheus

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "faultgate-stream.json"
ANALYSIS = ROOT / "deploy" / "argo" / "analysis-template.yaml"
TRACES = [ROOT / "examples" / "traces" / "traces.json", ROOT / "examples" / "traces" / "retail_gaps.json"]
POLICY = ROOT / "examples" / "policies" / "retail.json"
# The gate's example: a band measured on two GLM baseline runs; the GPT candidate replayed
# as version B of the same agent, a GLM run as version A (traces.json's runs of the agent
# carry no version: a third, small window).
GATE = CORPUS / "faultgate-0.4.1" / "examples" / "gate"
SHADOWS = {"retail": CORPUS / "reference" / "derived_policies" / "policy_retail_gap_test.json",
           "faultline-*": GATE / "policy.json"}
# What Grafana puts in for its built-in and "All" values.
SUBSTITUTIONS = {"$__rate_interval": "1m", "$agent": ".*", "$version": ".*"}

# Series every panel may read: the service's catalog plus prometheus_client's process
# collector. A query reading a metric outside this set cannot have data from this service.
PROCESS = {"process_resident_memory_bytes", "process_cpu_seconds_total"}
DECLARED = {exposed_name(s) for s in CATALOG} | PROCESS


PASSES = 3
LATE_RUNS = 4


def _first_traces(src: Path, dst: Path, n: int) -> Path:
    """The file with the spans of its first ``n`` traces only."""
    doc = json.loads(src.read_text())
    seen: list[str] = []
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                if span["traceId"] not in seen:
                    seen.append(span["traceId"])
    keep = set(seen[:n])
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            ss["spans"] = [span for span in ss["spans"] if span["traceId"] in keep]
    dst.write_text(json.dumps(doc))
    return dst


def _copies(paths: list[Path], into: Path, n: int) -> list[Path]:
    """The trace files with every trace id changed by pass number ``n`` (same spans, new runs)."""
    into.mkdir()
    out = []
    for p in paths:
        text = re.sub(r'"traceId": "[0-9a-f]{2}([0-9a-f]{30})"', lambda m: f'"traceId": "{n:02x}{m.group(1)}"',
                      p.read_text())
        (into / p.name).write_text(text)
        out.append(into / p.name)
    return out


def _with_trajectories(tmp: Path) -> Path:
    """faultgate's shipped band with the trajectories of its two baseline runs added (as
    ``baseline`` writes them), so the live gate judges drift as well."""
    from faultgate_stream.gate.drift import Trajectories
    from faultgate_stream.verdict.profile import Profiler

    doc = json.loads((GATE / "band.json").read_text())
    t = Trajectories()
    for name in ("baseline_glm_run1.json", "baseline_glm_run2.json"):
        for v in check_spans([read_file(GATE / name)[1]], [], profile=Profiler()):
            t.add(v.agent, v.agent_version, v.profile.shape)
    doc["trajectories"] = t.to_json()
    (tmp / "band.json").write_text(json.dumps(doc))
    return tmp / "band.json"


def _dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def _panels(dashboard: dict) -> list[dict]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def _substitute(expr: str) -> str:
    for k, v in SUBSTITUTIONS.items():
        expr = expr.replace(k, v)
    assert "$" not in expr, f"an unsubstituted variable in {expr}"
    return expr


def _metrics_read(expr: str) -> set[str]:
    names = set(re.findall(r"(?<![:\w$])((?:faultgate|process)_\w+?)(?:_bucket)?(?=[{\[\s)]|$)", expr))
    return names


def _label_values_query(definition: str) -> str:
    """``label_values(selector, label)`` as the selector it reads."""
    m = re.fullmatch(r"label_values\((.+), *(\w+)\)", definition)
    assert m, definition
    return m.group(1)


def _finite(rows: list) -> list:
    return [r for r in rows if math.isfinite(float(r["value"][1]))]


# ----------------------------------------------------------------------- Argo's evaluation


def _argo_condition(expression: str, result: list[float]) -> bool:
    """The expr-language conditions this template uses: ``len(result)``, ``result[i]``,
    comparisons, ``&&``, ``||``, ``!``. Translated to Python and evaluated with nothing but
    ``result`` and ``len`` in scope; an index past the end is an error, as in Argo."""
    assert re.fullmatch(r"[\w\s\[\]()<>=!&|.]+", expression), expression
    python = expression.replace("&&", " and ").replace("||", " or ")
    python = re.sub(r"!(?!=)", " not ", python)
    return bool(eval(python, {"__builtins__": {}}, {"result": result, "len": len}))  # noqa: S307


def argo_measurement(metric: dict, result: list[float]) -> str:
    """Argo Rollouts' EvaluateResult: with both conditions set, failure wins, then success,
    else Inconclusive; with one set, the other is its negation."""
    success_c, failure_c = metric.get("successCondition"), metric.get("failureCondition")
    success = _argo_condition(success_c, result) if success_c else None
    failure = _argo_condition(failure_c, result) if failure_c else None
    if success is None and failure is None:
        return "Successful"
    if failure is None:
        failure = not success
    if success is None:
        success = not failure
    if failure:
        return "Failed"
    return "Successful" if success else "Inconclusive"


def argo_metric_phase(metric: dict, measurements: list[str]) -> str:
    """A metric's phase after its measurements: failed beyond failureLimit -> Failed,
    inconclusive beyond inconclusiveLimit -> Inconclusive, count reached -> Successful."""
    failed = measurements.count("Failed")
    inconclusive = measurements.count("Inconclusive")
    if failed > metric.get("failureLimit", 0):
        return "Failed"
    if inconclusive > metric.get("inconclusiveLimit", 0):
        return "Inconclusive"
    return "Successful" if len(measurements) >= metric.get("count", 1) else "Running"


def _analysis_metric() -> dict:
    template = yaml.safe_load(ANALYSIS.read_text())
    assert template["apiVersion"] == "argoproj.io/v1alpha1" and template["kind"] == "AnalysisTemplate"
    (metric,) = template["spec"]["metrics"]
    return metric


def _analysis_query(agent: str, version: str) -> str:
    metric = _analysis_metric()
    query = metric["provider"]["prometheus"]["query"]
    return query.replace("{{args.agent}}", agent).replace("{{args.version}}", version)


def test_the_analysis_conditions_fail_on_fail_pause_on_inconclusive_and_pass_only_on_pass():
    metric = _analysis_metric()
    assert argo_measurement(metric, [3.0]) == "Failed"
    assert argo_measurement(metric, [2.0]) == "Inconclusive"
    assert argo_measurement(metric, []) == "Inconclusive"      # no data never passes
    assert argo_measurement(metric, [1.0]) == "Successful"
    count = metric["count"]
    assert argo_metric_phase(metric, ["Successful"] * count) == "Successful"
    assert argo_metric_phase(metric, ["Successful"] * (count - 1) + ["Inconclusive"]) == "Inconclusive"
    assert argo_metric_phase(metric, ["Successful", "Failed"]) == "Failed"
    # every argument the query names is declared
    template = yaml.safe_load(ANALYSIS.read_text())
    declared = {a["name"] for a in template["spec"]["args"]}
    used = set(re.findall(r"\{\{args\.([\w-]+)\}\}", json.dumps(template)))
    assert used == declared


# ----------------------------------------------------------------------- the live run


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """A service with the examples replayed into it, scraped by a real Prometheus."""
    from faultgate_stream.service import Service
    from tests.live_service import Collected

    tmp = tmp_path_factory.mktemp("dashboard")
    outcomes = tmp / "outcomes.json"
    files = TRACES + [versioned(GATE / "candidate_gpt.json", tmp / "candidate_B.json", "B"),
                      versioned(GATE / "baseline_glm_run1.json", tmp / "baseline_A.json", "A")]
    # Version C: four runs of the other GLM baseline, replayed once, at the end: a window
    # too small to decide (the offline gate says INCONCLUSIVE on the same four runs).
    late = versioned(_first_traces(GATE / "baseline_glm_run2.json", tmp / "glm_run2_first4.json", 4),
                     tmp / "version_C.json", "C")
    spans = [read_file(p)[1] for p in files + [late]]
    # Every check, golden answers, outcomes; retail held to its policy with a stricter
    # shadow, the gated agent to a shadow policy only; a band for the gated agent.
    checks = ChecksConfig(golden=str(GATE / "golden.json"), outcomes=str(outcomes), bindings=(
        BindingConfig(agents=("retail",), policy=str(POLICY), shadow=ShadowConfig(policy=str(SHADOWS["retail"]))),
        BindingConfig(agents=("faultline-*",), shadow=ShadowConfig(policy=str(SHADOWS["faultline-*"])))))
    gate = GateConfig(bands=(GateBandConfig(agents=("faultline-*",), band=str(_with_trajectories(tmp))),), window=30)
    # The user's own evaluator: here every run's output passed, so Luck Rate is the share
    # of runs whose path was not clean.
    scenarios = {v.scenario for v in check_spans(spans, ruleset.build(dataclasses.replace(checks, outcomes=None)).checks)}
    outcomes.write_text(json.dumps({s: True for s in scenarios}))
    offline = check_spans(spans, [*ruleset.build(checks).checks])
    per_pass = len(offline) - LATE_RUNS
    metrics_port, downstream_port = free_port(), free_port()
    out = tmp / "downstream"
    out.mkdir()
    config = dataclasses.replace(make_config(), checks=checks, gate=gate,
                                 metrics=MetricsConfig(endpoint=f"127.0.0.1:{metrics_port}"),
                                 export=SpansExportConfig(endpoint=f"127.0.0.1:{downstream_port}"))
    sink = Collected()
    service = Service(config, extra_sinks=[sink])
    with running_collector(downstream_config(downstream_port, out), tmp, name="downstream"):
        service.start()
        try:
            with running_prometheus([f"127.0.0.1:{metrics_port}"], tmp) as prom:
                eventually(lambda: prom.query('up{job="e2e"} == 1'), timeout=30, what="Prometheus scraping the service")
                started = time.time()
                # Three passes over the examples, each with its own trace ids and a few
                # scrapes between them: a series is born at its first increment, so rates
                # (and the panels' ratios of rates) need its later increments to be seen.
                for n in range(1, PASSES + 1):
                    sender = GrpcSender(f"127.0.0.1:{service.ports['grpc']}")
                    try:
                        replay([str(p) for p in _copies(files + ([late] if n == PASSES else []), tmp / f"pass{n}", n)],
                               sender)
                    finally:
                        sender.close()
                    decided = n * per_pass + (LATE_RUNS if n == PASSES else 0)
                    sink.wait_for(decided, timeout=60)
                    eventually(lambda d=decided: prom.query(f"sum(faultgate_runs_total) >= {d}"),
                               timeout=30, what=f"pass {n}'s runs in Prometheus")
                    time.sleep(2.5)  # a couple of 1s scrapes
                eventually(lambda: _finite(prom.query("sum(faultgate_exporter_sent_spans_total) > 0")), timeout=30,
                           what="spans exported downstream")
                yield prom, started, service
        finally:
            service.shutdown(grace=1)


def test_every_panel_query_returns_data_from_a_real_prometheus(scraped):
    prom, _, _ = scraped
    missing = []
    queries = 0
    for panel in _panels(_dashboard()):
        for target in panel["targets"]:
            assert _metrics_read(target["expr"]) <= DECLARED, (panel["title"], _metrics_read(target["expr"]) - DECLARED)
            expr = _substitute(target["expr"])
            if not _finite(prom.query(expr)):
                missing.append(f"{panel['title']} [{target['refId']}]: {expr}")
            queries += 1
    assert not missing, "panels without data:\n" + "\n".join(missing)
    assert queries >= 40


def test_every_template_variable_has_values(scraped):
    prom, _, _ = scraped
    for var in _dashboard()["templating"]["list"]:
        if var["type"] != "query":
            continue
        selector = _substitute(_label_values_query(var["definition"]))
        assert prom.query(selector), f"variable {var['name']}: {selector} has no series"


def test_exemplar_panels_link_to_the_trace_view_and_have_trace_id_exemplars(scraped):
    prom, started, _ = scraped
    dashboard = _dashboard()
    names = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert names["traces"]["type"] == "datasource"
    exemplar_targets = [(p, t) for p in _panels(dashboard) for t in p["targets"] if t.get("exemplar")]
    assert exemplar_targets
    with_exemplars = 0
    for panel, target in exemplar_targets:
        links = panel["fieldConfig"]["defaults"]["links"]
        assert any("${traces}" in link["url"] and "${__data.fields.trace_id}" in link["url"] for link in links), \
            panel["title"]
        series = prom.exemplars(_substitute(target["expr"]), started - 60, time.time() + 60)
        ids = {e["labels"].get("trace_id") for s in series for e in s["exemplars"]}
        if ids:
            assert all(i and re.fullmatch(r"[0-9a-f]{32}", i) for i in ids), ids
            with_exemplars += 1
    # runs, checks fired, verdict delay, run duration at least (early fires need an early finding)
    assert with_exemplars >= 4


def test_the_analysis_fails_on_fail_pauses_on_inconclusive_and_passes_on_pass_with_real_gate_data(scraped):
    prom, _, _ = scraped
    verdicts = prom.query("max by (agent, version, verdict) (faultgate_gate_verdict) == 1")
    assert verdicts, "the gate published no verdict"
    phase_of = {"fail": "Failed", "inconclusive": "Inconclusive", "pass": "Successful"}
    metric = _analysis_metric()
    phases = {}
    for row in verdicts:
        labels = row["metric"]
        result = [float(r["value"][1]) for r in prom.query(_analysis_query(labels["agent"], labels["version"]))]
        assert len(result) == 1
        phase = argo_measurement(metric, result)
        # what the analysis decides is what the gate said, window by window
        assert phase == phase_of[labels["verdict"]], labels
        phases[labels["version"]] = argo_metric_phase(metric, [phase] * metric["count"])
    # the GPT candidate (B) fails the analysis, the GLM run (A) passes it, four runs (C) pause it
    assert {v: phases[v] for v in "ABC"} == {"A": "Successful", "B": "Failed", "C": "Inconclusive"}
    # a version nobody sent has no data, and no data never passes
    assert prom.query(_analysis_query("faultline-agent", "never-deployed")) == []
    assert argo_measurement(metric, []) == "Inconclusive"
