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
