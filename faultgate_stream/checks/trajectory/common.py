"""What several trajectory checks share: the calls a span makes, a step's arguments as
named values, and reasons that stay short."""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.reason import joined, reason
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.payload import loads

# A reason lists this many findings and counts the rest: a looping run can have hundreds,
# and a reason is read by a person.
MAX_LISTED = 5
# The name an argument text that is not a JSON object goes by in reasons.
WHOLE = "arguments"


def called(span: SpanRecord) -> list[str]:
    """The tools a span calls: the one it executes, and those its model output names.

    A named call counts as soon as the model makes it: whether a tool span later runs it
    or not, the agent reached for that tool. Except where the span's calls only repeat
    tool spans (OpenInference LLM spans): there the tool spans are the calls, as in
    ``Run.steps``, so an early finding never names a call the verdict does not count."""
    names = [span.tool.name] if span.tool is not None else []
    if not span.calls_shadowed_by_tool_spans:
        names += [c.name for c in span.calls]
    return names


def arguments(text: str) -> list[tuple[str, Any]]:
    """A call's arguments as (name, value): the members of a JSON object, else the whole
    text under ``arguments``. Frameworks send objects; a bare string is kept, not lost."""
    s = text.strip()
    if not s:
        return []
    if s[:1] == "{" and s[-1:] == "}":
        try:
            v = loads(s)
        except ValueError:
            return [(WHOLE, s)]
        if isinstance(v, dict):
            return [(str(k), x) for k, x in v.items()]
    return [(WHOLE, s)]


def listing(items: list[str]) -> str:
    """Findings joined for a reason: the first ``MAX_LISTED``, then how many more."""
    shown = joined("; ", items[:MAX_LISTED])  # keeps what is quoted in them (model/reason.py)
    more = len(items) - MAX_LISTED
    return reason(shown, f"; and {more} more") if more > 0 else shown


def steps_word(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"
