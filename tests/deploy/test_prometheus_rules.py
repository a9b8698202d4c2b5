"""The shipped Prometheus rules, checked and unit-tested by Debian's promtool (installed with
the prometheus package by scripts/install_peers.sh; a missing promtool fails, never skips)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

from faultgate_stream.model.telemetry import CATALOG, exposed_name

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "deploy" / "prometheus"
RULES = PROM / "rules" / "faultgate-stream.rules.yaml"
RULE_TESTS = PROM / "tests" / "faultgate-stream.rules.test.yaml"
README = PROM / "README.md"


def _promtool(*args: str) -> subprocess.CompletedProcess:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not on PATH; run `bash scripts/install_peers.sh` (Debian's prometheus package)"
    return subprocess.run([promtool, *args], capture_output=True, text=True, check=False, cwd=ROOT)


def _rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def _alerts() -> list[dict]:
    return [r for r in _rules() if "alert" in r]


def test_promtool_check_rules_accepts_the_rules_file():
    result = _promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in result.stdout


def test_promtool_unit_tests_of_the_rules_pass():
    result = _promtool("test", "rules", str(RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_test_rules_fails_when_an_alert_is_expected_wrongly(tmp_path):
    # the unit tests can fail: the gate FAIL case expecting version A (which passes) is refused
    tests = yaml.safe_load(RULE_TESTS.read_text())
    tests["rule_files"] = [str(RULES)]
    for group in tests["tests"]:
        for case in group.get("alert_rule_test", []):
            for alert in case["exp_alerts"]:
                if case["alertname"] == "FaultgateGateFail":
                    alert["exp_labels"]["version"] = "A"
    wrong = tmp_path / "wrong.test.yaml"
    wrong.write_text(yaml.safe_dump(tests))
    result = _promtool("test", "rules", str(wrong))
    assert result.returncode != 0 and "FaultgateGateFail" in result.stdout + result.stderr


def test_every_alert_is_tested_firing_and_not_firing():
    cases: dict[str, set[str]] = {}
    for group in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for case in group.get("alert_rule_test", []):
            cases.setdefault(case["alertname"], set()).add("firing" if case["exp_alerts"] else "not firing")
    for alert in _alerts():
        assert cases.get(alert["alert"]) == {"firing", "not firing"}, alert["alert"]


def _anchors(markdown: str) -> set[str]:
    # GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", markdown, re.M)}


def test_every_alert_has_a_severity_and_a_runbook_section_in_the_readme():
    anchors = _anchors(README.read_text())
    for alert in _alerts():
        assert alert["labels"]["severity"] in ("page", "ticket"), alert["alert"]
        path, _, anchor = alert["annotations"]["runbook"].partition("#")
        assert path == "deploy/prometheus/README.md"
        assert anchor == alert["alert"].lower() and anchor in anchors, alert["alert"]


def test_the_rules_read_only_metrics_the_service_declares():
    declared = {exposed_name(s) for s in CATALOG}
    for rule in _rules():
        for name in re.findall(r"(?<![:\w])(faultgate_\w+)", rule["expr"]):
            assert name in declared, f"{rule.get('alert') or rule.get('record')} reads undeclared {name}"
