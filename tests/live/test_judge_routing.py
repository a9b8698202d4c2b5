"""Judge routing live (judge.when, judge.sample): the real service fed by the OTel SDK's
gRPC exporter, with the scripted OpenAI-compatible server as the judge. Only the runs the
route names reach the judge: the failed and undecided ones, a share of the clean ones
chosen by trace id, and (with a band) the runs of a drifted version whose shape rose; the
tokens sent are counted."""
from __future__ import annotations

import dataclasses
import json
from collections import Counter

from faultgate_stream.cli.main import main
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.gate.config import GateBandConfig, GateConfig
from faultgate_stream.judge.config import JudgeConfig
from faultgate_stream.judge.route import sampled
from faultgate_stream.verdict.config import AmendConfig
from tests.judge.scripted_model import ScriptedModel
from tests.live.test_judge_stage import _Agent as JudgeStageAgent
from tests.live_service import make_config
from tests.peers import eventually
from tests.trajectory_runs import V1_MIX, V2_MIX, document, version_runs

NO = '{"detected": false, "confidence": 0.8, "reason": "went the right way"}'
SAMPLE = 0.3


def _config(model: ScriptedModel, **judge):
    return dataclasses.replace(make_config(), amend=AmendConfig(enabled=True),
                               judge=JudgeConfig(spec=model.spec(), per_minute=1000, **judge))


class _Agent(JudgeStageAgent):
    def run(self, i: int, failing: bool) -> None:
        """A clean run calls ``search`` once; a failing one calls it three times with the
        same arguments and gets the same result (repeated_call fires)."""
        with self.tracer.start_as_current_span("invoke_agent hops", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "hops"}):
            for _ in range(3 if failing else 1):
                with self.tracer.start_as_current_span("execute_tool search", attributes={
                        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                        "gen_ai.tool.call.arguments": json.dumps({"q": f"hop {i}"}),
                        "gen_ai.tool.call.result": "found"}):
                    pass

    def close(self) -> None:
        assert self.provider.force_flush(10_000)
        super().close()


def test_only_failed_runs_and_a_sampled_share_of_clean_ones_reach_the_judge(live_service):
    with ScriptedModel([NO] * 40, usage=True) as model:
        live = live_service(_config(model, when=("failed", "undecided"), sample=SAMPLE))
        agent = _Agent(live.grpc)
        for i in range(20):
            agent.run(i, failing=i % 4 == 0)
        agent.close()
        first = [v for v in live.sink.wait_for(20) if not v.revision]
        failed = {v.key for v in first if v.verdict == "failed"}
        clean = {v.key for v in first if v.verdict == "clean"}
        chosen = {k for k in clean if sampled(k.trace_id, SAMPLE)}
        assert len(failed) == 5 and len(clean) == 15 and 0 < len(chosen) < len(clean)
        routed = failed | chosen
        amended = live.sink.wait_for(20 + len(routed))[20:]
        assert {v.key for v in amended} == routed  # the judge read these runs, and no other
        assert len(model.requests) == len(routed)
        assert live.sample("faultgate_judge_routed_runs_total", route="failed") == len(failed)
        assert live.sample("faultgate_judge_routed_runs_total", route="sampled") == len(chosen)
        assert live.sample("faultgate_judge_routed_runs_total", route="skipped") == len(clean - chosen)
        # what the judge said it read, summed
        assert live.sample("faultgate_judge_tokens_total", source="reported") == sum(model.prompt_tokens) > 0
        assert live.sample("faultgate_judge_tokens_total", source="estimated") == 0


def test_without_reported_usage_the_tokens_sent_are_estimated_from_what_was_sent(live_service):
    with ScriptedModel([NO] * 4) as model:
        live = live_service(_config(model, when=("failed",)))
        agent = _Agent(live.grpc)
        agent.run(0, failing=True)
        agent.run(1, failing=False)
        agent.close()
        live.sink.wait_for(3)
        sent = sum(len(m["content"]) for r in model.requests for m in r["messages"][1:])
        question = model.requests[0]["messages"][0]["content"]
        estimated = live.sample("faultgate_judge_tokens_total", source="estimated")
        # the rendered run and the question, at four characters a token (the system prompt's frame is not counted)
        assert len(model.requests) == 1 and 0 < estimated <= (sent + len(question)) / 4 + 1


def test_runs_of_a_drifted_version_whose_shape_rose_reach_the_judge(live_service, tmp_path):
    def write(name: str, spans) -> str:
        path = tmp_path / name
        path.write_text(json.dumps(document(spans)))
        return str(path)

    band = str(tmp_path / "band.json")
    assert main(["baseline", *[write(f"v1_{i}.json", version_runs("support", "1.0", V1_MIX, 80, seed=i))
                               for i in (1, 2, 3)], "--out", band]) == 0
    v2 = write("v2.json", version_runs("support", "2.0", V2_MIX, 80, seed=5))
    with ScriptedModel([NO] * 200) as model:
        cfg = dataclasses.replace(_config(model, when=("drifted",), checks=()), gate=GateConfig(
            bands=(GateBandConfig(agents=("support",), band=band),)))
        # no question for every run: the judge is asked the spec-less default, wrong_direction
        cfg = dataclasses.replace(cfg, judge=dataclasses.replace(cfg.judge, checks=("wrong_direction",)))
        live = live_service(cfg)
        sender = GrpcSender(live.grpc)
        try:
            replay([v2], sender)
        finally:
            sender.close()
        live.sink.wait_for(80)
        eventually(lambda: live.sample("faultgate_judge_routed_runs_total") == 80, what="80 runs routed")
        drifted = live.sample("faultgate_judge_routed_runs_total", route="drifted")
        eventually(lambda: len(model.requests) == drifted, what="the drifted runs judged")
    assert 0 < drifted < 80
    assert live.sample("faultgate_drift_verdict", version="2.0", verdict="drift") == 1
    # a run is drifted when a category of its shape rose in a dimension that drifted: the
    # escalations did (tools); a lookup alone fell in every dimension (one step, under 1k
    # tokens, its tool class) and is never judged
    judged = Counter(">".join(line.split()[2] for line in r["messages"][1]["content"].splitlines()
                              if line.startswith("Step ")) for r in model.requests)
    print("judged by tool class:", dict(judged))
    assert judged["search_kb>escalate"] > 0 and judged["lookup_order"] == 0
