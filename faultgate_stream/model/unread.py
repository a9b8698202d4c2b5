"""What a run's spans carry that no convention read, and what it leaves a check unable to see.

The reader marks a span that looks like agent work it could not read (``UNREAD_*`` in
``SpanRecord.missing``, native/src/read/unread.rs): a tool call, a model call, or an answer
in an attribute no convention knows. A run that had such spans read as "nothing happened"
(no steps, no answer), and checks passed it: a run that looped on its tools until its step
limit got the same green as one that worked (issue 40). Here the run says, for each input a
check reads (``STEPS``, ``ANSWER``, ``FINISH_REASONS``), why it may be incomplete; the
evaluator makes a check that would have passed on it undecided, with that reason.

A marked span counts only where no other span does the same work inside it, and no span
that was read does it around it: nesting says what it is. A span above a tool call is a
wrapper of it (PydanticAI's ``running tools``, a generateText around its doGenerate
steps), and one below a read tool call is part of that call; the same for model calls. Computed only for a run that has a marked span: every other run pays one test.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from faultgate_stream import _native
from faultgate_stream.model.records import (
    UNREAD, UNREAD_MODEL, UNREAD_OUTPUT, UNREAD_OUTPUT_KEY, UNREAD_TOOL, SpanRecord,
)

if TYPE_CHECKING:
    from faultgate_stream.model.run import Run

# What a check reads of a run (``Check.reads``): each may be left incomplete by unread work.
STEPS, ANSWER, FINISH_REASONS = "steps", "answer", "finish_reasons"
INPUTS = (STEPS, ANSWER, FINISH_REASONS)
# The span kinds counted (faultgate_unread_spans_total's ``kind``).
KINDS = ("tool", "model", "output")
_MODEL_OPERATIONS = _native.MODEL_OPERATIONS
_NAMED = 3  # names a reason lists; the rest are counted


class UnreadWork:
    """Spans of a run that carry agent work no convention read, by kind, and ``reasons``:
    each input a check reads that they leave incomplete -> why. False when there is none."""

    __slots__ = ("tool_spans", "model_spans", "output_spans", "reasons", "latest_start_ns")

    def __init__(self, tool_spans: int = 0, model_spans: int = 0, output_spans: int = 0,
                 reasons: Mapping[str, str] = MappingProxyType({}), latest_start_ns: int = 0) -> None:
        self.tool_spans, self.model_spans, self.output_spans = tool_spans, model_spans, output_spans
        self.reasons = reasons
        # when the last unread tool or model call began: work that began before a finding's
        # evidence cannot be what would have undone it (a later recovery)
        self.latest_start_ns = latest_start_ns

    def __bool__(self) -> bool:
        return bool(self.reasons)

    def counts(self) -> tuple[tuple[str, int], ...]:
        """(kind, spans) of each kind with any: what ``RunVerdict.unread`` records."""
        return tuple((k, n) for k, n in zip(KINDS, (self.tool_spans, self.model_spans, self.output_spans)) if n)

    def __repr__(self) -> str:
        return f"UnreadWork({self.counts()!r}, {dict(self.reasons)!r})"


NOTHING_UNREAD = UnreadWork()


def unread_work(run: Run) -> UnreadWork:
    """What the run's unread spans leave its checks unable to see."""
    if not run.missing & UNREAD:
        return NOTHING_UNREAD
    spans = run.spans
    parent = {s.span_id: s.parent_id for s in spans}
    bound = len(spans) + 1  # a parent cycle a sender wrote ends the walk

    def ancestors(sid: str | None) -> Iterable[str]:
        sid = parent.get(sid) if sid is not None else None
        for _ in range(bound):
            if sid is None or sid not in parent:
                return
            yield sid
            sid = parent[sid]

    def counted(flag: int, read: set[str]) -> list[SpanRecord]:
        marked = [s for s in spans if s.missing & flag]
        if not marked:
            return marked
        # wrappers of work, read or not (the innermost span is the call), and what is inside
        # a call that was read
        around = {a for sid in read.union(s.span_id for s in marked) for a in ancestors(sid)}
        return [s for s in marked if s.span_id not in around and not any(a in read for a in ancestors(s.span_id))]

    read_tools = {s.span_id for s in spans if s.tool is not None}
    tools = counted(UNREAD_TOOL, read_tools)
    models = counted(UNREAD_MODEL, {s.span_id for s in spans if s.operation in _MODEL_OPERATIONS})
    outputs = [s for s in spans if s.missing & UNREAD_OUTPUT] if not run.answer.strip() else []
    reasons: dict[str, str] = {}
    if tools:
        reasons[STEPS] = _not_read(tools, "tool call")
    elif models and not read_tools:
        reasons[STEPS] = f"tool calls not read: {_not_read(models, 'model call')}"
    if models:
        reasons[FINISH_REASONS] = f"finish reasons not read: {_not_read(models, 'model call')}"
    if outputs:
        root = run.root
        s = root if root is not None and root.missing & UNREAD_OUTPUT else outputs[-1]
        reasons[ANSWER] = (f"the answer was not read: span {s.name!r} carries output in "
                           f"{s.attrs.get(UNREAD_OUTPUT_KEY, 'an attribute')}, which no convention reads")
    elif models and not run.answer.strip():
        reasons[ANSWER] = f"the answer was not read: {_not_read(models, 'model call')}"
    if not reasons:
        return NOTHING_UNREAD
    latest = max((s.start_ns for s in (*tools, *models)), default=0)
    return UnreadWork(len(tools), len(models), len(outputs), MappingProxyType(reasons), latest)


def _not_read(spans: list[SpanRecord], what: str) -> str:
    """``57 spans named ai.toolCall not read as tool calls``, ``1 span named x not read as a
    tool call``, or ``60 spans (57 named ai.toolCall, 3 named x) not read as tool calls``."""
    names = Counter(s.name for s in spans).most_common()
    n = len(spans)
    head = "1 span" if n == 1 else f"{n} spans"
    if len(names) == 1:
        head += f" named {names[0][0]}"
    else:
        more = len(names) - _NAMED
        head += f" ({', '.join(f'{k} named {name}' for name, k in names[:_NAMED])}"
        head += f", {more} other names)" if more > 0 else ")"
    return f"{head} not read as {f'a {what}' if n == 1 else f'{what}s'}"
