"""What ``check`` imports: only the modules the command uses (issue 12, item 5).

Each case runs the real console entry point in a fresh interpreter and reports the
modules it had loaded once the command finished; the assertions are about which modules,
never about how long anything took.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import CORPUS

GATE = CORPUS / "faultgate-0.4.1" / "examples" / "gate"

# The live service's libraries, and those only some inputs need: none of them has any work
# to do in `check FILE --golden G` on OTLP/JSON without a policy or spec file.
LIVE_ONLY = ("structlog", "prometheus_client", "grpc", "aiohttp", "google.protobuf", "opentelemetry",
             "confluent_kafka", "urllib3", "tenacity")
ON_DEMAND = ("yaml", "re2", "gzip", "faultgate_stream.checks.trajectory", "faultgate_stream.checks.config",
             "faultgate_stream.checks.loop", "faultgate_stream.receive", "faultgate_stream.export",
             "faultgate_stream.gate", "faultgate_stream.judge", "faultgate_stream.checks.policy.schema",
             "faultgate_stream.checks.policy.requires", "faultgate_stream.checks.window_store",
             "faultgate_stream.verdict.amend",
             # the settings' dataclasses: importing ``dataclasses`` (``inspect``, ``ast`` and
             # ``dis`` under it) and defining seven was 16% of this command's instructions
             # (55 M of 347 M on a gate file, callgrind; bench/README.md, offline)
             "dataclasses", "inspect", "faultgate_stream.assemble.config")

DRIVER = """
import contextlib, io, json, runpy, sys
sys.argv = ["faultgate-stream", *json.loads(sys.argv[1])]
code = None
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module("faultgate_stream.cli.main", run_name="__main__")
    except SystemExit as e:
        code = e.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _loaded(*args: str) -> tuple[int, set[str]]:
    p = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(args)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["code"], set(out["modules"])


def _under(modules: set[str], name: str) -> list[str]:
    return sorted(m for m in modules if m == name or m.startswith(name + "."))


def test_check_on_the_gate_files_loads_no_live_or_on_demand_module(tmp_path):
    code, modules = _loaded("check", str(GATE / "candidate_gpt.json"), "--golden", str(GATE / "golden.json"),
                            "--json", str(tmp_path / "r.json"))
    assert code in (0, 1)
    assert (tmp_path / "r.json").is_file()  # the command did its whole job
    assert "faultgate_stream.checks.wrong_answer" in modules  # and the checks it selected ran
    loaded = {name: _under(modules, name) for name in (*LIVE_ONLY, *ON_DEMAND)}
    assert {k: v for k, v in loaded.items() if v} == {}


def test_a_named_check_loads_that_check_module_alone():
    code, modules = _loaded("check", str(GATE / "candidate_qwen.json"), "--check", "search_loop")
    assert code in (0, 1)
    checks = {m for m in modules if m.startswith("faultgate_stream.checks.")}
    rule_modules = {"faultgate_stream.checks." + n for n in (
        "abstention", "policy", "repeated_call", "unrecovered_tool_error", "context_overflow", "wrong_answer",
        "truncation", "outcome", "loop")}
    assert "faultgate_stream.checks.search_loop" in checks
    assert checks & rule_modules == set()


@pytest.mark.parametrize("suffix, library", [(".yaml", "yaml"), (".json", None)])
def test_a_policy_file_loads_yaml_only_when_it_is_yaml(tmp_path, suffix, library):
    policy = tmp_path / f"policy{suffix}"
    policy.write_text('{"deny_patterns": ["rm -rf"]}', encoding="utf-8")  # JSON is YAML too
    code, modules = _loaded("check", str(GATE / "candidate_qwen.json"), "--policy", str(policy))
    assert code in (0, 1)
    assert ("yaml" in modules) is (library == "yaml")
    # a policy's own patterns are compiled (and refused if RE2 cannot run them) when it loads
    assert "re2" in modules
