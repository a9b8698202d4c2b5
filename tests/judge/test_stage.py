"""The judge stage on its own: the per-minute budget and the bounded queue count what they
skip; a run gone from the store, an error and a timeout are counted; a worker that dies is
counted and makes the service unhealthy. The judge is the scripted server on 127.0.0.1."""
from __future__ import annotations

import threading

import pytest

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.checks.registry import select
from faultgate_stream.judge.config import JudgeConfig
from faultgate_stream.judge.contract import WRONG_DIRECTION
from faultgate_stream.judge.openai import get_judge
from faultgate_stream.judge.stage import JudgeStage
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.consumers import VerdictFanout
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.threads import Threads
from faultgate_stream.pipeline import VerdictList
from faultgate_stream.testing import simple_run
from faultgate_stream.verdict.amend import DecidedRuns
from faultgate_stream.verdict.config import AmendConfig
from faultgate_stream.verdict.evaluate import Evaluator
from tests.judge.scripted_model import ScriptedModel
from tests.peers import eventually

YES = '{"detected": true, "confidence": 0.9, "reason": "walked it backwards"}'


class _Minute:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Pipeline:
    def __init__(self, model: ScriptedModel | None, judge=None, **judge_cfg) -> None:
        self.clock = ManualClock(10**18)
        self.telemetry = Telemetry()
        self.threads = Threads(self.telemetry)
        self.minute = _Minute()
        self.sink = VerdictList()
        cfg = JudgeConfig(spec=model.spec() if model else "openai:http://127.0.0.1:9/v1/m", **judge_cfg)
        self.stage = JudgeStage(cfg, judge or get_judge(cfg.spec, timeout=cfg.timeout), lambda agent: (WRONG_DIRECTION,),
                                self.telemetry, self.threads, monotonic=self.minute)
        self.store = DecidedRuns(AmendConfig(), self.clock, self.telemetry)
        self.evaluator = Evaluator(select(), VerdictFanout([self.sink, self.stage]), telemetry=self.telemetry,
                                   decided=self.store)
        self.asm = Assembler(self.evaluator, self.clock, AssembleConfig(root_grace=0.5))

    def decide(self, n: int = 1) -> None:
        for _ in range(n):
            self.asm.add(simple_run([("search", {"q": "a"}, "b")]))
        self.clock.advance(1)
        self.asm.advance()

    def skipped(self, reason: str) -> float:
        return self.telemetry.registry.get_sample_value("faultgate_judge_skipped_total", {"reason": reason})


def test_over_the_per_minute_budget_questions_are_counted_as_skipped_and_the_minute_slides():
    p = _Pipeline(None, per_minute=2, queue=100)  # never started: the queue only fills
    p.decide(3)
    assert len(p.stage) == 2 and p.skipped("budget") == 1
    p.minute.now += 61
    p.decide(1)
    assert len(p.stage) == 3 and p.skipped("budget") == 1
    p.stage.stop(0)
    assert p.skipped("shutdown") == 3  # what was queued and never asked is counted too


def test_past_the_queue_bound_questions_are_counted_as_queue_full():
    p = _Pipeline(None, per_minute=100, queue=2)
    p.decide(5)
    assert len(p.stage) == 2 and p.skipped("queue_full") == 3
    p.stage.stop(0)


def test_an_answer_arrives_as_an_amendment_and_no_answer_is_counted_by_reason():
    with ScriptedModel([YES, "not json", ("late", 30.0)]) as m:
        p = _Pipeline(m, timeout=0.5)
        p.stage.start(p.evaluator)
        p.decide(3)
        eventually(lambda: p.skipped("error") == 1 and p.skipped("timeout") == 1, what="error and timeout counted")
        eventually(lambda: len(p.sink.verdicts) == 4, what="the judged amendment")
        p.stage.stop(1)
    amended = [v for v in p.sink.verdicts if v.revision]
    assert len(amended) == 1
    (v,) = amended
    assert v.revision == 1 and v.amended_by == "judge:openai:judge-model" and v.amended_checks == ("wrong_direction",)
    assert v.results[-1].check == "wrong_direction" and v.results[-1].fired and v.results[-1].kind == "judge"
    answers = p.telemetry.registry.get_sample_value("faultgate_judge_answers_total",
                                                     {"check": "wrong_direction", "result": "fired"})
    assert answers == 1


def test_a_run_evicted_before_the_judge_reads_it_is_counted():
    with ScriptedModel([YES]) as m:
        p = _Pipeline(m)
        p.store.config = AmendConfig(max_runs=1)
        p.decide(2)  # the second run evicts the first from the store before the worker runs
        p.stage.start(p.evaluator)
        eventually(lambda: p.skipped("evicted") == 1, what="the evicted run counted")
        eventually(lambda: any(v.revision for v in p.sink.verdicts), what="the kept run judged")
        p.stage.stop(1)


class _Dying:
    name, budget, remote = "dying", None, False

    def ask(self, state, question):
        raise SystemExit("a bug that escapes the loop")


def test_a_worker_that_dies_is_counted_and_the_service_is_no_longer_healthy():
    p = _Pipeline(None, judge=_Dying())
    p.stage.start(p.evaluator)
    p.decide(1)
    eventually(lambda: not p.threads.healthy, what="the judge thread's death")
    assert p.threads.dead == frozenset({"judge"})
    assert p.telemetry.registry.get_sample_value("faultgate_thread_deaths_total", {"thread": "judge"}) == 1
    p.stage.stop(0)


@pytest.mark.parametrize("bad, message", [
    ({"spec": "laya"}, "spec: unknown judge"), ({"per_minute": 0}, "per_minute: must be"),
    ({"queue": 0}, "queue: must be"), ({"checks": ("nope",)}, "checks: unknown judge check 'nope'"),
    ({"timeout": 0.0}, "timeout: must be"),
])
def test_bad_judge_settings_are_named(bad, message):
    assert any(message in p for p in JudgeConfig(**bad).validate())


def test_the_worker_never_holds_the_thread_that_publishes_verdicts():
    """A judge held mid-call: verdicts keep being published and queued, at once."""
    gate = threading.Event()
    with ScriptedModel([(YES, 30.0)]) as m:
        m.release = gate
        p = _Pipeline(m, timeout=30)
        p.stage.start(p.evaluator)
        p.decide(1)
        eventually(lambda: len(m.requests) == 1, what="the judge held on its first call")
        p.decide(3)
        assert [v.revision for v in p.sink.verdicts] == [0, 0, 0, 0] and len(p.stage) == 3
        gate.set()
        eventually(lambda: sum(1 for v in p.sink.verdicts if v.revision) == 1, what="the held answer")
        p.stage.stop(1)


def test_the_judge_checks_a_spec_may_name_are_the_questions_there_are():
    from faultgate_stream.checks.judged import JUDGE_CHECKS
    from faultgate_stream.judge.contract import QUESTIONS

    assert JUDGE_CHECKS == tuple(QUESTIONS)
