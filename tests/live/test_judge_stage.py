"""The live judge, in the real service fed by the OTel SDK's gRPC exporter, with the
scripted OpenAI-compatible server on 127.0.0.1 as the judge. A judge that answers slowly
or not at all never holds up rule verdicts or ingestion: shown by what arrives while the
judge is held on an event the test controls; what it could not do is counted."""
from __future__ import annotations

import dataclasses
import urllib.error
import urllib.request

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from faultgate_stream.judge.config import JudgeConfig
from tests.judge.scripted_model import ScriptedModel
from tests.judge.test_stage import YES, _Dying
from tests.live_service import make_config
from tests.peers import eventually

NO = '{"detected": false, "confidence": 0.7, "reason": "followed the chain"}'
HELD = 3600.0  # seconds a reply waits on the model's release event: until the test sets it


class _Agent:
    """Runs as an instrumented agent sends them: the SDK's batching gRPC exporter."""

    def __init__(self, target: str) -> None:
        self.provider = TracerProvider(resource=Resource.create({"service.name": "agent-app"}))
        self.provider.add_span_processor(BatchSpanProcessor(GrpcExporter(endpoint=target, insecure=True),
                                                            schedule_delay_millis=50))
        self.tracer = self.provider.get_tracer("agent")
        self.spans = 0

    def runs(self, n: int) -> None:
        for i in range(n):
            with self.tracer.start_as_current_span("invoke_agent hops", attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "hops"}):
                with self.tracer.start_as_current_span("execute_tool search", attributes={
                        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                        "gen_ai.tool.call.arguments": f'{{"q": "hop {i}"}}', "gen_ai.tool.call.result": "found"}):
                    pass
            self.spans += 2
        assert self.provider.force_flush(10_000)

    def close(self) -> None:
        self.provider.shutdown()


def _config(model: ScriptedModel, **judge):
    return dataclasses.replace(make_config(), judge=JudgeConfig(spec=model.spec(), **judge))


def test_a_held_judge_never_delays_rule_verdicts_or_ingestion_and_its_answers_arrive_as_revision_1(live_service):
    with ScriptedModel([(YES, HELD), NO, NO]) as model:
        live = live_service(_config(model, timeout=HELD, queue=2, per_minute=100))
        agent = _Agent(live.grpc)
        agent.runs(1)
        (first,) = live.sink.wait_for(1)
        eventually(lambda: len(model.requests) == 1, what="the judge held on its first question")
        agent.runs(5)
        # every rule verdict arrives while the judge is still held on its first call
        verdicts = live.sink.wait_for(6)
        assert len(model.requests) == 1 and not model.release.is_set()
        assert [v.revision for v in verdicts] == [0] * 6
        assert live.sample("faultgate_receiver_accepted_spans_total") == agent.spans == 12
        # one run is with the judge, two wait, three found the queue full: counted, not dropped
        assert live.sample("faultgate_judge_skipped_total", reason="queue_full") == 3
        assert live.sample("faultgate_judge_queue_runs") == 2
        model.release.set()
        amended = [v for v in live.sink.wait_for(9) if v.revision]
        agent.close()
    assert len(amended) == 3 and all(v.revision == 1 and v.previous == "clean" for v in amended)
    judged_first = next(v for v in amended if v.key == first.key)
    assert judged_first.verdict == "failed" and judged_first.amended_checks == ("wrong_direction",)
    assert [v.verdict for v in amended if v.key != first.key] == ["clean", "clean"]
    assert live.sample("faultgate_judge_answers_total", check="wrong_direction", result="fired") == 1
    assert live.sample("faultgate_judge_answers_total", check="wrong_direction", result="passed") == 2
    assert live.sample("faultgate_verdict_amendments_total", check="wrong_direction") == 3
    assert live.sample("faultgate_runs_total") == 6
    # the judge read the run masked, as rendered
    assert model.requests[0]["messages"][1]["content"].startswith("Agent: hops")


def test_a_judge_that_never_answers_is_counted_as_timeouts_and_rule_verdicts_stand(live_service):
    with ScriptedModel([("never", HELD)] * 3) as model:
        live = live_service(_config(model, timeout=0.5))
        agent = _Agent(live.grpc)
        agent.runs(3)
        verdicts = live.sink.wait_for(3)
        eventually(lambda: live.sample("faultgate_judge_skipped_total", reason="timeout") == 3,
                   what="three timeouts counted")
        agent.close()
        assert [v.revision for v in verdicts] == [0, 0, 0] and len(live.sink.verdicts) == 3
        assert live.sample("faultgate_verdict_amendments_total") == 0


def test_work_over_the_per_minute_budget_is_counted_as_skipped(live_service):
    # the budget is a sliding minute: these runs all arrive within seconds of each other
    with ScriptedModel([NO] * 3) as model:
        live = live_service(_config(model, per_minute=1))
        agent = _Agent(live.grpc)
        agent.runs(3)
        live.sink.wait_for(3)
        amended = [v for v in live.sink.wait_for(4) if v.revision]
        agent.close()
        assert len(amended) == 1 and len(model.requests) == 1
        assert live.sample("faultgate_judge_skipped_total", reason="budget") == 2


def test_a_dead_judge_worker_takes_readiness_down(live_service):
    with ScriptedModel([]) as model:
        live = live_service(_config(model))
        live.service.judge.judge = _Dying()  # a bug that escapes the worker's loop
        port = live.service.ports["metrics"]

        def ready() -> int:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
                    return r.status
            except urllib.error.HTTPError as e:
                return e.code

        assert ready() == 200
        agent = _Agent(live.grpc)
        agent.runs(1)
        live.sink.wait_for(1)
        eventually(lambda: ready() == 503, what="/readyz down after the judge thread died")
        agent.close()
        assert live.sample("faultgate_thread_deaths_total", thread="judge") == 1


def test_a_spec_names_judge_checks_for_the_agents_its_binding_holds(live_service, tmp_path):
    from faultgate_stream.checks.config import BindingConfig, ChecksConfig

    spec = tmp_path / "hops.yaml"
    spec.write_text("judge: [wrong_direction]\n")
    with ScriptedModel([YES]) as model:
        cfg = _config(model, checks=())  # no question for every run: only the spec's
        cfg = dataclasses.replace(cfg, checks=ChecksConfig(bindings=(BindingConfig(agents=("hops",), spec=str(spec)),)))
        live = live_service(cfg)
        agent = _Agent(live.grpc)
        agent.runs(1)
        with agent.tracer.start_as_current_span("invoke_agent other", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "other"}):
            pass
        assert agent.provider.force_flush(10_000)
        verdicts = live.sink.wait_for(3)
        agent.close()
    (amended,) = [v for v in verdicts if v.revision]
    assert amended.agent == "hops" and amended.amended_checks == ("wrong_direction",) and len(model.requests) == 1
    assert {v.agent for v in verdicts if not v.revision} == {"hops", "other"}
