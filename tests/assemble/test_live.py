"""The live assembler: shared by receiver threads, never starved, refusing while closing."""
from __future__ import annotations

import pytest

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.assemble.live import LiveAssembler
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.errors import CapacityError
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.verdict import Completion
from faultgate_stream.pipeline import RunList
from faultgate_stream.testing import agent, tool, trace_id


def _live(**cfg):
    clock = ManualClock(10**18)
    sink = RunList()
    telemetry = Telemetry()
    live = LiveAssembler(Assembler(sink, clock, AssembleConfig(**cfg)), clock, telemetry, tick=0.1)
    return live, sink, clock, telemetry


def test_ingestion_runs_an_overdue_completion_scan_itself_so_a_busy_receiver_cannot_starve_it():
    live, sink, clock, _ = _live(root_grace=1.0)  # the ticker thread is never started here
    t = trace_id()
    root = agent(t)
    live.consume([root])
    clock.advance(1.5)
    live.consume([agent(trace_id())])  # unrelated traffic
    assert [r.key.trace_id for r in sink.runs] == [t]


def test_shutdown_refuses_new_spans_retryably_and_completes_runs_in_flight_as_shutdown():
    live, sink, clock, _ = _live(root_grace=60)
    t = trace_id()
    root = agent(t)
    live.consume([root, tool(t, root.span_id, "x")])
    assert live.shutdown() == 1
    assert [r.completion for r in sink.runs] == [Completion.SHUTDOWN]
    with pytest.raises(CapacityError) as e:
        live.consume([agent(trace_id())])
    assert e.value.bound == "shutdown"
    assert live.shutdown() == 0  # safe twice


def test_assembler_counters_reach_the_self_metrics():
    live, sink, clock, telemetry = _live(root_grace=0.5)
    t = trace_id()
    root = agent(t)
    live.consume([root, root])
    clock.advance(1)
    live.consume([tool(t, root.span_id, "late")])
    reg = telemetry.registry
    assert reg.get_sample_value("faultgate_duplicate_spans_total") == 1
    assert reg.get_sample_value("faultgate_late_spans_total") == 1
    assert reg.get_sample_value("faultgate_runs_in_memory") == 0
    assert reg.get_sample_value("faultgate_completion_scan_seconds_count") >= 1


def test_a_request_during_shutdown_is_refused_at_once_while_the_sinks_are_still_busy():
    """Shutdown holds the lock while it completes runs and hands them on; the sinks may be
    slow (a full stdout pipe held a SIGTERM drain's request for 5 s). A request arriving
    then is refused at once. The sink is held on an event the test controls."""
    import threading

    entered, release = threading.Event(), threading.Event()

    class Held(RunList):
        def run_completed(self, run):
            entered.set()
            release.wait(60)
            super().run_completed(run)

    clock = ManualClock(10**18)
    held = Held()
    live = LiveAssembler(Assembler(held, clock, AssembleConfig(root_grace=60)), clock, Telemetry(), tick=0.1)
    t = trace_id()
    live.consume([agent(t)])
    closer = threading.Thread(target=live.shutdown)
    closer.start()
    outcome: list[BaseException | None] = []

    def send() -> None:
        try:
            live.consume([agent(trace_id())])
            outcome.append(None)
        except CapacityError as e:
            outcome.append(e)

    try:
        assert entered.wait(30)
        sender = threading.Thread(target=send)
        sender.start()
        sender.join(30)  # not a timing bound: with the bug it stays blocked until release
        assert not sender.is_alive(), "the request waited for shutdown to finish"
        assert isinstance(outcome[0], CapacityError) and outcome[0].retry_after_s == 1.0
    finally:
        release.set()
        closer.join(30)
    assert [r.key.trace_id for r in held.runs] == [t]
