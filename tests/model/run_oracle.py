"""The Python run facts that native/core/src/run/facts.rs replaced, kept as its oracle (as
tests/read/otlp_json_oracle.py keeps the Python OTLP/JSON reader): for any spans, every
fact of ``Run`` must equal this ``OracleRun``'s.

It is model/run.py as it stood before the compiled facts, its class renamed; the
constants are the package's own, not copied.
"""
from __future__ import annotations

import hashlib
import math
from functools import cached_property
from operator import attrgetter, itemgetter
from typing import Any

from faultgate_stream.model.records import (
    MISSING_OUTPUT, MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT, MISSING_WHAT, RunKey, SpanRecord, Step,
)
from faultgate_stream.model.run import (
    AGENT_NAME, AGENT_VERSION, COST, SCENARIO_ATTRS, SERVICE_VERSION, TERMINATION, USAGE_IN, USAGE_OUT,
)
from faultgate_stream.model.verdict import Completion

span_order = attrgetter("start_ns", "span_id")


_ROW_ORDER = itemgetter(0, 1, 2, 3)
_STEP_MISSING = MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT
CALL_REASONS = frozenset({"tool_calls", "tool_call", "tool_use", "function_call"})
ENDED_ON_A_CALL = "step limit: the agent's last output was a tool call, not an answer"

# Counts and costs are what senders wrote: doubles may be inf or NaN, JSON integers may
# have thousands of digits. None of those is a measure (int(inf) raised, and killed the
# completion scan: issue 9, defect 1); a count is capped where a float still holds it.
_MAX_COUNT = 2**53


def _finite(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, int):
        return float(v) if -_MAX_COUNT <= v <= _MAX_COUNT else None
    return v if math.isfinite(v) else None


def _count(v: object) -> int | None:
    f = _finite(v)
    return int(f) if f is not None else None


def _pair_id_less_spans(tool_spans: list[SpanRecord], spans: tuple[SpanRecord, ...]) -> dict[str, str]:
    """Tool span id -> the call id of the model's call it executed, for spans that carry no
    call id of their own: the k-th such span of a tool is the k-th call of that tool the
    messages name that no span claims by id (both in start order)."""
    claimed = {s.tool.call_id for s in tool_spans if s.tool.call_id}
    calls: dict[str, list[str]] = {}
    for s in spans:
        for c in s.calls:
            if c.call_id and c.call_id not in claimed:
                calls.setdefault(c.name, []).append(c.call_id)
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    for s in tool_spans:
        if s.tool.call_id:
            continue
        k = seen.get(s.tool.name, 0)
        seen[s.tool.name] = k + 1
        ids = calls.get(s.tool.name, ())
        if k < len(ids):
            out[s.span_id] = ids[k]
    return out


class OracleRun:
    """The spans of one run. ``root`` is the top-most ``invoke_agent`` span (or, in a trace
    without one, its parentless span); ``None`` for an orphan fragment."""

    def __init__(self, key: RunKey, spans: list[SpanRecord], root: SpanRecord | None,
                 completion: Completion, *, root_arrival_ns: int = 0, closed_ns: int = 0) -> None:
        self.key = key
        self.spans: tuple[SpanRecord, ...] = tuple(sorted(spans, key=span_order))
        self.root = root
        self.completion = completion
        self.root_arrival_ns = root_arrival_ns  # on the assembler's clock; 0 when no root arrived
        self.closed_ns = closed_ns
        # Spans above every agent that leave the assembler with this run (set by the
        # assembler): not members, but span export releases them with its verdict.
        self.outside_span_ids: frozenset[str] = frozenset()
        # Facts that checks derive from this run and share (which step results are errors,
        # say), keyed by the module that computes them: each is worked out once per run,
        # not once per check that reads it.
        self.derived: dict[str, Any] = {}

    @property
    def trace_id(self) -> str:
        return self.key.trace_id

    def _root_attr(self, name: str) -> object:
        return self.root.attrs.get(name) if self.root is not None else None

    @cached_property
    def prompt(self) -> str:
        """The user's request: the root's, else the first span's that has one."""
        if self.root is not None and self.root.prompt.strip():
            return self.root.prompt
        return next((s.prompt for s in self.spans if s.prompt.strip()), "")

    @cached_property
    def answer(self) -> str:
        """The final answer: the root's, else the last span's that has one, not counting
        what was said inside an agent that ended in error: a nested ``invoke_agent`` that
        failed (``Max turns exceeded``) did not answer, whatever its model said last."""
        if self.root is not None and self.root.answer.strip():
            return self.root.answer
        failed = {s.span_id for s in self.spans if s.is_agent and s.status_code == 2}
        if failed:
            parent_of = {s.span_id: s.parent_id for s in self.spans}

            def inside_failed(sid: str | None) -> bool:
                for _ in range(len(parent_of) + 1):
                    if sid is None:
                        return False
                    if sid in failed:
                        return True
                    sid = parent_of.get(sid)
                return False
            return next((s.answer for s in reversed(self.spans) if s.answer.strip() and not inside_failed(s.span_id)),
                        "")
        return next((s.answer for s in reversed(self.spans) if s.answer.strip()), "")

    @cached_property
    def scenario(self) -> str:
        """Stable across runs of the same task, and equal to faultgate's key for the same trace."""
        for name in SCENARIO_ATTRS:
            v = self._root_attr(name)
            if v:
                return str(v)
        return "p-" + hashlib.sha256(self.prompt.encode("utf-8", "surrogatepass")).hexdigest()[:12]

    @cached_property
    def termination(self) -> str:
        v = self._root_attr(TERMINATION)
        if v is not None:
            return str(v)
        # a run with no answer whose last model call stopped to call tools was stopped there
        last = next((s for s in reversed(self.spans) if s.finish_reasons), None)
        if not self.answer.strip() and last is not None and all(r.lower() in CALL_REASONS for r in last.finish_reasons):
            return ENDED_ON_A_CALL
        return ""

    @cached_property
    def agent(self) -> str:
        v = self._root_attr(AGENT_NAME)
        if v:
            return str(v)
        named = next((s.attrs[AGENT_NAME] for s in self.spans if s.attrs.get(AGENT_NAME)), None)
        if named:
            return str(named)
        if self.root is not None and self.root.name:
            return self.root.name.removeprefix("invoke_agent ").strip() or "agent"
        return "agent"

    @cached_property
    def agent_version(self) -> str:
        """``gen_ai.agent.version`` on the root, else the root's resource ``service.version``."""
        v = self._root_attr(AGENT_VERSION) or self._root_attr(SERVICE_VERSION)
        return str(v) if v else ""

    @cached_property
    def steps(self) -> tuple[Step, ...]:
        """Tool calls in start order. A run with tool spans has one step per tool span: a
        call that a model's output names and no tool span executed was never run (a budget
        ended the run first, a framework refused it), and a span without
        ``gen_ai.tool.call.id`` is the same call as the message's, paired by tool name and
        order, not a second one. A chat-only run (no tool spans) has its calls only in
        messages, each paired with its result by call id."""
        tool_spans = [s for s in self.spans if s.tool is not None]
        # A tool span whose parent is a tool span of the same tool is that call again, one
        # instrumentation layer down: one step, which takes the inner layer's call id.
        by_id = {s.span_id: s for s in tool_spans}
        inner = [s for s in tool_spans if s.parent_id in by_id and by_id[s.parent_id] is not s
                 and by_id[s.parent_id].tool.name == s.tool.name]
        inner_ids: dict[str, str] = {}
        for s in inner:
            if s.tool.call_id:
                inner_ids.setdefault(s.parent_id, s.tool.call_id)
        inner_spans = {id(s) for s in inner}
        tool_spans = [s for s in tool_spans if id(s) not in inner_spans]
        # A call's result is the last tool_call_response carrying its id.
        responses = {cid: res for s in self.spans for cid, res in s.responses}
        if tool_spans:
            # What a tool span did not record, the model's messages may hold under its call
            # id (content only in the messages, or in log events: util-genai's event_only).
            named = {c.call_id: c for s in self.spans for c in s.calls if c.call_id}
            paired = _pair_id_less_spans(tool_spans, self.spans) if named else {}
            steps = []
            for i, s in enumerate(tool_spans, start=1):
                t = s.tool
                call_id = t.call_id or inner_ids.get(s.span_id) or paired.get(s.span_id, "")
                args, result, missing = t.arguments, t.result, s.missing & _STEP_MISSING
                if call_id:
                    if (missing & MISSING_TOOL_ARGUMENTS or not args) and call_id in named:
                        args, missing = named[call_id].arguments, missing & ~MISSING_TOOL_ARGUMENTS
                    if (missing & MISSING_TOOL_RESULT or not result) and call_id in responses:
                        result, missing = responses[call_id], missing & ~MISSING_TOOL_RESULT
                steps.append(Step(i, t.name, args, result, s.span_id, call_id, s.start_ns, s.status_code != 2,
                                  missing))
            return tuple(steps)
        # (start, span id, call's place in its span) orders a row; the rest are the step's
        # fields after its index.
        rows: list[tuple] = []
        for s in self.spans:
            if not s.calls:
                continue
            for n, c in enumerate(s.calls):
                result = responses.get(c.call_id)
                missing = 0 if result is not None else MISSING_TOOL_RESULT  # no later input carries it
                result = result or ""
                rows.append((s.start_ns, 1, s.span_id, n, c.name, c.arguments, result, s.span_id, c.call_id,
                             s.start_ns, not result.startswith("Error: "), missing))
        rows.sort(key=_ROW_ORDER)
        return tuple([Step(i, *r[4:]) for i, r in enumerate(rows, start=1)])

    @cached_property
    def usage_tokens(self) -> float | None:
        total, seen = 0, False
        for s in self.spans:
            a = s.attrs
            if USAGE_IN not in a and USAGE_OUT not in a:  # most spans: one membership test each
                continue
            for k in (USAGE_IN, USAGE_OUT):
                v = a.get(k)
                n = _count(v)
                if n is not None:
                    total += n
                    seen = True
        return float(total) if seen else None

    @cached_property
    def latency_ms(self) -> float | None:
        r = self.root
        if r is not None and r.end_ns and r.start_ns and r.end_ns >= r.start_ns:
            return (r.end_ns - r.start_ns) / 1e6
        ends = [s.end_ns for s in self.spans if s.end_ns]
        starts = [s.start_ns for s in self.spans if s.start_ns]
        if ends and starts and max(ends) >= min(starts):
            return (max(ends) - min(starts)) / 1e6
        return None

    @cached_property
    def cost_usd(self) -> float | None:
        costs = [v for s in self.spans if (v := _finite(s.attrs.get(COST))) is not None]
        return float(sum(costs)) if costs else None

    @cached_property
    def has_content(self) -> bool:
        return bool(self.prompt or self.answer or any(st.arguments or st.result for st in self.steps))

    # ------------------------------------------------------------ what was not captured
    @cached_property
    def missing(self) -> int:
        """The ``MISSING_*`` flags of every span of the run, together."""
        out = 0
        for s in self.spans:
            out |= s.missing
        return out

    @cached_property
    def last_end_ns(self) -> int:
        return max((s.end_ns for s in self.spans), default=0)

    @cached_property
    def span_ids(self) -> frozenset[str]:
        return frozenset(s.span_id for s in self.spans)

    @cached_property
    def answer_not_captured(self) -> str:
        """Why the run's answer cannot be read ("" when it can): no span carries an answer and
        some model span recorded no output messages, so an answer may exist unseen."""
        if self.answer.strip() or self.termination or not self.missing & MISSING_OUTPUT:
            return ""  # a run its root says the framework ended (a step limit) did not answer
        n = sum(1 for s in self.spans if s.missing & MISSING_OUTPUT)
        return f"the final answer was not captured (no output messages on {n} model span(s))"

    @cached_property
    def calls_not_captured(self) -> str:
        """Why some tool calls may be missing from ``steps`` ("" when none can be): the run has
        no tool spans, so its steps are read from model output messages, and some model span
        recorded none (instrumentation with content off): the calls it made are unseen."""
        if not self.missing & MISSING_OUTPUT or any(s.is_tool for s in self.spans):
            return ""
        n = sum(1 for s in self.spans if s.missing & MISSING_OUTPUT)
        return f"tool calls not captured (no tool spans, and no output messages on {n} model span(s))"

    def steps_not_captured(self, flags: int) -> str:
        """Why some steps' arguments or results (``flags``) cannot be read; "" when all can."""
        idx = [st.index for st in self.steps if st.missing & flags]
        if not idx:
            return ""
        what = " or ".join(w for f, w in MISSING_WHAT if f & flags)
        shown = ", ".join(map(str, idx[:5])) + (f" and {len(idx) - 5} more" if len(idx) > 5 else "")
        return f"{what} not captured on step(s) {shown}"
