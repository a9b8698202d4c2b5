"""Drift on replayed versions: a band built by ``baseline`` from three runs of version 1.0;
another run of 1.0 is not DRIFT, and version 2.0, whose tool mix shifts by construction
(tests/trajectory_runs.py), is, offline (``check --band``) and live (the same files
replayed over OTLP/gRPC into a service whose gate holds the band, read from /metrics)."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest

from faultgate_stream.cli.main import main
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.gate.config import GateBandConfig, GateConfig
from tests.live_service import make_config
from tests.peers import eventually
from tests.trajectory_runs import V1_MIX, V2_MIX, document, version_runs

RUNS = 80


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("versions")

    def write(name: str, spans) -> str:
        path = tmp / name
        path.write_text(json.dumps(document(spans)))
        return str(path)

    baselines = [write(f"v1_run{i}.json", version_runs("support", "1.0", V1_MIX, RUNS, seed=i)) for i in (1, 2, 3)]
    band = str(tmp / "band.json")
    assert main(["baseline", *baselines, "--out", band]) == 0
    return {"band": band, "baselines": baselines,
            "v1": write("v1_again.json", version_runs("support", "1.0", V1_MIX, RUNS, seed=4)),
            "v2": write("v2.json", version_runs("support", "2.0", V2_MIX, RUNS, seed=5))}


def _drift_lines(capsys, *argv: str) -> list[str]:
    capsys.readouterr()
    main(["check", *argv])
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("drift:")]


def test_the_band_holds_the_baselines_trajectories_beside_faultgates_keys(versions):
    doc = json.loads(open(versions["band"]).read())
    counts = doc["trajectories"]["support"]["1.0"]
    assert counts["runs"] == 3 * RUNS
    assert set(counts["tools"]) == {"lookup_order>answer_faq", "lookup_order", "search_kb>answer_faq",
                                    "lookup_order>issue_refund", "search_kb>escalate"}
    assert doc["n"] and doc["clean_rate"]  # faultgate's keys are all there


def test_another_run_of_the_baseline_version_is_not_drift_offline(versions, capsys):
    (line,) = _drift_lines(capsys, versions["v1"], "--band", versions["band"])
    assert line.startswith(f"drift: PASS · support 1.0 · {RUNS} runs vs {3 * RUNS} baseline runs · tools p=")


def test_each_baseline_run_against_the_others_band_is_never_drift(versions, tmp_path, capsys):
    for i, path in enumerate(versions["baselines"]):
        band = str(tmp_path / f"band{i}.json")
        assert main(["baseline", *[p for p in versions["baselines"] if p != path], "--out", band]) == 0
        (line,) = _drift_lines(capsys, path, "--band", band)
        assert not line.startswith("drift: DRIFT"), line


def test_the_shifted_version_is_drift_offline_naming_the_tool_class_that_rose(versions, capsys, tmp_path):
    lines = _drift_lines(capsys, versions["v2"], "--band", versions["band"], "--json", str(tmp_path / "r.json"))
    assert lines[0].startswith(f"drift: DRIFT · support 2.0 · {RUNS} runs vs {3 * RUNS} baseline runs")
    assert lines[1].startswith("drift: moved most: tools search_kb>escalate ")
    (report,) = json.loads((tmp_path / "r.json").read_text())["drift"]
    tools = next(d for d in report["dimensions"] if d["dimension"] == "tools")
    assert report["verdict"] == "DRIFT" and tools["p_value"] < report["threshold"]


def test_live_the_shifted_version_drifts_and_the_baseline_version_does_not(versions, live_service):
    cfg = dataclasses.replace(make_config(), gate=GateConfig(
        bands=(GateBandConfig(agents=("support",), band=versions["band"]),), window=200))
    live = live_service(cfg)
    sender = GrpcSender(live.grpc)
    try:
        replay([versions["v1"], versions["v2"]], sender)
    finally:
        sender.close()
    live.sink.wait_for(2 * RUNS)

    def verdict(version: str) -> str:
        on = [m for m in ("pass", "drift", "inconclusive")
              if live.sample("faultgate_drift_verdict", version=version, verdict=m) == 1]
        return on[0] if len(on) == 1 else "none"

    eventually(lambda: live.sample("faultgate_drift_window_runs", version="2.0") == RUNS, what="v2's window full")
    assert verdict("2.0") == "drift" and verdict("1.0") == "pass"
    text = live.metrics()
    rose = re.findall(r'faultgate_drift_share_change\{agent="support",category="([^"]+)",dimension="tools",'
                      r'version="2.0"\} ([0-9.e+-]+)', text)
    assert max(rose, key=lambda r: float(r[1]))[0] == "search_kb>escalate"
    assert live.sample("faultgate_drift_baseline_runs", version="2.0") == 3 * RUNS
    # the live numbers are the offline ones: same counts, same test
    p_live = live.sample("faultgate_drift_p_value", version="2.0", dimension="tools")
    assert 0 <= p_live < live.sample("faultgate_drift_threshold", version="2.0")
