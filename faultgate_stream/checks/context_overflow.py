"""context_overflow: the run hit the model's context window or output token limit.

Two structural signals: a span whose ``gen_ai.response.finish_reasons`` says the output
was cut, or a provider error naming the context limit in a span's status message, its
``error.type``, a tool result that is an error, or the root's ``faultgate.termination``.
Text that merely talks about tokens is not evidence: the phrases are the error forms
providers return. A cut-off is final the moment its span arrives, so it fires early.
"""
from __future__ import annotations

import re
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.signals import step_errors
from faultgate_stream.model.records import MISSING_FINISH, SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult

CUTOFF_REASONS = frozenset({"length", "max_tokens", "max_output_tokens", "model_length",
                            "model_context_window_exceeded"})
OVERFLOW = re.compile(
    r"context[ _-]?length[ _-]?exceeded|maximum context length|context[ _-]?window[ _-]?(?:exceeded|overflow)"
    r"|exceeds?\s+the\s+(?:model'?s\s+)?(?:context|token)\s+(?:window|limit)|prompt is too long"
    r"|too many (?:input )?tokens|token limit (?:reached|exceeded)|max(?:imum)?[ _-]?tokens? (?:limit )?(?:reached|exceeded)"
    r"|exceeds?\s+the\s+maximum\s+number\s+of\s+tokens|input is too long for (?:the )?requested model",
    re.I,
)
# Every phrase above contains one of these words: a cheap test that skips the regex on
# the common span with no error text at all.
_PREFILTER = ("context", "token", "too long")


def _overflow(text: str) -> str:
    if not text:
        return ""
    low = text.lower()
    for w in _PREFILTER:
        if w in low:
            break
    else:
        return ""
    m = OVERFLOW.search(text)
    return m.group(0) if m else ""


def _span_signal(s: SpanRecord) -> str:
    # Asked of every span twice (as it arrives, and again over the run): the tests skip
    # what is empty, which is nearly everything, without a call.
    if s.finish_reasons:
        cut = next((r for r in s.finish_reasons if r.lower() in CUTOFF_REASONS), None)
        if cut:
            return f"stopped on finish reason {cut!r}: output cut at the token limit"
    if s.status_message:
        found = _overflow(s.status_message)
        if found:
            return f"status: {found!r}"
    error_type = s.error_type
    if error_type:
        found = _overflow(error_type)
        if found:
            return f"error.type: {found!r}"
    return ""


class ContextOverflow(Check):
    name = "context_overflow"
    description = "The run hit the context window or output token limit (finish reason or provider error)."

    def observe(self, state: Any, span: SpanRecord) -> str | None:
        signal = _span_signal(span)
        return f"span {span.span_id} ({span.name}) {signal}" if signal else None

    def finish(self, state: Any, run: Run) -> CheckResult:
        for i, s in enumerate(run.spans, start=1):
            signal = _span_signal(s)
            if signal:
                return self.result(True, f"span {i} ({s.name}) {signal}")
        overflows: dict[str, str] = {}  # a run repeats its results: each is read once
        for i, st in enumerate(run.steps):
            # The cheap text test first: whether the result is an error is asked only of the
            # few results that name a limit.
            found = overflows.get(st.result)
            if found is None:
                found = overflows[st.result] = _overflow(st.result)
            # only results that are errors: a search hit quoting the error text is not an overflow
            if found and (st.result.lstrip().startswith("Error") or step_errors(run)[i]):
                return self.result(True, f"step {st.index} ({st.tool}) result: {found!r}")
        found = _overflow(run.termination)
        if found:
            return self.result(True, f"run terminated: {found!r}")
        if run.missing & MISSING_FINISH:
            n = sum(1 for s in run.spans if s.missing & MISSING_FINISH)
            return self.undecided(f"finish reasons not recorded on {n} model span(s)")
        return self.result(False, "no context overflow or token cutoff")
