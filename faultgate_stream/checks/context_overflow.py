"""context_overflow: the run hit the model's context window or output token limit.

Two structural signals: a span whose ``gen_ai.response.finish_reasons`` says the output
was cut (``length``, ``max_tokens``, ``max_output_tokens``, ``model_length``,
``model_context_window_exceeded``), or a provider error naming the context limit in a
span's status message, its ``error.type``, a tool result that is an error, or the root's
``faultgate.termination``. Text that merely talks about tokens is not evidence: the
phrases are the error forms providers return ("context length exceeded", "maximum
context length", "prompt is too long", "too many tokens", "token limit reached", ...;
native/core/src/checks/context_overflow.rs, matched as Python's ``re`` with ``re.I`` matches
them). A cut-off is final the moment its span arrives, so it fires early. A run whose
model spans did not record finish reasons is undecided.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream import _native
from faultgate_stream.checks.base import Check
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import FINISH_REASONS, STEPS
from faultgate_stream.model.verdict import CheckResult


class ContextOverflow(Check):
    name = "context_overflow"
    reads = (FINISH_REASONS, STEPS)
    fires_on_evidence = True
    description = "The run hit the context window or output token limit (finish reason or provider error)."

    def __init__(self) -> None:
        self._outcomes = _native.Outcomes(CheckResult, self.name, self.severity, self.kind)

    # observe(state, span) and observe_spans are the compiled functions themselves: no
    # Python frame per span
    observe = staticmethod(_native.context_overflow_observe)
    observe_spans = staticmethod(_native.context_overflow_observe_spans)

    def finish(self, state: Any, run: Run) -> CheckResult:
        return _native.context_overflow(run, self._outcomes)
