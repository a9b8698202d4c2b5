"""Turning message and tool payloads into the strings checks compare.

The rules match faultgate 0.4.1's, so a step reads to the same text in both tools: JSON
held in a string is decoded once and re-rendered, a list of ``{"text": ...}`` parts is
joined, a ``{"type": "text"}`` part is its text. They are compiled (native/core/src/read/
payload.rs, where the conventions use them): the names below are the binding's functions.

- ``render(val)``: a tool argument or result as a step's text.
- ``load_json(raw)``: ``raw`` decoded when it is a string holding JSON, else ``raw``.
- ``plain_text(v, role="user")``: plain text from a prompt or answer payload of a vendor
  export (a string, a ``{input|output|...: str}`` wrapper, or chat messages).
- ``agent_text(raw, role)``: an agent span's prompt or answer from ``input.value`` /
  ``output.value``.
- ``tool_payload(v)``: tool arguments or a result from a vendor export.
- ``role_text(raw, role)``: the text the messages of ``role`` carry.
- ``lc_message(v)`` / ``lc_tool_result(v)``: a serialised LangChain message / ToolMessage.
- ``call_arguments(v)``: a tool's own arguments out of a framework callback's payload.
- ``is_parameter_schema(v)``: a JSON schema of a tool's parameters, not a call's arguments.
- ``dumps(v)``: ``json.dumps(v, ensure_ascii=False)`` for any value a reader may hold:
  bytes (an OTLP ``bytesValue``) as OTLP/JSON writes them, base64; a structure nested too
  deep to write as a marker instead of a RecursionError (issue 9, defect 2).
"""
from __future__ import annotations

import base64
import json
from typing import Any

from faultgate_stream import _native
from faultgate_stream._native import (  # noqa: F401  (the names other modules import)
    agent_text, call_arguments, dumps, is_parameter_schema, lc_message, lc_tool_result, load_json, plain_text,
    render, role_text, tool_payload,
)

_REFUSED = object()  # what the compiled decoder returns for JSON it leaves to json.loads


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, faster.

    The compiled decoder (native/core/src/model/json.rs) takes what the standard library
    takes and gives what it would, type for type, integers of any size, NaN, Infinity and
    lone surrogates included (tests/read/test_fast_paths.py compares them). What it refuses
    goes to json.loads, which reads what only it reads (a byte order mark, UTF-16) or raises
    its own error, so error messages stay the standard library's. It replaced msgspec, whose
    import was ~16 ms of every `check`: on small values it is about half msgspec's speed (a
    100-byte object ~1 us against ~0.5, json ~3.5), called a few hundred times per gate file;
    the offline engine with either measured no loss (bench/README.md).
    """
    value = _native.loads(text, _REFUSED)
    if value is not _REFUSED:
        return value
    try:
        return json.loads(text)
    except RecursionError:
        # JSON nested thousands deep is not a payload anyone reads: callers take it as
        # text, as they take any other text that is not JSON (issue 9, defect 2)
        raise ValueError("JSON nested too deep to read") from None


def _plain(v: Any) -> str:
    """json.dumps's ``default`` where the compiled ``dumps`` hands a value to Python (one
    that is none of JSON's types, or nested past 200): bytes as base64, else ``str()``."""
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    return str(v)
