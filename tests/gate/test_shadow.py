"""Shadow rules: a binding's ``shadow`` policy is judged on the same runs, counted in its
own series and its own gate, and never reaches a verdict.

On faultgate's retail fixture the active policy (the 0.3.1 keys without an allowlist)
fires on none of the 13 runs, and the shadow (the 0.4 keys, as faultgate's own tests
build them) on the 6 gap runs: the shadow series show those 6 while every verdict stays
the active policy's, result for result the verdicts of the same service without a shadow.
(2 of 13 runs fail on ``unrecovered_tool_error`` under the active policy, not faultgate's
3: PARITY_DEVIATIONS.md, the declared alternative that makes a failed lookup good.)"""
from __future__ import annotations

import dataclasses

from faultgate_stream.checks.config import BindingConfig, ChecksConfig, ShadowConfig
from faultgate_stream.cli.main import main
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.gate.config import GateBandConfig, GateConfig
from tests.live_service import make_config


def test_a_shadow_policy_shows_what_it_would_flag_and_verdicts_stay_the_active_policys(corpus, tmp_path,
                                                                                        live_service, capsys):
    fixture = corpus / "faultgate-0.4.1" / "tests" / "fixtures" / "retail_gaps.json"
    active = corpus / "reference" / "derived_policies" / "policy_retail_v031_no_allow.json"
    shadow = corpus / "reference" / "derived_policies" / "policy_retail_gap_test.json"
    band = tmp_path / "band.json"
    # a band of the active rules: the fixture as two baseline runs
    assert main(["baseline", str(fixture), str(fixture), "--policy", str(active), "--out", str(band)]) == 0
    capsys.readouterr()

    def served(with_shadow: bool):
        binding = BindingConfig(agents=("*",), policy=str(active),
                                shadow=ShadowConfig(policy=str(shadow) if with_shadow else ""))
        live = live_service(dataclasses.replace(make_config(), checks=ChecksConfig(bindings=(binding,)),
                                                gate=GateConfig(bands=(GateBandConfig(band=str(band)),))))
        sender = GrpcSender(live.grpc)
        replay([str(fixture)], sender)
        sender.close()
        return live, live.sink.wait_for(13)

    live, verdicts = served(True)
    _, unshadowed = served(False)
    key = lambda vs: {(str(v.key), r.check): (r.fired, r.reason) for v in vs for r in v.results}  # noqa: E731
    assert key(verdicts) == key(unshadowed)
    assert not any(v.shadow for v in unshadowed)
    agents = {v.agent for v in verdicts}
    assert len(agents) == 1
    (agent,) = agents

    # verdicts: the active policy's (policy fired on none)
    assert sum(not v.clean for v in verdicts) == 2
    assert not any(r.fired for v in verdicts for r in v.results if r.check == "policy")
    assert live.sample("faultgate_check_fired_total", agent=agent, check="policy") == 0
    assert live.sample("faultgate_runs_total", agent=agent, verdict="failed") == 2
    # the shadow: 6 gap runs, each a `gap-*` scenario, in its own series
    fired = [v for v in verdicts if any(r.fired for r in v.shadow if r.check == "policy")]
    assert len(fired) == 6 and all(v.scenario.startswith("gap-") for v in fired)
    assert live.sample("faultgate_shadow_check_fired_total", agent=agent, check="policy") == 6

    # the gates: the active rules sit inside their band; under the shadow the policy's
    # hard block fails the same window
    version = "unknown"
    assert live.sample("faultgate_gate_verdict", agent=agent, version=version, verdict="pass") == 1
    assert round(live.sample("faultgate_gate_clean_rate", agent=agent, version=version), 6) == round(11 / 13, 6)
    assert live.sample("faultgate_shadow_gate_verdict", agent=agent, version=version, verdict="fail") == 1
    assert live.sample("faultgate_shadow_gate_verdict", agent=agent, version=version, verdict="pass") == 0
    shadow_rate = live.sample("faultgate_shadow_gate_clean_rate", agent=agent, version=version)
    assert shadow_rate < 11 / 13
