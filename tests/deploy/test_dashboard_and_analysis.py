"""The Grafana dashboard and the Argo Rollouts AnalysisTemplate against real data.

The example traces are replayed into a running service whose spans go to a real downstream
collector; a real Prometheus (Debian's) scrapes the service; then every query of every panel
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

from faultgate_stream.checks.config import BindingConfig, ChecksConfig
from faultgate_stream.checks.registry import RULES
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.export.metrics.config import MetricsConfig
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.model.telemetry import CATALOG, exposed_name
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.verdict import ruleset
from tests.e2e.downstream import downstream_config
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector, running_prometheus

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "faultgate-stream.json"
ANALYSIS = ROOT / "deploy" / "argo" / "analysis-template.yaml"
TRACES = [ROOT / "examples" / "traces" / "traces.json", ROOT / "examples" / "traces" / "retail_gaps.json"]
POLICY = ROOT / "examples" / "policies" / "retail.json"
# What Grafana puts in for its built-in and "All" values.
SUBSTITUTIONS = {"$__rate_interval": "1m", "$agent": ".*", "$version": ".*"}

# Series every panel may read: the service's catalog plus prometheus_client's process
# collector. A query reading a metric outside this set cannot have data from this service.
PROCESS = {"process_resident_memory_bytes", "process_cpu_seconds_total"}
DECLARED = {exposed_name(s) for s in CATALOG} | PROCESS


PASSES = 3


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
    spans = [read_file(p)[1] for p in TRACES]
    checks = ChecksConfig(enabled=tuple(c.name for c in RULES) + ("outcome",), outcomes=str(outcomes),
                          bindings=(BindingConfig(agents=("retail",), policy=str(POLICY)),))
    # The user's own evaluator: here every run's output passed, so Luck Rate is the share
    # of runs whose path was not clean.
    scenarios = {v.scenario for v in check_spans(spans, ruleset.build(dataclasses.replace(checks, outcomes=None)).checks)}
    outcomes.write_text(json.dumps({s: True for s in scenarios}))
    offline = check_spans(spans, [*ruleset.build(checks).checks])
    metrics_port, downstream_port = free_port(), free_port()
    out = tmp / "downstream"
    out.mkdir()
    config = dataclasses.replace(make_config(), checks=checks,
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
                        replay([str(p) for p in _copies(TRACES, tmp / f"pass{n}", n)], sender)
                    finally:
                        sender.close()
                    sink.wait_for(n * len(offline), timeout=60)
                    eventually(lambda n=n: prom.query(f"sum(faultgate_runs_total) >= {n * len(offline)}"),
                               timeout=30, what=f"pass {n}'s runs in Prometheus")
                    time.sleep(2.5)  # a couple of 1s scrapes
                eventually(lambda: _finite(prom.query("sum(faultgate_exporter_sent_spans_total) > 0")), timeout=30,
                           what="spans exported downstream")
                yield prom, started, service
        finally:
            service.shutdown(grace=1)


def test_every_panel_query_returns_data_from_a_real_prometheus(scraped):
    prom, _, _ = scraped
    missing, waiting = [], []
    for panel in _panels(_dashboard()):
        for target in panel["targets"]:
            undeclared = _metrics_read(target["expr"]) - DECLARED
            if undeclared:
                # a panel over metrics this build does not declare yet (the gate's, before
                # it is merged) cannot have data; it is listed, and must be one of those
                waiting.append((panel["title"], sorted(undeclared)))
                continue
            expr = _substitute(target["expr"])
            rows = _finite(prom.query(expr))
            if not rows:
                missing.append(f"{panel['title']} [{target['refId']}]: {expr}")
    assert not missing, "panels without data:\n" + "\n".join(missing)
    assert all(name.startswith(("faultgate_gate_", "faultgate_shadow_")) for _, names in waiting for name in names), waiting


def test_every_template_variable_has_values(scraped):
    prom, _, _ = scraped
    for var in _dashboard()["templating"]["list"]:
        if var["type"] != "query":
            continue
        selector = _substitute(_label_values_query(var["definition"]))
        if _metrics_read(selector) - DECLARED:
            continue  # the version variable reads the gate's verdicts
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


def test_the_analysis_query_runs_against_the_same_prometheus_and_agrees_with_the_gate(scraped):
    prom, _, service = scraped
    verdicts = prom.query("max by (agent, version, verdict) (faultgate_gate_verdict) == 1")
    if "faultgate_gate_verdict" not in {s.name for s in CATALOG}:
        # before the live gate is merged: no window, no data, and no data must not pass
        result = [float(r["value"][1]) for r in prom.query(_analysis_query("retail", ""))]
        assert verdicts == [] and result == []
        assert argo_measurement(_analysis_metric(), result) == "Inconclusive"
        return
    assert verdicts, "the gate published no verdict"
    expected = {"fail": "Failed", "inconclusive": "Inconclusive", "pass": "Successful"}
    for row in verdicts:
        labels = row["metric"]
        result = [float(r["value"][1]) for r in prom.query(_analysis_query(labels["agent"], labels["version"]))]
        assert len(result) == 1
        assert argo_measurement(_analysis_metric(), result) == expected[labels["verdict"]], labels


def test_the_dashboard_is_well_formed_for_grafana_import():
    dashboard = _dashboard()
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    cells = set()
    for p in panels:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        for dx in range(g["w"]):
            for dy in range(g["h"]):
                cell = (g["x"] + dx, g["y"] + dy)
                assert cell not in cells, f"{p['title']} overlaps another panel"
                cells.add(cell)
        if p["type"] != "row":
            assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
            assert {t["refId"] for t in p["targets"]} == {chr(65 + i) for i in range(len(p["targets"]))}
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    used = set(re.findall(r"\$\{?(\w+)", json.dumps(panels))) - {"__rate_interval", "__data"}
    assert used <= variables, used - variables
