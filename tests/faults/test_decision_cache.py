"""Defect 9 of issue 9: 2 M late spans into one decided trace added 200 MB while every
memory gauge read 0. The decision cache is bounded in bytes too, and measured."""
from __future__ import annotations

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.assemble.live import LiveAssembler
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.pipeline import RunList
from faultgate_stream.testing import agent, span, trace_id


def test_late_spans_into_one_decided_trace_stay_within_the_byte_bound_and_are_measured():
    clock, telemetry, sink = ManualClock(10**18), Telemetry(), RunList()
    bound = 200_000
    live = LiveAssembler(Assembler(sink, clock, AssembleConfig(root_grace=0.1, decision_cache_bytes=bound)),
                         clock, telemetry, tick=0.05)
    t = trace_id()
    root = agent(t)
    live.consume([root])
    clock.advance(1)
    live.consume([])
    assert len(sink.runs) == 1
    reg = telemetry.registry
    assert reg.get_sample_value("faultgate_decision_cache_traces") == 1
    assert reg.get_sample_value("faultgate_decision_cache_bytes") > 0
    peak = 0.0
    for _ in range(20):
        live.consume([span(t, "late", parent=root.span_id) for _ in range(500)])
        peak = max(peak, reg.get_sample_value("faultgate_decision_cache_bytes"))
    assert 0 < peak <= bound
    assert reg.get_sample_value("faultgate_decision_cache_evictions_total") >= 1
    assert reg.get_sample_value("faultgate_late_spans_total") > 0
