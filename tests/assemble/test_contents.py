"""Content from log records waits beside its spans within the run's lifetime, bounded and
counted: joined, late, unjoined, capped, duplicate."""
from __future__ import annotations

import pytest

from faultgate_stream.model.errors import BoundError, CapacityError
from faultgate_stream.read.log_events import content_record
from faultgate_stream.testing import agent, span, trace_id
from tests.assemble.test_assembler import make


def _chat(t, parent):
    return span(t, "chat m", parent=parent, start_s=1, gen_ai__operation__name="chat",
                gen_ai__response__finish_reasons=["stop"])


def _answer(t, sid, text="Paris."):
    return content_record(t, sid, 5, {"gen_ai.output.messages": [{"role": "assistant", "parts": [
        {"type": "text", "content": text}]}]})


def test_content_before_its_span_and_content_after_it_both_join_until_the_run_completes():
    asm, sink, clock = make(root_grace=1.0)
    t = trace_id()
    root = agent(t)
    chat = _chat(t, root.span_id)
    asm.add_contents([_answer(t, chat.span_id)])   # before the span
    asm.add([root, chat])
    asm.add_contents([content_record(t, chat.span_id, 6, {"gen_ai.input.messages": [
        {"role": "user", "parts": [{"type": "text", "content": "Capital of France?"}]}]})])  # after it
    clock.advance(2)
    asm.advance()
    (run,) = sink.runs
    merged = next(s for s in run.spans if s.span_id == chat.span_id)
    assert (merged.prompt, merged.answer, merged.missing) == ("Capital of France?", "Paris.", 0)
    assert run.answer == "Paris." and asm.stats.contents_joined == 2
    assert asm.bytes_held == 0


def test_content_after_the_verdict_is_late_and_content_without_a_span_is_unjoined():
    asm, sink, clock = make(root_grace=1.0, idle_timeout=5.0)
    t = trace_id()
    root = agent(t)
    chat = _chat(t, root.span_id)
    asm.add([root, chat])
    clock.advance(2)
    asm.advance()
    res = asm.add_contents([_answer(t, chat.span_id)])
    assert res.late == 1 and asm.stats.contents_late == 1
    lonely = trace_id()
    asm.add_contents([_answer(lonely, "00000000000000aa")])
    assert asm.traces_in_flight == 1 and asm.bytes_held > 0
    clock.advance(6)
    asm.advance()
    assert asm.stats.contents_unjoined == 1 and asm.traces_in_flight == 0 and asm.bytes_held == 0


def test_content_is_bounded_per_trace_and_by_bytes_and_a_retry_is_a_duplicate():
    asm, _, _ = make(max_spans_per_trace=2, max_bytes=10_000)
    t = trace_id()
    records = [_answer(t, f"{i + 1:016x}", f"answer {i}") for i in range(3)]
    res = asm.add_contents(records)
    assert (res.accepted, res.capped) == (2, 1)
    assert asm.add_contents(records[:1]).duplicates == 1
    # more bytes than max_bytes can ever hold: permanent, naming the limit (issue 9, defect 10)
    with pytest.raises(BoundError, match="max_bytes"):
        asm.add_contents([_answer(trace_id(), "00000000000000bb", "x" * 20_000)])
