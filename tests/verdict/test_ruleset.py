"""The ruleset's agent lookup cache: bounded, and what it forgets is counted."""
from __future__ import annotations

import dataclasses

from prometheus_client import CollectorRegistry

from faultgate_stream.checks.config import BindingConfig, ChecksConfig
from faultgate_stream.checks.registry import select
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.verdict.ruleset import MAX_CACHED_AGENTS, Binding, Ruleset
from tests.live_service import make_config

METRIC = "faultgate_ruleset_agent_cache_evictions"


def test_the_agent_names_a_full_cache_forgets_are_counted_across_rulesets():
    evictions = Telemetry(CollectorRegistry())[METRIC]
    checks = tuple(select(None))
    bound = checks[:1]
    first = Ruleset(checks, (Binding(("shop-*",), bound),), evictions=evictions)
    for i in range(MAX_CACHED_AGENTS):
        assert first.bound(f"shop-{i}") == bound
        assert first.bound(f"shop-{i}") == bound  # kept: no clear, nothing counted
    assert evictions._value.get() == 0  # noqa: SLF001 (full, nothing forgotten yet)
    assert first.bound("other") == ()    # one name past the bound: every kept name forgotten
    assert evictions._value.get() == MAX_CACHED_AGENTS  # noqa: SLF001
    # a reload's ruleset counts on the same counter, and a run in flight's old one still does
    second = Ruleset(checks, (Binding(("*",), bound),), generation=1, evictions=evictions)
    for i in range(MAX_CACHED_AGENTS + 1):
        assert second.bound(f"agent-{i}") == bound
    assert evictions._value.get() == 2 * MAX_CACHED_AGENTS  # noqa: SLF001
    # without a counter (the offline command's ruleset) the cache stays bounded all the same
    bare = Ruleset(checks, (Binding(("*",), bound),))
    for i in range(MAX_CACHED_AGENTS + 1):
        bare.bound(f"agent-{i}")
    assert len(bare._cache) == 1  # noqa: SLF001


def test_a_live_services_rulesets_before_and_after_a_reload_report_to_its_scrape(live_service, tmp_path):
    spec = tmp_path / "live.yaml"
    spec.write_text("forbidden: [a]\nground: false\nsecrets: false\n")
    cfg = dataclasses.replace(make_config(), checks=ChecksConfig(bindings=(BindingConfig(agents=("*",),
                                                                                        spec=str(spec)),)))
    live = live_service(cfg)
    assert f"# TYPE {METRIC} counter" in live.metrics()  # exposed at zero from the start
    assert live.sample(f"{METRIC}_total") == 0
    for i in range(MAX_CACHED_AGENTS + 1):
        live.service.ruleset.bound(f"agent-{i}")
    assert live.sample(f"{METRIC}_total") == MAX_CACHED_AGENTS
    assert live.service.reload() is True
    for i in range(MAX_CACHED_AGENTS + 1):
        live.service.ruleset.bound(f"agent-{i}")
    assert live.sample(f"{METRIC}_total") == 2 * MAX_CACHED_AGENTS
