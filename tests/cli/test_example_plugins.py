"""The example package (examples/plugins), installed with pip as a user would, is found
through its entry points and judges the retail gaps beside a rules file."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "plugins"
RETAIL = ROOT / "examples" / "traces" / "retail_gaps.json"
CLI = [sys.executable, "-c", "import sys; from faultgate_stream.cli.main import main; sys.exit(main())"]
PLUGINS = ("acted_on_error", "bulk_item_change", "empty_searches", "mutation_without_lookup")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package installed by pip into a folder of its own (the test venv stays as it was):
    on PYTHONPATH, its dist-info is what the entry-point lookup reads."""
    target = tmp_path_factory.mktemp("site")
    # offline when the venv can build it (setuptools), else pip fetches the build backend
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *isolation,
                        "--target", str(target), str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return {**os.environ, "PYTHONPATH": str(target)}


def test_the_installed_package_is_listed_with_its_package_version_and_entry_point(installed):
    r = subprocess.run([*CLI, "checks"], capture_output=True, text=True, timeout=120, env=installed)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines()}
    for name in PLUGINS:
        assert name in rows, r.stdout
        assert f"faultgate-checks-example (entry point {name})" in rows[name]
        assert " plugin " in rows[name] and "0.1.0" in rows[name]
    assert "built-in" in rows["search_loop"]


def test_installed_plugins_are_run_by_name_and_not_unless_named(installed, tmp_path):
    out = tmp_path / "report.json"
    r = subprocess.run([*CLI, "check", str(RETAIL), "--plugin", "acted_on_error", "--plugin",
                        "mutation_without_lookup", "--rules", str(EXAMPLE / "rules.yaml"), "--json", str(out)],
                       capture_output=True, text=True, timeout=120, env=installed)
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads(out.read_text())
    fired = {c: sorted(x["scenario"] for x in report["results"] if x["check"] == c and x["detected"])
             for c in report["checks"]}
    assert fired["acted_on_error"] == ["gap-G2-error-text"]
    assert fired["mutation_without_lookup"] == []
    assert fired["unconfirmed_cancel"] == ["gap-G6-no-confirmation"]
    row = next(x for x in report["results"] if x["check"] == "acted_on_error" and x["detected"])
    assert row["evaluator"] == "faultgate-checks-example 0.1.0" and len(row["span_ids"]) == 2
    # installed, not named: not run, so the default report stays faultgate's
    r = subprocess.run([*CLI, "check", str(RETAIL), "--json", str(out)], capture_output=True, text=True,
                       timeout=120, env=installed)
    assert not set(PLUGINS) & set(json.loads(out.read_text())["checks"])
