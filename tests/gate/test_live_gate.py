"""The rolling gate live: verdicts of a real service land in windows per agent and
version, and /metrics says PASS / FAIL / INCONCLUSIVE against the band."""
from __future__ import annotations

import dataclasses
import json
import math

from faultgate_stream.checks.config import ChecksConfig
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.gate.config import GateBandConfig, GateConfig
from tests.live_service import make_config

AGENT = "faultline-agent"


def versioned(src, dst, version: str):
    """The trace file with its resource saying ``service.version`` (no span names a version)."""
    doc = json.loads(src.read_text())
    for rs in doc["resourceSpans"]:
        attrs = rs.setdefault("resource", {}).setdefault("attributes", [])
        attrs.append({"key": "service.version", "value": {"stringValue": version}})
    dst.write_text(json.dumps(doc))
    return dst


def gate_config(corpus, **gate):
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    return dataclasses.replace(
        make_config(), checks=ChecksConfig(golden=str(g / "golden.json")),
        gate=GateConfig(bands=(GateBandConfig(agents=("faultline-*",), band=str(g / "band.json")),), **gate))


def test_the_gpt_candidate_fails_and_a_glm_run_passes_against_the_glm_band(corpus, tmp_path, live_service):
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    live = live_service(gate_config(corpus))
    sender = GrpcSender(live.grpc)
    replay([str(versioned(g / "candidate_gpt.json", tmp_path / "b.json", "B")),
            str(versioned(g / "baseline_glm_run1.json", tmp_path / "a.json", "A"))], sender)
    sender.close()
    verdicts = live.sink.wait_for(60)
    assert {v.agent_version for v in verdicts} == {"A", "B"}  # the verdict carries the version

    def gauge(name, version, **labels):
        return live.sample(name, agent=AGENT, version=version, **labels)

    assert gauge("faultgate_gate_verdict", "B", verdict="fail") == 1
    assert gauge("faultgate_gate_verdict", "B", verdict="pass") == 0
    assert gauge("faultgate_gate_verdict", "A", verdict="pass") == 1
    assert gauge("faultgate_gate_verdict", "A", verdict="fail") == 0
    assert gauge("faultgate_gate_verdict", "A", verdict="inconclusive") == 0
    # the same numbers as the offline gate on the same files (tests/gate/test_parity.py)
    assert gauge("faultgate_gate_clean_rate", "B") == 0.3
    assert gauge("faultgate_gate_clean_rate", "A") == 0.8
    assert round(gauge("faultgate_gate_p_value", "B"), 12) == round(3.4285169936421056e-07, 12)
    assert round(gauge("faultgate_gate_p_value", "A"), 12) == round(0.3686182925428717, 12)
    for v in ("A", "B"):
        assert gauge("faultgate_gate_window_runs", v) == 30
        assert gauge("faultgate_gate_band_min", v) == 0.8
        assert round(gauge("faultgate_gate_band_max", v), 9) == round(26 / 30, 9)
        assert round(gauge("faultgate_gate_pass_threshold", v), 9) == round(0.8 - 1 / 30, 9)
        assert round(gauge("faultgate_gate_fail_threshold", v), 9) == 0.7
        assert math.isnan(gauge("faultgate_gate_required_n", v))  # only sized when inconclusive
        assert gauge("faultgate_gate_undecided_runs_total", v) == 0
    assert live.sample("faultgate_gate_windows_folded_total") == 0


def test_the_window_keeps_the_last_n_decided_runs_and_versions_fold_past_the_bound(corpus, tmp_path, live_service):
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    live = live_service(gate_config(corpus, window=10, max_versions=1))
    sender = GrpcSender(live.grpc)
    replay([str(versioned(g / "baseline_glm_run1.json", tmp_path / "a.json", "A"))], sender)
    live.sink.wait_for(30)  # A holds the one version slot before B arrives
    replay([str(versioned(g / "candidate_gpt.json", tmp_path / "b.json", "B"))], sender)
    sender.close()
    live.sink.wait_for(60)
    assert live.sample("faultgate_gate_window_runs", agent=AGENT, version="A") == 10
    # one version slot: B's 30 runs folded into "other", each counted
    assert live.sample("faultgate_gate_window_runs", agent=AGENT, version="other") == 10
    assert live.sample("faultgate_gate_verdict", agent=AGENT, version="B") == 0
    assert live.sample("faultgate_gate_windows_folded_total") == 30


def test_agents_without_a_band_are_not_gated(corpus, tmp_path, live_service):
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    cfg = gate_config(corpus)
    cfg = dataclasses.replace(cfg, gate=GateConfig(bands=(GateBandConfig(agents=("shop-*",), band=str(g / "band.json")),)))
    live = live_service(cfg)
    sender = GrpcSender(live.grpc)
    replay([str(g / "baseline_glm_run1.json")], sender)
    sender.close()
    live.sink.wait_for(30)
    assert "faultgate_gate_verdict{" not in live.metrics()
    assert live.sample("faultgate_runs_total", agent=AGENT) == 30


def test_luck_rate_per_agent_is_read_from_the_outcome_counters(corpus, live_service):
    from faultgate_stream.checks.registry import RULES
    from tests.live.test_luck_rate import _run
    from tests.live.test_receivers import _request, _stub

    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    cfg = dataclasses.replace(make_config(), checks=ChecksConfig(enabled=tuple(c.name for c in RULES) + ("outcome",)),
                              gate=GateConfig(bands=(GateBandConfig(agents=("shop",), band=str(g / "band.json")),)))
    live = live_service(cfg)
    channel, stub = _stub(live)
    spans = _run(1, "pass", denied=True) + _run(2, "pass", denied=False) + _run(3, "fail", denied=False)
    stub.Export(_request(*spans), timeout=5)
    channel.close()
    live.sink.wait_for(3)
    assert live.sample("faultgate_gate_luck_rate", agent="shop") == 0.5   # 1 of 2 passing runs was dirty
