"""Defect 1 of issue 9: one span with a non-finite token count killed the completion-scan
thread. No input may kill a thread; a check that raises on one run gives that run an
error result (counted) and the other runs their verdicts; a background thread that dies
anyway takes readiness down and is counted."""
from __future__ import annotations

import math
import threading
import time
import urllib.error
import urllib.request

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.assemble.live import LiveAssembler
from faultgate_stream.checks.base import Check
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.verdict import Completion
from faultgate_stream.pipeline import VerdictList
from faultgate_stream.testing import agent, simple_run, trace_id
from faultgate_stream.verdict.evaluate import Evaluator
from tests.peers import eventually


def _root(trace: int, tokens: float) -> Span:
    s = Span(trace_id=trace.to_bytes(16, "big"), span_id=(trace + 1).to_bytes(8, "big"), name="invoke_agent a",
             start_time_unix_nano=1_700_000_000_000_000_000, end_time_unix_nano=1_700_000_001_000_000_000)
    s.attributes.add(key="gen_ai.operation.name").value.string_value = "invoke_agent"
    s.attributes.add(key="gen_ai.usage.input_tokens").value.double_value = tokens
    return s


def _ready(live) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{live.service.ports['metrics']}/readyz", timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_runs_with_infinite_or_nan_token_counts_get_verdicts_and_the_scan_goes_on(live_service):
    live = live_service(root_grace=0.2)
    channel = grpc.insecure_channel(live.grpc)
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    for n, tokens in enumerate((math.inf, math.nan, -math.inf, 12.0)):
        req = ExportTraceServiceRequest()
        req.resource_spans.add().scope_spans.add().spans.append(_root(1000 * (n + 1), tokens))
        stub.Export(req, timeout=5)
    # no other traffic: only the completion-scan thread can complete these runs
    verdicts = live.sink.wait_for(4, timeout=20)
    channel.close()
    assert sorted(v.measures["tokens"] is None for v in verdicts) == [False, True, True, True]
    assert _ready(live) == 200
    assert live.service.assembler.scan_alive


class _Raises(Check):
    name = "raises"
    description = "raises on runs whose prompt says so"

    def finish(self, state, run):
        if "boom" in run.prompt:
            raise TypeError("a bug in a check")
        return self.result(False, "fine")


def test_a_check_that_raises_on_one_run_gives_it_an_error_result_and_the_other_runs_their_verdicts():
    telemetry = Telemetry()
    sink = VerdictList()
    from faultgate_stream.checks.registry import select
    checks = [_Raises(), *select(None)]
    asm = Assembler(Evaluator(checks, sink, telemetry=telemetry), ManualClock(), AssembleConfig())
    asm.add(simple_run([("search", {"q": "x"}, "r")], prompt="boom"))
    asm.add(simple_run([("search", {"q": "y"}, "r")], prompt="fine"))
    asm.close_all(Completion.COMPLETE)
    assert len(sink.verdicts) == 2
    bad = next(v for v in sink.verdicts if "boom" in str(v.results) or v.results[0].confidence == 0)
    err = bad.results[0]
    assert err.check == "raises" and not err.fired and err.confidence == 0.0 and "TypeError" in err.reason
    assert err.undecided and bad.verdict == "undecided"  # never clean: the check could not judge it
    assert len(bad.results) == len(checks)  # the other checks still judged that run
    good = next(v for v in sink.verdicts if v is not bad)
    assert good.results[0].reason == "fine"
    assert telemetry.registry.get_sample_value("faultgate_check_errors_total", {"check": "raises"}) == 1


class _ShadowRaises(Check):
    name = "shadow_raises"
    description = "a shadow check with a bug"

    def finish(self, state, run):
        raise KeyError("a bug in a shadow check")


class _ReturnsNothing(Check):
    name = "returns_nothing"
    description = "a bound check whose finish forgets to return its result"

    def finish(self, state, run):
        return None


def _two_runs_of_one_trace() -> list:
    t = trace_id()
    # two top-level agents in one trace: two runs, completed by one scan of the trace
    return (simple_run([("search", {"q": "x"}, "r")], prompt="first", name="a", trace=t)
            + simple_run([("search", {"q": "y"}, "r")], prompt="second", name="b", trace=t))


def test_a_shadow_check_that_raises_gives_an_undecided_shadow_result_and_the_verdict_stands():
    from faultgate_stream.checks.registry import select
    from faultgate_stream.verdict.ruleset import Binding, Ruleset
    telemetry = Telemetry()
    sink = VerdictList()
    checks = tuple(select(None))
    rs = Ruleset(checks, (Binding(("*",), checks, shadow=(_ShadowRaises(),)),))
    asm = Assembler(Evaluator(rs, sink, telemetry=telemetry), ManualClock(), AssembleConfig())
    asm.add(_two_runs_of_one_trace())
    asm.close_all(Completion.COMPLETE)
    assert len(sink.verdicts) == 2
    for v in sink.verdicts:
        assert [r.check for r in v.results] == [c.name for c in checks]
        assert not any(r.undecided for r in v.results)
        (shadow,) = v.shadow
        assert shadow.check == "shadow_raises" and shadow.undecided and "KeyError" in shadow.reason
    assert telemetry.registry.get_sample_value("faultgate_check_errors_total", {"check": "shadow_raises"}) == 2


def test_a_verdict_that_cannot_be_worked_out_is_published_undecided_and_the_traces_other_run_still_gets_its_own():
    """A bug outside every check's ``finish`` (here a bound check's result that is not a
    result) used to leave the completion scan: the trace's runs after it got no verdict
    and their held spans were never released."""
    from faultgate_stream.checks.registry import select
    from faultgate_stream.verdict.ruleset import Binding, Ruleset
    telemetry = Telemetry()
    sink = VerdictList()
    checks = tuple(select(None))
    rs = Ruleset(checks, (Binding(("a",), (_ReturnsNothing(),)),))
    asm = Assembler(Evaluator(rs, sink, telemetry=telemetry), ManualClock(), AssembleConfig())
    spans = _two_runs_of_one_trace()
    asm.add(spans)
    asm.close_all(Completion.COMPLETE)
    assert len(sink.verdicts) == 2
    broken, fine = sorted(sink.verdicts, key=lambda v: v.agent)  # the broken one names no agent
    assert broken.agent == "" and fine.agent == "b"
    assert broken.verdict == "undecided" and len(broken.results) == len(checks)
    assert all(r.undecided and "AttributeError" in r.reason for r in broken.results)
    # every span of the run is released with it, root included, as a worked-out verdict's
    first = [s for s in spans if s.attrs.get("gen_ai.agent.name") == "a" or s.parent_id == spans[0].span_id]
    assert broken.root_span_id == spans[0].span_id
    assert broken.released_span_ids == {s.span_id for s in first}
    assert broken.spans == len(first) and broken.key == fine.key._replace(root_span_id=spans[0].span_id)
    assert fine.verdict == "clean" and not any(r.undecided for r in fine.results)
    assert telemetry.registry.get_sample_value("faultgate_internal_errors_total",
                                               {"stage": "verdict_evaluate"}) == 1


def test_a_store_that_fails_to_keep_a_run_still_lets_its_verdict_out():
    from faultgate_stream.checks.registry import select
    from faultgate_stream.verdict.amend import DecidedRuns
    from faultgate_stream.verdict.config import AmendConfig

    class _Broken(DecidedRuns):
        def keep(self, run, verdict, ruleset):
            raise RuntimeError("a bug in the store")

    telemetry = Telemetry()
    sink = VerdictList()
    clock = ManualClock()
    asm = Assembler(Evaluator(list(select(None)), sink, telemetry=telemetry,
                              decided=_Broken(AmendConfig(), clock)), clock, AssembleConfig())
    asm.add(_two_runs_of_one_trace())
    asm.close_all(Completion.COMPLETE)
    assert len(sink.verdicts) == 2 and all(v.clean for v in sink.verdicts)
    assert telemetry.registry.get_sample_value("faultgate_internal_errors_total", {"stage": "verdict_keep"}) == 2


class _RaisesOnceGrown(Check):
    name = "raises_once_grown"
    description = "a bound check whose finish breaks on runs of more than two spans"

    def finish(self, state, run):
        return self.result(False, "fine") if len(run.spans) <= 2 else None


def test_a_late_span_whose_run_cannot_be_evaluated_again_leaves_the_published_verdict_standing():
    from faultgate_stream.checks.registry import select
    from faultgate_stream.verdict.amend import DecidedRuns
    from faultgate_stream.verdict.config import AmendConfig
    from faultgate_stream.verdict.ruleset import Binding, Ruleset
    telemetry = Telemetry()
    sink = VerdictList()
    clock = ManualClock(10**18)
    rs = Ruleset(tuple(select(None)), (Binding(("a",), (_RaisesOnceGrown(),)),))
    asm = Assembler(Evaluator(rs, sink, telemetry=telemetry, decided=DecidedRuns(AmendConfig(), clock)), clock,
                    AssembleConfig(root_grace=0.1))
    spans = simple_run([("search", {"q": "x"}, "r"), ("search", {"q": "y"}, "r")], name="a")
    asm.add([spans[0], spans[1]])
    clock.advance(1)
    asm.advance()
    (first,) = sink.verdicts
    assert any(r.check == "raises_once_grown" and r.reason == "fine" for r in first.results)
    asm.add([spans[2]])  # late: the kept run grows to three spans, and evaluating it again raises
    assert sink.verdicts == [first]  # no amendment, and no exception out of ``add``
    assert telemetry.registry.get_sample_value("faultgate_internal_errors_total", {"stage": "verdict_amend"}) == 1


class _Fatal(BaseException):
    """Not an ``Exception``: what no handler in the loop is meant to swallow."""


class _DyingClock(ManualClock):
    def __init__(self) -> None:
        super().__init__(10**18)
        self.armed = threading.Event()

    def now_ns(self) -> int:
        if self.armed.is_set() and threading.current_thread().name == "completion-scan":
            raise _Fatal()
        return super().now_ns()


def test_a_background_thread_that_dies_takes_readiness_down_and_is_counted(live_service):
    from tests.live_service import make_config
    from faultgate_stream.service import Service
    clock = _DyingClock()
    svc = Service(make_config(), clock=clock)
    svc.start()
    try:
        assert svc.ready
        clock.armed.set()
        eventually(lambda: not svc.ready, timeout=10, what="readiness to go down")
        assert svc.telemetry.registry.get_sample_value("faultgate_thread_deaths_total",
                                                       {"thread": "completion-scan"}) == 1
    finally:
        clock.armed.clear()
        svc.shutdown(grace=0)


def test_a_failing_completion_scan_is_counted_and_the_next_tick_runs_again():
    telemetry = Telemetry()
    clock = ManualClock(10**18)
    sink = VerdictList()
    calls = []

    class _Flaky(Assembler):
        def advance(self):
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("a bug in the scan")
            return super().advance()

    live = LiveAssembler(_Flaky(Evaluator([], sink), clock, AssembleConfig(root_grace=0.1)), clock, telemetry, 0.02)
    live.start()
    try:
        t = trace_id()
        live.consume([agent(t)])
        clock.advance(1)
        eventually(lambda: len(sink.verdicts) == 1, timeout=10, what="the scan to recover")
        assert telemetry.registry.get_sample_value("faultgate_internal_errors_total",
                                                   {"stage": "completion_scan"}) == 1
        assert live.scan_alive
    finally:
        live.shutdown()
