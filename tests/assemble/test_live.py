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


def test_a_run_completes_at_its_deadline_not_at_the_next_tick():
    """The tick here is a minute: a request that comes when a root's grace has run out
    completes its run first, though no tick is overdue; one a nanosecond earlier does not."""
    clock = ManualClock(10**18)
    sink = RunList()
    live = LiveAssembler(Assembler(sink, clock, AssembleConfig(root_grace=0.5)), clock, Telemetry(), tick=60)
    t = trace_id()
    live.consume([agent(t)])
    assert live._asm.due_ns == 10**18 + 500_000_000  # noqa: SLF001 (the deadline the scan waits for)
    clock.advance(0.5 - 1e-9)
    live.consume([])
    assert sink.runs == []
    clock.advance(1e-9)
    live.consume([])
    assert [r.key.trace_id for r in sink.runs] == [t]
    assert live._asm.due_ns is None  # noqa: SLF001 (nothing held, nothing due)


def test_the_ticker_wakes_for_a_deadline_sooner_than_its_tick():
    """On the real clock with a tick of ten minutes: the ticker sleeps until the run's
    deadline, not the tick (the wait below is a bound for a failure, not a timing
    threshold: with the old ticker the run would wait the ten minutes)."""
    from faultgate_stream.model.clock import WallClock
    from tests.peers import eventually

    clock = WallClock()
    sink = RunList()
    live = LiveAssembler(Assembler(sink, clock, AssembleConfig(root_grace=0.2)), clock, Telemetry(), tick=600)
    live.start()
    try:
        t = trace_id()
        live.consume([agent(t)])
        eventually(lambda: len(sink.runs) == 1, timeout=30, what="the run to complete at its deadline")
        assert sink.runs[0].closed_ns - sink.runs[0].root_arrival_ns >= 200_000_000
    finally:
        live.shutdown()


def test_a_deadline_a_failed_scan_left_due_waits_for_the_tick_instead_of_a_scan_loop():
    clock = ManualClock(10**18)
    calls = []

    class _Broken(Assembler):
        def advance(self):
            calls.append(1)
            raise RuntimeError("a bug in the scan")

    live = LiveAssembler(_Broken(RunList(), clock, AssembleConfig(root_grace=0.5)), clock, Telemetry(), tick=10)
    live.consume([agent(trace_id())])
    clock.advance(1)
    for _ in range(5):
        live.consume([])
    assert len(calls) == 1  # the first request scanned; the others wait for the tick
    clock.advance(10)
    live.consume([])
    assert len(calls) == 2


def test_free_time_is_what_is_left_until_the_first_deadline_or_the_tick():
    clock = ManualClock(10**18)
    live = LiveAssembler(Assembler(RunList(), clock, AssembleConfig(root_grace=0.5)), clock, Telemetry(), tick=2)
    assert live.free_ns() == 2_000_000_000  # nothing held: the tick
    live.consume([agent(trace_id())])
    clock.advance(0.3)
    assert live.free_ns() == 200_000_000
    clock.advance(0.3)
    assert live.free_ns() == 0  # due now: no time to give away


def test_the_ticker_gives_its_idle_time_to_the_hook_without_the_lock_and_survives_a_failing_hook():
    from faultgate_stream.model.clock import WallClock
    from tests.peers import eventually

    clock = WallClock()
    sink = RunList()
    telemetry = Telemetry()
    live = LiveAssembler(Assembler(sink, clock, AssembleConfig(root_grace=0.05)), clock, telemetry, tick=0.01)
    calls: list[tuple[int, bool]] = []

    def hook(free_ns: int) -> None:
        free = live._lock.acquire(blocking=False)  # noqa: SLF001 (the hook runs outside the lock)
        if free:
            live._lock.release()  # noqa: SLF001
        calls.append((free_ns, free))
        if len(calls) == 1:
            raise RuntimeError("a bug in the hook")

    live.between_scans(hook)
    live.start()
    try:
        live.consume([agent(trace_id())])
        eventually(lambda: len(calls) >= 3 and len(sink.runs) == 1, timeout=30,
                   what="the ticker to go on calling the hook and closing runs after the hook failed")
    finally:
        live.shutdown()
    assert all(free for _, free in calls)
    assert all(0 <= ns <= 10_000_000 for ns, _ in calls)  # never more than the tick
    assert telemetry.registry.get_sample_value("faultgate_internal_errors_total",
                                               {"stage": "completion_scan"}) >= 1
