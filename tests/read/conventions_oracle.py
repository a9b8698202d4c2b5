"""read/conventions.py as it stood before native/core/src/read/conventions.rs replaced it, kept
only as the oracle of tests/read/test_conventions_parity.py: the compiled ``build_span`` and
the readers must give the records this gives. Not to be imported by the package.

One span's attributes, in whichever convention wrote them, -> ``SpanRecord``.

Three conventions meet here (see ../shared/reference/telemetry-conventions.md):

- OTel GenAI: ``gen_ai.operation.name``; content in ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` with ``parts`` (``text``, ``tool_call``, ``tool_call_response``
  whose payload is under ``response`` in the schema and ``result`` in older examples), or
  the legacy ``gen_ai.prompt`` / ``gen_ai.completion``; tool spans carry
  ``gen_ai.tool.call.arguments`` / ``.result``.
- OpenInference: ``openinference.span.kind``; a TOOL span's arguments are in
  ``input.value``; LLM messages are flattened into ``llm.{input,output}_messages.N.*``.
- OpenLLMetry: ``traceloop.span.kind`` and ``traceloop.entity.*``; indexed legacy content
  ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` including ``tool_calls.M.*``.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from faultgate_stream.model.records import (
    EXECUTE_TOOL, INVOKE_AGENT, MISSING_FINISH, MISSING_INPUT, MISSING_OUTPUT, MISSING_TOOL_ARGUMENTS,
    MISSING_TOOL_RESULT, NO_ATTRS, UNREAD_MODEL, UNREAD_OUTPUT, UNREAD_TOOL, SpanRecord, ToolCall, ToolExecution,
)
from faultgate_stream import _native
from tests.read import payload_oracle as payload

OI_KIND = "openinference.span.kind"
TL_KIND = "traceloop.span.kind"

# OpenInference kinds onto GenAI operations, as the collector's genainormalizer maps them.
# A CHAIN is not an agent: LangGraph writes every graph node (``agent``, ``tools``,
# ``call_model``, ``should_continue``) as one, and taking each for an agent split one run
# into a view per node. A parentless CHAIN is still its trace's run (below).
OI_OPERATION = {"AGENT": INVOKE_AGENT, "CHAIN": "invoke_workflow", "LLM": "chat", "TOOL": EXECUTE_TOOL,
                "EMBEDDING": "embeddings", "RETRIEVER": "retrieval", "RERANKER": "retrieval",
                "PROMPT": "text_completion"}
# Deliberately not ``task -> invoke_agent`` (the collector's mapping): a traceloop task is a
# unit of work inside an agent, and making each one an agent would split one run into many.
TL_OPERATION = {"agent": INVOKE_AGENT, "tool": EXECUTE_TOOL, "workflow": "invoke_workflow"}

# Indexes of at most nine digits: a key with thousands (int() refuses past 4,300 digits,
# and no list is that long) is not an indexed message, only an attribute (issue 9, defect 2).
OI_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d{1,9})\.message\.(.+)$")
OI_CALL = re.compile(r"^tool_calls\.(\d{1,9})\.tool_call\.(.+)$")
TL_INDEXED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d{1,9})\.(.+)$")
TL_CALL = re.compile(r"^tool_calls\.(\d{1,9})\.(.+)$")

# Content the record carries parsed; the raw attribute is not kept beside it.
CONTENT_KEYS = frozenset({
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
    "gen_ai.prompt", "gen_ai.completion", "input.value", "output.value",
    "traceloop.entity.input", "traceloop.entity.output",
    # the Vercel AI SDK's (``_vercel``)
    "ai.prompt", "ai.prompt.messages", "ai.response.text", "ai.result.text", "ai.response.object", "ai.result.object",
    "ai.response.toolCalls", "ai.result.toolCalls", "ai.toolCall.args",
    "mastra.agent_run.input", "mastra.agent_run.output",
})
TOOL_CONTENT_KEYS = frozenset({"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "tool.parameters",
                               "ai.toolCall.input", "ai.toolCall.result", "ai.toolCall.output"})
USER_KEYS = ("enduser.id", "user.id", "user_id", "userId")
# Operations of a model call: the spans whose messages and finish reasons checks read.
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})

# Every attribute a record is built from, by name and by prefix: a reader may leave any
# other out (read/projection.py). A name read below and missing here is an attribute the
# live service never sees (tests/read/test_projection.py reads every recorded trace both ways).
READ_NAMES = CONTENT_KEYS | TOOL_CONTENT_KEYS | frozenset(USER_KEYS) | frozenset({
    OI_KIND, TL_KIND, "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
    "gen_ai.response.finish_reasons", "gen_ai.response.finish_reason", "gen_ai.agent.name", "error.type", "metadata",
    "tool.name", "tool.id", "tool_call.id", "llm.token_count.prompt", "llm.token_count.completion",
    "llm.finish_reason", "llm.response.finish_reason", "traceloop.entity.name", "tool.arguments", "output.mime_type",
    "ai.operationId", "ai.telemetry.functionId", "ai.toolCall.name", "ai.toolCall.id", "ai.response.finishReason",
    "gen_ai.tool.status", "tool.status",
})


def build_span(trace_id: str, span_id: str, parent_id: str | None, name: str, start_ns: int,
               end_ns: int, status_code: int, status_message: str, attrs: dict[str, Any], *,
               owned: bool = False, kept: frozenset[str] | None = None) -> SpanRecord:
    """The record for one span. ``attrs`` holds plain values (str, int, float, bool, list).
    ``owned``: the caller built ``attrs`` for this span alone and gives it up, so the
    record keeps it (content keys taken out) instead of a copy. ``kept``: the only
    attributes the record keeps (read/projection.py); every one but content without it.
    Then what of it no convention read (``_unread``, native/src/read/unread.rs)."""
    seen = dict(attrs)  # the keys the sniff reads: build may take the caller's dict
    rec = _build(trace_id, span_id, parent_id, name, start_ns, end_ns, status_code, status_message, attrs,
                 owned=owned, kept=kept)
    after = _after_conventions(seen, rec)
    claimed = (rec.operation is not None or rec.tool is not None or OI_KIND in after or TL_KIND in after
               or any(k.startswith(_TL_INDEXED) for k in after) or any(k in after for k in GENAI_MESSAGES))
    flags, key = _unread(name, after, claimed, bool(parent_id), rec.operation, rec.tool is not None, rec.answer)
    if not flags:
        return rec
    a, size = rec.attrs, rec.size
    if key is not None and (kept is None or UNREAD_OUTPUT_KEY in kept):
        a = {**a, UNREAD_OUTPUT_KEY: key}
        size += kept_size(a) - kept_size(rec.attrs)  # the record holds it too
    return rec._replace(missing=rec.missing | flags, attrs=a, size=size)


def _after_conventions(attrs: dict[str, Any], rec: SpanRecord) -> dict[str, Any]:
    """The attributes as the conventions left them, in their order: OpenLLMetry's mapping
    and a budget answer add keys the sniff reads too."""
    if TL_KIND in attrs or any(k.startswith(_TL_INDEXED) for k in attrs):
        attrs = _openllmetry(attrs)
    elif AI_OPERATION in attrs:
        attrs = _vercel(attrs)
    if "faultgate.termination" in rec.attrs and "faultgate.termination" not in attrs:
        attrs = {**attrs, "faultgate.termination": rec.attrs["faultgate.termination"]}
    return attrs


# ---------------------------------------------------------------- what no convention read

UNREAD_OUTPUT_KEY = "faultgate.unread_output"
_READ_PREFIXES = ("gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages.")
GENAI_MESSAGES = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.completion")
_TOOL_WORDS = {"tool", "tools", "toolcall", "toolcalls"}
_CALL_FIELDS = {"call", "name", "id", "args", "arguments", "input", "output", "result", "parameters", "params",
                "error", "execution"}
_MODEL_NAME_WORDS = {"llm", "chat", "completion", "completions", "generate", "generation", "inference"}
_MODEL_KEY_WORDS = {"model", "usage", "prompt", "prompts", "completion", "finish", "messages", "tokens", "llm"}
_OUTPUT_WORDS = {"output", "outputs", "completion", "answer", "result", "results", "response"}
_NOT_CONTENT = {"id", "ids", "code", "status", "size", "count", "type", "model", "time", "timestamp", "duration",
                "ms", "tokens", "token", "length", "reason", "reasons", "name", "metadata", "headers", "header",
                "format", "schema", "mime", "encoding", "index", "version", "cost", "provider"}


def _words(s: str) -> list[str]:
    """Runs of letters and digits, split where a lower-case letter or digit meets an
    upper-case one; lower-cased."""
    out, word = [], ""
    for c in s:
        alnum = c.isascii() and c.isalnum() or not c.isascii()
        if not alnum:
            if word:
                out.append(word)
            word = ""
        elif word and c.isascii() and c.isupper() and not (word[-1].isascii() and word[-1].isupper()):
            out.append(word)
            word = c
        else:
            word += c
    if word:
        out.append(word)
    return ["".join(ch.lower() if ch.isascii() else ch for ch in w) for w in out]


def _unread(name: str, attrs: dict[str, Any], claimed: bool, has_parent: bool, operation: str | None,
            is_tool: bool, answer: str) -> tuple[int, str | None]:
    wants_work = not claimed
    wants_output = not is_tool and not answer.strip() and (not claimed or not has_parent or operation == INVOKE_AGENT)
    if not wants_work and not wants_output:
        return 0, None
    tool_name = model_name = tool_key = model_key = False
    if wants_work:
        prev = ""
        for w in _words(name):
            if w in _TOOL_WORDS or (w == "call" and prev == "function"):
                tool_name = True
            elif w in _MODEL_NAME_WORDS or (w == "stream" and prev == "do"):
                model_name = True
            prev = w
    output = None
    for key, value in attrs.items():
        ws = _words(key)
        if wants_work:
            prev, after_tool, of_tool, model = "", False, False, False
            for w in ws:
                if after_tool and w in _CALL_FIELDS:
                    tool_key = True
                after_tool = w in ("tool", "toolcall") or (w == "call" and prev == "function")
                of_tool |= after_tool or w in _TOOL_WORDS
                model |= w in _MODEL_KEY_WORDS
                prev = w
            if prev == "tool":
                tool_key = True
            model_key |= model and not of_tool
        read = key in READ_NAMES or key.startswith(_READ_PREFIXES)
        if (wants_output and not read and output is None and any(w in _OUTPUT_WORDS for w in ws)
                and not any(w in _TOOL_WORDS for w in ws) and ws[-1] not in _NOT_CONTENT
                and isinstance(value, str) and value.strip()):
            output = key
    tool = tool_name or (tool_key and not model_name and not model_key)
    model = not tool and (model_name or model_key)
    if tool:
        output = None
    return ((UNREAD_TOOL if tool else 0) | (UNREAD_MODEL if model else 0) | (UNREAD_OUTPUT if output else 0)), output


def _build(trace_id: str, span_id: str, parent_id: str | None, name: str, start_ns: int,
           end_ns: int, status_code: int, status_message: str, attrs: dict[str, Any], *,
           owned: bool = False, kept: frozenset[str] | None = None) -> SpanRecord:
    if OI_KIND in attrs:
        return _openinference(trace_id, span_id, parent_id, name, start_ns, end_ns, status_code,
                              status_message, attrs, kept)
    size, tl_indexed, oi_messages = _survey(name, attrs)
    if TL_KIND in attrs or tl_indexed:
        attrs = _openllmetry(attrs)
        owned = True  # a copy of the caller's
        size, _, oi_messages = _survey(name, attrs)
    elif AI_OPERATION in attrs:
        attrs = _vercel(attrs)
        owned = True
        size, _, oi_messages = _survey(name, attrs)
    op = attrs.get("gen_ai.operation.name")
    operation = INVOKE_AGENT if op in ORCHESTRATIONS else str(op) if op is not None else None
    tool = None
    # A tool span: the operation says so, or, when the exporter left it out, the semconv
    # span name does (``execute_tool`` / ``execute_tool {gen_ai.tool.name}``).
    is_tool = operation == EXECUTE_TOOL or (operation is None and (name == EXECUTE_TOOL or name.startswith("execute_tool ")))
    # Google ADK's span around a batch of parallel calls, beside each call's own: not a call
    if is_tool and attrs.get("gen_ai.tool.name") != "(merged tools)":
        tool_name = attrs.get("gen_ai.tool.name") or name.removeprefix("execute_tool").strip() or name
        result = _tool_result(_str(attrs.get("gen_ai.tool.call.result")))
        if _tool_status_failed(attrs) and not result.startswith("Error: "):
            result = "Error: " + result
        tool = ToolExecution(str(tool_name), _tool_arguments(_str(attrs.get("gen_ai.tool.call.arguments"))),
                             result, _str(attrs.get("gen_ai.tool.call.id")))
    raw_in, raw_out = attrs.get("gen_ai.input.messages"), attrs.get("gen_ai.output.messages")
    inputs, prompt = payload.messages_and_text(raw_in, "user") if raw_in is not None else ((), "")
    outputs, answer = payload.messages_and_text(raw_out, "assistant") if raw_out is not None else ((), "")
    if answer.startswith("{'"):
        # a Python repr of the whole assistant message is not an answer: read what it holds
        outputs = payload.unrepr_messages(outputs)
        answer = payload.role_text_of(outputs, "assistant")
    finish = attrs.get("gen_ai.response.finish_reasons")
    if finish is None:
        finish = _singular_finish_reason(attrs.get("gen_ai.response.finish_reason"))
    if finish is None:
        finish = _message_finish_reasons(outputs)
    missing = 0
    if tool is not None:
        missing = _tool_missing(attrs, "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
                                2 if _tool_status_failed(attrs) else status_code)
    elif operation in MODEL_OPERATIONS:
        missing = _model_missing(raw_in is not None or "gen_ai.prompt" in attrs,
                                 raw_out is not None or "gen_ai.completion" in attrs, finish is not None)
    if answer and answer.strip() in BUDGET_ANSWERS:
        attrs, answer = _budget_ended(attrs, answer)
        owned = True  # a copy of the caller's
        size = _size(name, attrs)
    if operation == INVOKE_AGENT:
        if not answer.strip() and _ended_on_a_call(outputs):
            attrs = dict(attrs)
            attrs.setdefault("faultgate.termination", ENDED_ON_A_CALL)
            owned = True
        if _limit_error(status_code, status_message):
            attrs = dict(attrs)
            attrs.setdefault("faultgate.termination", f"step limit: {status_message.strip()}")
            owned = True
        size = _size(name, attrs)
    prompt = prompt or _str(attrs.get("gen_ai.prompt"))
    answer = answer or _str(attrs.get("gen_ai.completion"))
    if operation == INVOKE_AGENT:  # Mastra's OTel bridge: its agent run's own input and output
        if not prompt and "mastra.agent_run.input" in attrs:
            prompt = payload.plain_text(payload.load_json(attrs["mastra.agent_run.input"]), "user")
        if not answer and "mastra.agent_run.output" in attrs:
            answer = payload.plain_text(payload.load_json(attrs["mastra.agent_run.output"]), "assistant")
    # Positional: a record built by keywords took 0.9 us against 0.35 us, on every span.
    kept_attrs = _kept(attrs, tool is not None, owned and not oi_messages, kept)
    return SpanRecord(
        trace_id, span_id, parent_id or None, name, start_ns, end_ns, status_code, status_message,
        operation, kept_attrs, prompt, answer, tool,
        _calls(outputs) if outputs else (), _responses(inputs) if inputs else (),
        _finish_reasons(finish) if finish is not None else (), False, size + kept_size(kept_attrs), missing,
    )


# Strands Agents' multi-agent orchestrations: the agent of the run they hold.
ORCHESTRATIONS = ("invoke_swarm", "invoke_graph")


def _message_finish_reasons(outputs: Any) -> list[Any] | None:
    """The ``finish_reason`` of each output message, when no attribute says them."""
    reasons = [m["finish_reason"] for m in outputs
               if isinstance(m, dict) and isinstance(m.get("finish_reason"), str) and m["finish_reason"]]
    return reasons or None


def _text_blocks(v: Any) -> str | None:
    """Strands' text content blocks (``[{"text": ...}]``) as their text, a line each."""
    if not isinstance(v, list) or not v:
        return None
    out = []
    for b in v:
        if not (isinstance(b, dict) and len(b) == 1 and isinstance(b.get("text"), str)):
            return None
        out.append(b["text"])
    return "\n".join(out)


def _singular_finish_reason(raw: Any) -> list[str] | None:
    """Semantic Kernel's one finish reason, as its enum's text (``FinishReason.LENGTH``)."""
    if not isinstance(raw, str):
        return None
    member = raw.removeprefix("FinishReason.") if raw.startswith("FinishReason.") else None
    return [member.lower() if member is not None and member.isascii() else raw]


def _tool_missing(attrs: dict[str, Any], arguments: str, result: str, status_code: int = 0) -> int:
    """What a tool span did not record: an absent attribute, not an empty one (a tool may
    take no arguments or return nothing). A tool that failed (status error, ``error.type``)
    returned no result: its error is what was recorded, so no result is missing."""
    failed = status_code == 2 or bool(attrs.get("error.type"))
    return ((0 if arguments in attrs else MISSING_TOOL_ARGUMENTS)
            | (0 if result in attrs or failed else MISSING_TOOL_RESULT))


def _model_missing(has_input: bool, has_output: bool, has_finish: bool) -> int:
    return ((0 if has_input else MISSING_INPUT) | (0 if has_output else MISSING_OUTPUT)
            | (0 if has_finish else MISSING_FINISH))
# What a framework writes as the answer when its own step budget ended the run: the run
# ended at its step limit without an answer (LangGraph's prebuilt agent at recursion_limit).
BUDGET_ANSWERS = frozenset({"Sorry, need more steps to process this request."})


LIMIT_ERRORS = ("llm calls limit", "max iterations", "recursion limit", "max turns", "max steps",
                "not able to resolve the task in")
ERROR_REPR = re.compile(r"^[A-Za-z0-9_]*Error\(")


def _limit_error(status_code: int, status_message: str) -> bool:
    return status_code == 2 and any(w in status_message.lower() for w in LIMIT_ERRORS)


def _is_error_repr(t: str) -> bool:
    """``<Name>Error(<module>): <message>``: a framework's error as its str() writes it."""
    return bool(ERROR_REPR.match(t)) and "): " in t[t.index("("):]


ENDED_ON_A_CALL = "step limit: the agent's last output was a tool call, not an answer"


def _ended_on_a_call(outputs: Any) -> bool:
    if not outputs:
        return False
    last = outputs[-1]
    calls = last.get("tool_calls")
    return last.get("role") == "assistant" and (
        (isinstance(calls, list) and bool(calls))
        or any(isinstance(p, dict) and p.get("type") == "tool_call" for p in payload.parts(last)))


def _budget_ended(attrs: dict[str, Any], answer: str) -> tuple[dict[str, Any], str]:
    a = dict(attrs)
    a.setdefault("faultgate.termination", f"step limit: {answer.strip()}")
    return a, ""


# Framework payloads are recognised by a marker before anything is decoded: most tool
# spans carry plain arguments and results, and pay one substring test each.
_CALLBACK_MARKERS = ('"input_str"', '"kwargs"')
_LC_MARKERS = ('"lc"', '"data"')


def _tool_status_failed(attrs: dict[str, Any]) -> bool:
    """Strands' ``gen_ai.tool.status`` (``tool.status`` before 1.0) ``error``, the span's status OK."""
    for key in ("gen_ai.tool.status", "tool.status"):
        v = attrs.get(key)
        if isinstance(v, str):
            return v.lower() in ("error", "failed")
    return False


def _tool_arguments(raw: str) -> str:
    """Arguments as the tool got them, when the span holds a framework's callback payload,
    or JSON when it holds a Python dict's repr."""
    if raw[:1] == "{" and any(m in raw for m in _CALLBACK_MARKERS):
        unwrapped = payload.call_arguments(payload.load_json(raw))
        if unwrapped is not None:
            return unwrapped
    if raw.startswith("{'"):
        lit = payload.python_literal(raw)
        if isinstance(lit, dict):
            return json.dumps(lit, ensure_ascii=False, default=str)
    return raw


def _tool_result(raw: str) -> str:
    """A result as the tool returned it: the string inside when it is JSON-encoded once
    more, and the content of a serialised LangChain message."""
    if raw[:1] == '"' and len(raw) >= 2 and raw[-1:] == '"':
        try:
            inner = payload.loads(raw)
        except ValueError:
            inner = None
        if isinstance(inner, str):
            raw = inner
    if raw[:1] == "{" and any(m in raw for m in _LC_MARKERS):
        content = payload.lc_tool_result(payload.load_json(raw))
        if content is not None:
            return content
    if raw.startswith('[{"text": '):
        text = _text_blocks(payload.load_json(raw))
        if text is not None:
            return text
    if raw.startswith('{"result": '):
        # Google ADK wraps a tool's return value that is not an object as {"result": value}
        v = payload.load_json(raw)
        if isinstance(v, dict) and len(v) == 1 and "result" in v:
            return payload.render(v["result"])
    return raw


def _str(v: Any) -> str:
    return "" if v is None else str(v)


_TL_INDEXED = ("gen_ai.prompt.", "gen_ai.completion.")
_OI_MESSAGES = ("llm.input_messages.", "llm.output_messages.")
READ_PREFIXES = _TL_INDEXED + _OI_MESSAGES
_TOOL_DROP = CONTENT_KEYS | TOOL_CONTENT_KEYS  # built once: the union per call was 0.3 us a span

# The helpers below are plain loops: on a four-attribute span each measured 0.3-0.4 us,
# against 0.5-0.6 us for the ``any()`` / ``sum()`` generator forms of the same test.


def _has_key_starting(attrs: dict[str, Any], prefixes: tuple[str, ...]) -> bool:
    for k in attrs:
        if k.startswith(prefixes):
            return True
    return False


def _kept(attrs: dict[str, Any], is_tool: bool, in_place: bool = False,
          kept: frozenset[str] | None = None) -> Mapping[str, Any]:
    """``attrs`` without message content, or only its ``kept`` keys. ``in_place``: ``attrs``
    is ours to change and holds no flattened OpenInference messages, so only the content
    keys it has are deleted (a copy of every span's attributes was ~10% of reading it)."""
    if kept is not None:
        # a new dict, not deletions: a dict does not shrink, and most records keep none
        # (a tool span's attributes are all read into its record's fields)
        out = {k: v for k, v in attrs.items() if k in kept}
        return out if out else NO_ATTRS
    drop = _TOOL_DROP if is_tool else CONTENT_KEYS
    if in_place:
        for k in drop.intersection(attrs):
            del attrs[k]
        return attrs
    return {k: v for k, v in attrs.items() if k not in drop and not k.startswith(_OI_MESSAGES)}


def _survey(name: str, attrs: dict[str, Any]) -> tuple[int, bool, bool]:
    """One pass over the keys: the record's size (``RECORD_BYTES`` + the name's length +
    every key's, and every string value's, other values 8), and whether any key is indexed
    OpenLLMetry content or flattened OpenInference messages (compiled before the move as
    ``_native.Survey``, which raised TypeError for a key that is not a str, as this does)."""
    size = _native.RECORD_BYTES + len(name)
    indexed = flattened = False
    for k, v in attrs.items():
        if not isinstance(k, str):
            raise TypeError(f"'{type(k).__name__}' object cannot be converted to 'PyString'")
        size += len(k) + (len(v) if isinstance(v, str) else 8)
        indexed = indexed or k.startswith(_TL_INDEXED)
        flattened = flattened or k.startswith(_OI_MESSAGES)
    return size, indexed, flattened


def kept_size(kept: Mapping[str, Any]) -> int:
    """What a record's size counts for the attributes it keeps, a copy besides the fields
    made of those read (added when the attributes moved into the core,
    native/core/src/model/attributes.rs): ``ATTRIBUTES_BYTES``, and each one's
    ``ATTRIBUTE_BYTES``, key, and value (its length if a str, ``SCALAR_BYTES`` if an int of
    64 bits or a float, else ``VALUE_BYTES``); nothing when it keeps none."""
    if not kept:
        return 0
    return _native.ATTRIBUTES_BYTES + sum(_native.ATTRIBUTE_BYTES + len(k) + _value_size(v) for k, v in kept.items())


def _value_size(v: Any) -> int:
    if isinstance(v, str):
        return len(v)
    if type(v) is float or (type(v) is int and -(2**63) <= v < 2**63):
        return _native.SCALAR_BYTES
    return _native.VALUE_BYTES


def _size(name: str, attrs: dict[str, Any]) -> int:
    return _survey(name, attrs)[0]


def _finish_reasons(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, (list, tuple)):
        return tuple(str(r) for r in raw)
    if isinstance(raw, str) and raw[:1] == "[":  # one JSON-encoded string (AG2's)
        try:
            items = payload.loads(raw)
        except ValueError:
            items = None
        if isinstance(items, list) and all(isinstance(r, str) for r in items):
            return tuple(items)
    return (str(raw),)


# ---------------------------------------------------------------- the Vercel AI SDK

AI_OPERATION = "ai.operationId"
_AI_AGENT_CALLS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")
_AI_MODEL_CALLS = ("ai.generateText.doGenerate", "ai.streamText.doStream", "ai.generateObject.doGenerate",
                   "ai.streamObject.doStream")
_AI_EMBED_CALLS = ("ai.embed", "ai.embedMany", "ai.embed.doEmbed", "ai.embedMany.doEmbed")
_AI_OUTPUT_TEXT = ("ai.response.text", "ai.result.text", "ai.response.object", "ai.result.object")
_AI_OUTPUT_CALLS = ("ai.response.toolCalls", "ai.result.toolCalls")
_AI_FINISH = ("ai.response.finishReason", "ai.finishReason")


def _first(a: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((a[k] for k in keys if k in a), None)


def _has_first(a: dict[str, Any], keys: tuple[str, ...]) -> bool:
    return any(k in a for k in keys)


def _ai_text(v: Any) -> str:
    return v if isinstance(v, str) else "" if v is None else payload.dumps(v)


def _vercel(attrs: dict[str, Any]) -> dict[str, Any]:
    """The Vercel AI SDK's attributes mapped onto GenAI's (only what is missing)."""
    a = dict(attrs)
    op = a.get(AI_OPERATION)
    if not isinstance(op, str):
        return a
    if op in _AI_AGENT_CALLS:
        a.setdefault("gen_ai.operation.name", "invoke_agent")
        f = a.get("ai.telemetry.functionId")
        if f:
            a.setdefault("gen_ai.agent.name", _str(f))
        if "ai.prompt" in a and "gen_ai.input.messages" not in a:
            a["gen_ai.input.messages"] = payload.dumps(_ai_prompt(payload.load_json(a["ai.prompt"])))
        if _has_first(a, _AI_OUTPUT_TEXT) and "gen_ai.completion" not in a:
            a["gen_ai.completion"] = _ai_text(_first(a, _AI_OUTPUT_TEXT))
    elif op in _AI_MODEL_CALLS:
        a.setdefault("gen_ai.operation.name", "chat")
        if "ai.prompt.messages" in a and "gen_ai.input.messages" not in a:
            msgs = payload.load_json(a["ai.prompt.messages"])
            a["gen_ai.input.messages"] = payload.dumps([_ai_message(m) for m in msgs] if isinstance(msgs, list) else [])
        has_text, has_calls = _has_first(a, _AI_OUTPUT_TEXT), _has_first(a, _AI_OUTPUT_CALLS)
        if (has_text or has_calls) and "gen_ai.output.messages" not in a:
            parts = []
            if has_text:
                t = _ai_text(_first(a, _AI_OUTPUT_TEXT))
                if t:
                    parts.append({"type": "text", "content": t})
            if has_calls:
                calls = payload.load_json(_first(a, _AI_OUTPUT_CALLS))
                if isinstance(calls, list):
                    parts += [_ai_tool_call(c) for c in calls]
            a["gen_ai.output.messages"] = payload.dumps([{"role": "assistant", "parts": parts}])
        if _has_first(a, _AI_FINISH) and "gen_ai.response.finish_reasons" not in a:
            r = _first(a, _AI_FINISH)
            if r:
                a["gen_ai.response.finish_reasons"] = [_str(r)]
    elif op == "ai.toolCall":
        a.setdefault("gen_ai.operation.name", "execute_tool")
        for src, dst in ((("ai.toolCall.name",), "gen_ai.tool.name"), (("ai.toolCall.id",), "gen_ai.tool.call.id"),
                         (("ai.toolCall.args", "ai.toolCall.input"), "gen_ai.tool.call.arguments"),
                         (("ai.toolCall.result", "ai.toolCall.output"), "gen_ai.tool.call.result")):
            if _has_first(a, src) and dst not in a:
                a[dst] = _ai_text(_first(a, src))
    elif op in _AI_EMBED_CALLS:
        a.setdefault("gen_ai.operation.name", "embeddings")
    return a


def _ai_prompt(p: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(p, dict):
        if isinstance(p.get("system"), str):
            out.append({"role": "system", "parts": [{"type": "text", "content": p["system"]}]})
        for key in ("messages", "prompt"):
            v = p.get(key)
            if isinstance(v, list):
                out += [_ai_message(m) for m in v]
            elif isinstance(v, str):
                out.append({"role": "user", "parts": [{"type": "text", "content": v}]})
    if not out and isinstance(p, str):
        out.append({"role": "user", "parts": [{"type": "text", "content": p}]})
    return out


def _ai_message(m: Any) -> dict[str, Any]:
    role = m.get("role") if isinstance(m, dict) else None
    content = m.get("content") if isinstance(m, dict) else None
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for p in content:
            kind = p.get("type") if isinstance(p, dict) else None
            if kind == "text" and isinstance(p.get("text"), str):
                parts.append({"type": "text", "content": p["text"]})
            elif kind == "tool-call":
                parts.append(_ai_tool_call(p))
            elif kind == "tool-result":
                parts.append(_ai_tool_result(p))
    return {"role": role if isinstance(role, str) else "user", "parts": parts}


def _ai_field(v: Any, key: str) -> str:
    x = v.get(key) if isinstance(v, dict) else None
    return "" if x is None else _str(x)


def _ai_tool_call(c: Any) -> dict[str, Any]:
    d = c if isinstance(c, dict) else {}
    arguments = d["input"] if "input" in d else d.get("args", "")
    return {"type": "tool_call", "id": _ai_field(c, "toolCallId"), "name": _ai_field(c, "toolName"),
            "arguments": arguments}


def _ai_tool_result(r: dict[str, Any]) -> dict[str, Any]:
    if "output" in r:
        o = r["output"]
        if isinstance(o, dict):
            kind = o.get("type")
            payload_, failed = o.get("value"), isinstance(kind, str) and kind.startswith("error")
        else:
            payload_, failed = o, False
    else:
        payload_, failed = r.get("result"), r.get("isError") is True
    part = {"type": "tool_call_response", "id": _ai_field(r, "toolCallId"), "result": payload_}
    if failed:
        part["is_error"] = True
    return part


def _calls(outputs: list[dict[str, Any]]) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(str(p.get("id", "")), str(p.get("name", "unknown")), payload.render(p.get("arguments")))
        for m in outputs for p in payload.parts(m)
        if isinstance(p, dict) and p.get("type") == "tool_call"
    )


def _responses(inputs: list[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    out = []
    for m in inputs:
        for p in payload.parts(m):
            if not (isinstance(p, dict) and p.get("type") == "tool_call_response" and p.get("id")):
                continue
            # The schema names the field ``response``; attribute-table examples say ``result``.
            value = p["result"] if "result" in p else p.get("response")
            text = _text_blocks(value)
            res = text if text is not None else payload.render(value)
            failed = (p.get("is_error") is True or bool(p.get("error"))
                      or str(p.get("status", "")).lower() in ("error", "failed"))
            if failed and not res.startswith("Error: "):
                res = "Error: " + res
            out.append((str(p["id"]), res))
    return tuple(out)


# ---------------------------------------------------------------- OpenInference

def _oi_messages(attrs: dict[str, Any], direction: str) -> list[dict[str, Any]]:
    """Rebuild flattened ``llm.<direction>_messages.N.message.*`` into GenAI messages."""
    # a message's fields and its tool calls apart: an attribute ``...message.calls`` is a
    # field like any other (the calls once lived under that key, and it replaced them)
    msgs: dict[int, dict[str, Any]] = {}
    calls_of: dict[int, dict[int, dict[str, Any]]] = {}
    for k, v in attrs.items():
        m = OI_MESSAGE.match(k)
        if not m or m.group(1) != direction:
            continue
        i = int(m.group(2))
        msg = msgs.setdefault(i, {})
        calls = calls_of.setdefault(i, {})
        c = OI_CALL.match(m.group(3))
        if c:
            calls.setdefault(int(c.group(1)), {})[c.group(2)] = v
        else:
            msg[m.group(3)] = v
    out = []
    for i, msg in sorted(msgs.items()):
        role = str(msg.get("role", "assistant"))
        parts: list[dict[str, Any]] = []
        if role == "tool" and msg.get("tool_call_id"):
            parts.append({"type": "tool_call_response", "id": str(msg["tool_call_id"]), "result": msg.get("content", "")})
        elif msg.get("content"):
            parts.append({"type": "text", "content": str(msg["content"])})
        for _, call in sorted(calls_of[i].items()):
            parts.append({"type": "tool_call", "id": str(call.get("id", "")),
                          "name": str(call.get("function.name", "unknown")),
                          "arguments": call.get("function.arguments", "")})
        out.append({"role": role, "parts": parts})
    return out


def _graph_node(a: dict[str, Any]) -> bool:
    md = a.get("metadata")
    return isinstance(md, str) and '"langgraph_node"' in md


def _llama_tool_output(out: Any) -> str | None:
    """A LlamaIndex ``ToolOutput`` as the tool's result: its ``raw_output``, an error when
    ``is_error`` says so."""
    if not (isinstance(out, dict) and "raw_output" in out and isinstance(out.get("is_error"), bool)
            and "tool_name" in out):
        return None
    raw = payload.tool_payload(out["raw_output"])
    return "Error: " + raw if out["is_error"] and not raw.startswith("Error: ") else raw


def _dspy_tool_name(name: str) -> str:
    """openinference-instrumentation-dspy names a Tool's span after the wrapped method."""
    for method in (".__call__", ".acall"):
        if name.endswith(method) and len(name) > len(method):
            return name[: -len(method)]
    return name


def _made_no_call(name: str, status_code: int, a: dict[str, Any]) -> bool:
    """LlamaIndex's LLM methods around a model call, each an LLM span that made no call."""
    return name.endswith("._prepare_chat_with_tools") or (
        status_code != 2 and "output.value" not in a and "llm.finish_reason" not in a
        and not _has_key_starting(a, _OI_MESSAGES) and not _has_key_starting(a, ("llm.token_count.",))
        and a.get("input.value") != "__REDACTED__")


def _openinference(trace_id: str, span_id: str, parent_id: str | None, name: str, start_ns: int,
                   end_ns: int, status_code: int, status_message: str, attrs: dict[str, Any],
                   kept: frozenset[str] | None = None) -> SpanRecord:
    a = dict(attrs)
    kind = str(a.get(OI_KIND, "")).upper()
    prompt = answer = ""
    tool = None
    calls: tuple[ToolCall, ...] = ()
    responses: tuple[tuple[str, str], ...] = ()
    operation = OI_OPERATION.get(kind)
    if not parent_id:
        # The trace's root is the agent run, whatever kind it was given; a native GenAI
        # root keeps its own attributes and the mapping only fills what is missing.
        operation = str(a.get("gen_ai.operation.name") or INVOKE_AGENT)
        md = payload.load_json(a.get("metadata"))
        md = md if isinstance(md, dict) else {}
        a.setdefault("gen_ai.agent.name", name)
        if md.get("scenario"):
            a.setdefault("faultgate.scenario", str(md["scenario"]))
        user = a.get("user.id") or next((md[k] for k in USER_KEYS if md.get(k)), None)
        if user:
            a.setdefault("enduser.id", str(user))
        prompt = payload.agent_text(a.get("input.value"), "user")
        answer = payload.agent_text(a.get("output.value"), "assistant")
    elif kind == "AGENT" and _graph_node(a):
        # openinference-instrumentation-langchain marks LangGraph's ``agent`` node AGENT on
        # every model turn: a node of the run's graph, not an agent of its own.
        operation = "invoke_workflow"
    elif kind == "AGENT":
        # An AGENT under a server, function or harness span is still the run's agent: its
        # input and output are the run's prompt and answer, as a root's are.
        prompt = payload.agent_text(a.get("input.value"), "user")
        answer = payload.agent_text(a.get("output.value"), "assistant")
    elif kind == "TOOL" and parent_id and "tool.name" not in a and name in ("error", "retry") and start_ns == end_ns:
        pass  # openinference-instrumentation-beeai's span of an event of its parent tool's run
    elif kind == "TOOL":
        # Arguments are in input.value (the spec); tool.parameters is the parameter
        # definition (a JSON schema), read only when an exporter put the arguments there.
        args = a.get("input.value")
        if args is None and not payload.is_parameter_schema(payload.load_json(a.get("tool.parameters"))):
            args = a.get("tool.parameters")
        decoded = payload.load_json(args)
        unwrapped = payload.call_arguments(decoded)
        if unwrapped is not None:
            args = unwrapped
        out = payload.load_json(a.get("output.value"))
        lc = payload.lc_tool_result(out)
        llama = _llama_tool_output(out) if lc is None else None
        raw = a.get("output.value")
        if lc is not None:
            result = lc
        elif llama is not None:
            result = llama
        elif (isinstance(out, str) and isinstance(raw, str) and raw.startswith('"')
              and a.get("output.mime_type") == "application/json"):
            result = out  # a JSON output that is one string (DSPy's tools): the string
        else:
            result = payload.tool_payload(raw)
        if status_message:
            result = "Error: " + (status_message if not result else f"{status_message} {result}")
        tool_name = str(a.get("tool.name") or _dspy_tool_name(name))
        if not (tool_name == "finish" and result == "Completed."):  # DSPy ReAct's own end of a trajectory
            tool = ToolExecution(tool_name, payload.tool_payload(args), result,
                                 _str(a.get("tool.id") or a.get("tool_call.id")))
    if kind == "LLM":
        ins, outs = _oi_messages(a, "input"), _oi_messages(a, "output")
        calls = _calls(outs)
        responses = _responses(ins)
        prompt = prompt or payload.role_text(ins, "user")
        answer = answer or payload.role_text(outs, "assistant")
    for src, dst in (("llm.token_count.prompt", "gen_ai.usage.input_tokens"),
                     ("llm.token_count.completion", "gen_ai.usage.output_tokens")):
        v = a.get(src)
        if isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and math.isfinite(v):
            a[dst] = int(v)  # inf and NaN are no count
    if answer and answer.strip() in BUDGET_ANSWERS:
        a, answer = _budget_ended(a, answer)
    error = ""
    if status_code == 2 and operation == INVOKE_AGENT and _is_error_repr(answer):
        error, answer = answer, ""  # a failed agent's output is its error (BeeAI), not an answer
    message = status_message or error
    if operation == INVOKE_AGENT and _limit_error(status_code, message):
        a.setdefault("faultgate.termination", f"step limit: {message.strip()}")
    finish = _finish_reasons(a.get("gen_ai.response.finish_reasons"))
    if a.get("llm.finish_reason"):
        finish = (str(a["llm.finish_reason"]),)
    if not finish and kind == "LLM":
        out = payload.load_json(a.get("output.value"))
        reason = out.get("finish_reason") if isinstance(out, dict) else None
        if isinstance(reason, str) and reason:
            finish = (reason,)
    missing = 0
    if tool is not None:
        missing = _tool_missing(a, "input.value", "output.value", status_code)
        if missing & MISSING_TOOL_ARGUMENTS and "tool.parameters" in a:
            missing &= ~MISSING_TOOL_ARGUMENTS
    elif kind == "LLM" and not _made_no_call(name, status_code, a):
        # OpenInference names the finish reason ``llm.finish_reason``: an LLM span without it
        # (openai-agents, CrewAI and smolagents instrumentations write none) did not record
        # whether the model was cut off, so context_overflow cannot pass it.
        missing = _model_missing("input.value" in a or _has_key_starting(a, ("llm.input_messages.",)),
                                 "output.value" in a or _has_key_starting(a, ("llm.output_messages.",)),
                                 bool(finish))
    kept_attrs = _kept(a, tool is not None, kept=kept)
    return SpanRecord(
        trace_id=trace_id, span_id=span_id, parent_id=parent_id or None, name=name,
        start_ns=start_ns, end_ns=end_ns, status_code=status_code, status_message=status_message,
        operation=operation, attrs=kept_attrs, prompt=prompt, answer=answer, tool=tool,
        calls=calls, responses=responses, finish_reasons=finish,
        calls_shadowed_by_tool_spans=kind == "LLM", size=_size(name, attrs) + kept_size(kept_attrs),
        missing=missing,
    )


# ---------------------------------------------------------------- OpenLLMetry

def _openllmetry(attrs: dict[str, Any]) -> dict[str, Any]:
    """OpenLLMetry attributes mapped onto their GenAI equivalents (only what is missing)."""
    a = dict(attrs)
    kind = str(a.get(TL_KIND, "")).lower()
    if kind in TL_OPERATION:
        a.setdefault("gen_ai.operation.name", TL_OPERATION[kind])
    entity = a.get("traceloop.entity.name")
    if kind == "tool":
        if entity:
            a.setdefault("gen_ai.tool.name", str(entity))
        if "traceloop.entity.input" in a:
            a.setdefault("gen_ai.tool.call.arguments", _entity_payload(a["traceloop.entity.input"]))
        if "traceloop.entity.output" in a:
            a.setdefault("gen_ai.tool.call.result", _entity_payload(a["traceloop.entity.output"]))
    elif kind == "task" and a.get("tool.name") and "tool.arguments" in a:
        _called_tool(a)
    elif kind in ("agent", "workflow"):
        if entity and kind == "agent":
            a.setdefault("gen_ai.agent.name", str(entity))
        if "traceloop.entity.input" in a and "gen_ai.prompt" not in a:
            a["gen_ai.prompt"] = _entity_text(a["traceloop.entity.input"], "user")
        if "traceloop.entity.output" in a and "gen_ai.completion" not in a:
            a["gen_ai.completion"] = _entity_text(a["traceloop.entity.output"], "assistant")
    indexed: dict[str, dict[int, dict[str, Any]]] = {"prompt": {}, "completion": {}}
    for k, v in attrs.items():
        m = TL_INDEXED.match(k)
        if m:
            indexed[m.group(1)].setdefault(int(m.group(2)), {})[m.group(3)] = v
    if indexed["prompt"] and "gen_ai.input.messages" not in a:
        a["gen_ai.input.messages"] = payload.dumps([_tl_message(m, "user") for _, m in sorted(indexed["prompt"].items())])
    if indexed["completion"] and "gen_ai.output.messages" not in a:
        msgs = [_tl_message(m, "assistant") for _, m in sorted(indexed["completion"].items())]
        a["gen_ai.output.messages"] = payload.dumps(msgs)
        reasons = [m["finish_reason"] for _, m in sorted(indexed["completion"].items()) if m.get("finish_reason")]
        if reasons:
            a.setdefault("gen_ai.response.finish_reasons", [str(r) for r in reasons])
    if a.get("llm.response.finish_reason"):
        a.setdefault("gen_ai.response.finish_reasons", [str(a["llm.response.finish_reason"])])
    for k in [k for k in a if TL_INDEXED.match(k)]:
        del a[k]
    return a


def _called_tool(a: dict[str, Any]) -> None:
    """OpenLLMetry's LlamaIndex tool call: a task span with ``tool.name``, ``tool.arguments``
    and the ``ToolCallResult`` in ``traceloop.entity.output``."""
    a["gen_ai.operation.name"] = EXECUTE_TOOL
    a.setdefault("gen_ai.tool.name", str(a["tool.name"]))
    a.setdefault("gen_ai.tool.call.arguments", str(a["tool.arguments"]))
    if "traceloop.entity.output" not in a:
        return
    output = a["traceloop.entity.output"]
    v = payload.load_json(output)
    out = v.get("tool_output") if isinstance(v, dict) else None
    result = _llama_tool_output(out) if out is not None else None
    if result is None:
        result = _entity_payload(output)
    tool_id = v.get("tool_id") if isinstance(v, dict) else None
    if isinstance(tool_id, str) and tool_id:
        a.setdefault("gen_ai.tool.call.id", tool_id)
    a.setdefault("gen_ai.tool.call.result", result)


def _entity_payload(raw: Any) -> str:
    """traceloop.entity.input/output wrap the call as ``{"args": [...], "kwargs": {...}}``
    (or ``{"inputs": ...}``); the tool's own arguments are what a step compares."""
    v = payload.load_json(raw)
    if isinstance(v, dict):
        if v.get("kwargs") and not v.get("args"):
            return payload.dumps(v["kwargs"])
        for k in ("inputs", "output", "outputs"):
            if k in v and len(v) == 1:
                return payload.tool_payload(v[k])
    return payload.tool_payload(v)


def _entity_text(raw: Any, role: str) -> str:
    """An agent's input or output text from its traceloop entity payload: the first string
    among the call's ``args`` / ``kwargs``, else whatever text the payload holds."""
    v = payload.load_json(raw)
    if isinstance(v, dict) and ("args" in v or "kwargs" in v):
        args = v.get("args") if isinstance(v.get("args"), list) else []
        kwargs = v.get("kwargs") if isinstance(v.get("kwargs"), dict) else {}
        first = next((x for x in [*args, *kwargs.values()] if isinstance(x, str)), None)
        if first is not None:
            return first
    return payload.plain_text(v, role)


def _tl_message(m: dict[str, Any], default_role: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if m.get("content"):
        parts.append({"type": "text", "content": str(m["content"])})
    calls: dict[int, dict[str, Any]] = {}
    for k, v in m.items():
        c = TL_CALL.match(k)
        if c:
            calls.setdefault(int(c.group(1)), {})[c.group(2)] = v
    for _, c in sorted(calls.items()):
        parts.append({"type": "tool_call", "id": str(c.get("id", "")), "name": str(c.get("name", "unknown")),
                      "arguments": c.get("arguments", "")})
    if m.get("role") == "tool" and m.get("tool_call_id"):
        parts = [{"type": "tool_call_response", "id": str(m["tool_call_id"]), "result": m.get("content", "")}]
    return {"role": str(m.get("role", default_role)), "parts": parts}
