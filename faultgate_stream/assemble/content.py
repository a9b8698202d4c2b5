"""Content that arrived apart from its span (GenAI log events) merged into the span.

A content record (``read.log_events``) names the span it describes by trace and span id.
The assembler keeps a run's content records beside its spans and merges them when the run
completes, so spans and log records may arrive in any order and batching, live or from
files, and give the same run. The merge is order-free: records are taken in a fixed order
of their own (time, then content), never in arrival order.
"""
from __future__ import annotations

from collections.abc import Iterable

from faultgate_stream.model.records import UNREAD, SpanRecord


def _order(c: SpanRecord) -> tuple:
    return (c.start_ns, c.prompt, c.answer, c.calls, c.responses, c.finish_reasons)


def _joined(span_text: str, texts: Iterable[str]) -> str:
    if span_text.strip():
        return span_text  # the span's own content wins: span_and_event writes both
    return "\n".join(t for t in texts if t)


def merge(span: SpanRecord, contents: Iterable[SpanRecord]) -> SpanRecord:
    """``span`` with what ``contents`` carry and it does not."""
    cs = sorted(contents, key=_order)
    if not cs:
        return span
    missing = span.missing
    for c in cs:
        missing &= c.missing
    # content joined to a span does not make its vocabulary one a convention reads
    missing |= span.missing & UNREAD
    calls = span.calls or tuple(x for c in cs for x in c.calls)
    responses = span.responses or tuple(x for c in cs for x in c.responses)
    finish = span.finish_reasons or tuple(x for c in cs for x in c.finish_reasons)
    return span._replace(prompt=_joined(span.prompt, (c.prompt for c in cs)),
                         answer=_joined(span.answer, (c.answer for c in cs)),
                         calls=calls, responses=responses, finish_reasons=finish, missing=missing)
