"""Issue 13, live: a windowed budget fires across two runs of one session, and a loop fires
early (before its run ends) with its waste in the metrics. Real clients: the OpenTelemetry
SDK's OTLP/gRPC span exporter into a real service, as an instrumented agent would send."""
from __future__ import annotations

import dataclasses
import json
import time

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from faultgate_stream.checks.config import BindingConfig, ChecksConfig
from tests.live_service import make_config


def _provider(live) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "support-app"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=live.grpc, insecure=True),
                                                   schedule_delay_millis=50))
    return provider


def _until(what, timeout: float = 20.0):
    """Polls ``what`` until it is truthy (it counts what arrived; the timeout only ends a hung test)."""
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def _support_run(tracer, session: str, lookups: int) -> None:
    with tracer.start_as_current_span("invoke_agent support", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support", "session.id": session}):
        for i in range(lookups):
            with tracer.start_as_current_span("execute_tool lookup_order", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.call.arguments": json.dumps({"order_id": f"#{session}-{i}"}),
                    "gen_ai.tool.call.result": json.dumps({"status": "shipped", "n": i})}):
                pass


def test_a_session_budget_fires_across_two_runs_of_one_session_sent_by_the_sdk(live_service, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("max_calls: {max: 4, within: 10m, per: session}\n")
    cfg = dataclasses.replace(make_config(root_grace=0.2), checks=ChecksConfig(
        bindings=(BindingConfig(agents=("support",), policy=str(policy)),)))
    live = live_service(cfg)
    provider = _provider(live)
    tracer = provider.get_tracer("agent")
    # another session's run first: the same counts, a different key, must not add up
    _support_run(tracer, "S-other", 3)
    assert provider.force_flush(10_000)
    live.sink.wait_for(1)
    _support_run(tracer, "S-1", 3)
    assert provider.force_flush(10_000)
    live.sink.wait_for(2)  # the first run of S-1 is decided (and recorded) before the second starts
    _support_run(tracer, "S-1", 2)
    assert provider.force_flush(10_000)
    verdicts = live.sink.wait_for(3)
    provider.shutdown()
    fired = [[r.check for r in v.fired] for v in verdicts]
    assert fired == [[], [], ["policy"]]
    (r,) = verdicts[2].fired
    assert r.reason == ("step 2: 5 tool calls > max 4 within 10m per session 'S-1' "
                        "(step(s) 1, 2 of this run; 3 in earlier runs)")
    assert live.sample("faultgate_check_fired_total", agent="support", check="policy") == 1
    assert live.sample("faultgate_window_keys") == 2
    assert live.sample("faultgate_window_events") == 8
    assert live.sample("faultgate_window_evicted_keys_total") == 0


def test_a_loop_fires_before_its_run_ends_and_its_metric_carries_the_waste(live_service):
    cfg = dataclasses.replace(make_config(root_grace=0.2), checks=ChecksConfig(enabled=("loop",)))
    live = live_service(cfg)
    provider = _provider(live)
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent hotels", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "hotels"}):
        for i in range(3):
            with tracer.start_as_current_span("chat gpt-4o", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 100 + i,
                    "gen_ai.usage.output_tokens": 10}):
                pass
            # the same search three times, spelled three ways, the same hotels back
            args = ('{"city": "Paris", "limit": 5}', '{ "limit": 5.0, "city": "PARIS" }', '{"city":"paris","limit":5}')[i]
            with tracer.start_as_current_span("execute_tool search_hotels", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_hotels",
                    "gen_ai.tool.call.arguments": args,
                    "gen_ai.tool.call.result": "Hotel Lutetia, 4 stars, 210 EUR" + ("." if i else "")}):
                time.sleep(0.01)
        # the run is still open: its tool spans have been sent, its root has not
        assert provider.force_flush(10_000)
        early = _until(lambda: live.sample("faultgate_check_early_fired_total", check="loop"))
        assert early == 1
        assert live.sink.verdicts == []
        (finding,) = live.sink.findings
        assert finding.check == "loop" and finding.reason.startswith(
            "Tool 'search_hotels' called 3 times with equivalent arguments")
    assert provider.force_flush(10_000)
    (v,) = live.sink.wait_for(1)
    provider.shutdown()
    (r,) = v.fired
    assert r.check == "loop" and [f.check for f in v.early] == ["loop"]
    measures = dict(r.measures)
    assert measures["steps"] == 2
    # the model calls inside the loop: the one that chose the third search started after
    # the second search did (the second's chat came before it, outside)
    assert measures["tokens"] == 102 + 10
    assert "2 steps" in r.reason and "112 tokens" in r.reason
    assert live.sample("faultgate_loop_waste_steps_total", agent="hotels") == 2
    assert live.sample("faultgate_loop_waste_tokens_total", agent="hotels") == 112
    seconds = live.sample("faultgate_loop_waste_seconds_total", agent="hotels")
    assert seconds == measures["seconds"] and seconds > 0
    assert live.sample("faultgate_loop_waste_cost_usd_total", agent="hotels") == 0  # no span recorded a cost
