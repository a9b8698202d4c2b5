"""The one record type checks read, and the run it belongs to.

A ``SpanRecord`` is one span after ``read/`` has understood its convention (OTel GenAI old
and new shapes, OpenInference, OpenLLMetry, or a vendor export mapped onto them). Checks
never see a convention: they read ``Run.steps``, ``Run.prompt``, ``Run.answer`` and the
span fields below.

Ownership: a record is immutable once built; the assembler and every check may hold it.

The per-span and per-step records are ``NamedTuple``s: immutable and equal by value like
frozen dataclasses, and built by one tuple allocation. A frozen dataclass sets each field
through ``object.__setattr__``: building a ``SpanRecord`` took 2.4 us that way, 0.9 us as
a tuple by keywords and 0.35 us by position, on each of the ~670 spans of a 30-trace file.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

# Operation names the reader normalises onto (gen_ai.operation.name values).
INVOKE_AGENT = "invoke_agent"
EXECUTE_TOOL = "execute_tool"
CREATE_AGENT = "create_agent"  # building an agent, not running one

# What a span should have carried and did not (``SpanRecord.missing``, bit flags): content
# capture is opt-in in every convention, so an absent attribute means "not recorded", not
# "empty". Checks that need the missing input report "undecided" instead of passing.
MISSING_INPUT = 1          # a model span without its input messages
MISSING_OUTPUT = 2         # a model span without its output messages
MISSING_FINISH = 4         # a model span without gen_ai.response.finish_reasons
MISSING_TOOL_ARGUMENTS = 8  # a tool span without its arguments
MISSING_TOOL_RESULT = 16   # a tool span without its result
MISSING_WHAT = ((MISSING_INPUT, "input messages"), (MISSING_OUTPUT, "output messages"),
                (MISSING_FINISH, "finish reasons"), (MISSING_TOOL_ARGUMENTS, "tool arguments"),
                (MISSING_TOOL_RESULT, "tool results"))
# What a span carries that no convention read (``SpanRecord.missing`` too): the reader
# recognised agent work by the words of the span's name and keys (native/src/read/unread.rs)
# but knows no vocabulary to read it in. ``model/unread.py`` says what that leaves a run.
UNREAD_TOOL = 32     # the span looks like a tool call
UNREAD_MODEL = 64    # the span looks like a model call
UNREAD_OUTPUT = 128  # the span gave no answer yet carries output (its key: UNREAD_OUTPUT_KEY)
UNREAD = UNREAD_TOOL | UNREAD_MODEL | UNREAD_OUTPUT
UNREAD_OUTPUT_KEY = "faultgate.unread_output"

# The default ``attrs``: shared by every record built without attributes, so read-only.
NO_ATTRS: Mapping[str, Any] = MappingProxyType({})
ERROR_TYPE = "error.type"  # read by SpanRecord.error_type


class ToolCall(NamedTuple):
    """A tool call named inside a model's output message (a ``tool_call`` part)."""

    call_id: str
    name: str
    arguments: str


class ToolExecution(NamedTuple):
    """What an ``execute_tool`` span says about the call it ran."""

    name: str
    arguments: str
    result: str
    call_id: str = ""


class SpanRecord(NamedTuple):
    """One span, convention-free. Only the fields some check or the assembler reads are kept."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int = 0
    status_code: int = 0          # OTLP: 0 unset, 1 ok, 2 error
    status_message: str = ""
    operation: str | None = None  # gen_ai.operation.name after convention mapping; None when absent
    # attributes other than message content: a dict, or the core's (``SpanAttributes``)
    attrs: Mapping[str, Any] = NO_ATTRS
    prompt: str = ""              # the user's text in this span's input messages
    answer: str = ""              # the assistant's text in this span's output messages
    tool: ToolExecution | None = None
    calls: tuple[ToolCall, ...] = ()               # tool_call parts of output messages
    responses: tuple[tuple[str, str], ...] = ()    # (call id, result) of tool_call_response parts
    finish_reasons: tuple[str, ...] = ()
    # OpenInference LLM spans repeat the calls their TOOL spans carry, usually without a call
    # id to pair them by: when a run has tool spans, these message calls are not steps.
    calls_shadowed_by_tool_spans: bool = False
    size: int = 0                 # approximate bytes held, for the assembler's memory bound
    missing: int = 0              # MISSING_* flags: what this span should carry and does not

    @property
    def is_agent(self) -> bool:
        return self.operation == INVOKE_AGENT

    @property
    def is_tool(self) -> bool:
        return self.tool is not None

    @property
    def error_type(self) -> str:
        v = self.attrs.get(ERROR_TYPE)
        return str(v) if v else ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.trace_id, self.span_id)


class Step(NamedTuple):
    """One tool call of a run, in start-time order. ``index`` is 1-based, as reasons print it."""

    index: int
    tool: str
    arguments: str
    result: str
    span_id: str
    call_id: str = ""
    start_ns: int = 0
    ok: bool = True  # the span said it failed (status error); results may also say so in text
    missing: int = 0  # MISSING_TOOL_ARGUMENTS / MISSING_TOOL_RESULT: its span did not record them


class RunKey(NamedTuple):
    """A run is the subtree under the top-most ``invoke_agent`` span of a trace."""

    trace_id: str
    root_span_id: str  # "" for a fragment whose root never arrived

    def __str__(self) -> str:
        return f"{self.trace_id}/{self.root_span_id}" if self.root_span_id else self.trace_id


# The compiled core builds records (and reasons) of these classes (native/py/src/types.rs):
# they are handed to it here, and it imports no Python module to find them.
from faultgate_stream import _native  # noqa: E402  (after the classes it is given)
from faultgate_stream.model.reason import Quote, Reason  # noqa: E402

_native.use_types(SpanRecord, ToolExecution, ToolCall, Step, NO_ATTRS, Reason, Quote)
# A record the compiled reader built holds its attributes in the core: ``attrs`` is then a
# read-only mapping over them (``SpanAttributes``), each value made when it is read.
SpanAttributes = _native.SpanAttributes
Mapping.register(SpanAttributes)
