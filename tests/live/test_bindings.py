"""Per-agent rules live: bindings by agent glob, nearest-agent attribution of steps, early
findings before the root arrives, and SIGHUP reloads that leave runs in flight alone."""
from __future__ import annotations

import dataclasses

from faultgate_stream.checks.config import BindingConfig, ChecksConfig
from tests.live.test_receivers import _request, _span, _stub
from tests.live_service import make_config


def _spec(tmp_path, name: str, forbidden: list[str]) -> str:
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"forbidden: {forbidden}\nground: false\nsecrets: false\n")
    return str(p)


def _with_bindings(*bindings: BindingConfig, **assemble):
    cfg = make_config(**assemble)
    return dataclasses.replace(cfg, checks=ChecksConfig(bindings=bindings))


def _agent(trace: int, span: int, name: str, parent: int = 0):
    return _span(trace, span, parent=parent, name=f"invoke_agent {name}", gen_ai__operation__name="invoke_agent",
                 gen_ai__agent__name=name)


def _call(trace: int, span: int, parent: int, tool: str):
    return _span(trace, span, parent=parent, name=f"execute_tool {tool}", gen_ai__operation__name="execute_tool",
                 gen_ai__tool__name=tool, gen_ai__tool__call__arguments="{}")


def _fired(verdict) -> set[tuple[str, str]]:
    return {(r.check, r.agent) for r in verdict.fired}


def test_a_binding_holds_only_the_agents_its_glob_matches(live_service, tmp_path):
    live = live_service(_with_bindings(BindingConfig(agents=("support-*",), spec=_spec(tmp_path, "s", ["issue_refund"]))))
    channel, stub = _stub(live)
    stub.Export(_request(_agent(1, 1, "support-eu"), _call(1, 2, 1, "issue_refund"),
                         _agent(2, 1, "billing"), _call(2, 2, 1, "issue_refund")), timeout=5)
    channel.close()
    verdicts = {v.agent: v for v in live.sink.wait_for(2)}
    assert _fired(verdicts["support-eu"]) == {("trajectory.forbidden", "")}
    assert _fired(verdicts["billing"]) == set()


def test_in_a_multi_agent_run_each_agent_is_held_to_its_own_rules(live_service, tmp_path):
    live = live_service(_with_bindings(
        BindingConfig(agents=("planner",), spec=_spec(tmp_path, "p", ["web_search"])),
        BindingConfig(agents=("researcher",), spec=_spec(tmp_path, "r", ["send_email"]))))
    channel, stub = _stub(live)
    # allowed: the planner emails, its researcher searches
    stub.Export(_request(_agent(3, 1, "planner"), _call(3, 2, 1, "send_email"),
                         _agent(3, 3, "researcher", parent=1), _call(3, 4, 3, "web_search")), timeout=5)
    # not allowed: the planner searches, its researcher emails
    stub.Export(_request(_agent(4, 1, "planner"), _call(4, 2, 1, "web_search"),
                         _agent(4, 3, "researcher", parent=1), _call(4, 4, 3, "send_email")), timeout=5)
    channel.close()
    verdicts = {v.key.trace_id[-1]: v for v in live.sink.wait_for(2)}
    assert _fired(verdicts["3"]) == set()
    assert _fired(verdicts["4"]) == {("trajectory.forbidden", "planner"), ("trajectory.forbidden", "researcher")}
    assert live.sample("faultgate_check_fired_total", check="trajectory.forbidden") == 2


def test_a_forbidden_call_is_counted_early_before_its_root_arrives_then_judged(live_service, tmp_path):
    live = live_service(_with_bindings(BindingConfig(agents=("*",), spec=_spec(tmp_path, "any", ["rm_rf"]))))
    channel, stub = _stub(live)
    stub.Export(_request(_call(5, 2, 1, "rm_rf")), timeout=5)
    assert live.sample("faultgate_check_early_fired_total", check="trajectory.forbidden") == 1
    assert live.sink.verdicts == []
    stub.Export(_request(_agent(5, 1, "ops")), timeout=5)
    channel.close()
    (v,) = live.sink.wait_for(1)
    assert _fired(v) == {("trajectory.forbidden", "")}
    assert [f.check for f in v.early] == ["trajectory.forbidden"]


def test_a_reload_applies_to_new_runs_and_an_invalid_one_is_rejected_keeping_the_old(live_service, tmp_path):
    spec = tmp_path / "live.yaml"
    spec.write_text("forbidden: [a]\nground: false\nsecrets: false\n")
    live = live_service(_with_bindings(BindingConfig(agents=("*",), spec=str(spec)), root_grace=1.0))
    channel, stub = _stub(live)
    stub.Export(_request(_agent(6, 1, "x"), _call(6, 2, 1, "b")), timeout=5)   # in flight across the reload
    spec.write_text("forbidden: [b]\nground: false\nsecrets: false\n")
    assert live.service.reload() is True
    stub.Export(_request(_agent(7, 1, "x"), _call(7, 2, 1, "b")), timeout=5)   # starts after it
    spec.write_text("forbidden: [b\n")                                          # broken YAML
    assert live.service.reload() is False
    stub.Export(_request(_agent(8, 1, "x"), _call(8, 2, 1, "b")), timeout=5)   # still the valid new rules
    channel.close()
    verdicts = {v.key.trace_id[-1]: v for v in live.sink.wait_for(3)}
    assert _fired(verdicts["6"]) == set()
    assert _fired(verdicts["7"]) == {("trajectory.forbidden", "")}
    assert _fired(verdicts["8"]) == {("trajectory.forbidden", "")}
    assert live.sample("faultgate_config_reloads_total", result="applied") == 1
    assert live.sample("faultgate_config_reloads_total", result="rejected") == 1
