"""The bounds on what a sender may nest, for every reader (issue 42).

A span (or log record) whose ``AnyValue``s nest deeper than ``MAX_VALUE_DEPTH`` arrays and
key-value lists, or hold more than ``MAX_VALUES`` values in all, is rejected on its own
with a reason naming the limit; the compiled readers check OTLP protobuf before reading
(native/src/read/bounds.rs, where the limits and their reasons are), and ``json_problem``
checks OTLP/JSON's values the same way before ``otlp_json.value`` recurses over them.

OTLP/JSON text is bounded before it is parsed at all: ``json.loads`` recurses, and a body
nested a thousand levels deep ran Python's recursion out inside the receiver, which then
answered as if it were out of capacity (503, retried forever).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from faultgate_stream import _native
from faultgate_stream.model.errors import InputError

MAX_VALUE_DEPTH: int = _native.MAX_VALUE_DEPTH
MAX_VALUES: int = _native.MAX_VALUES
# OTLP/JSON puts an event attribute's AnyValue 12 levels into the document (the request,
# resourceSpans, its entry, scopeSpans, its entry, spans, the span, events, the event,
# attributes, the key-value, value), and each key-value list inside it adds 4 (kvlistValue,
# values, the entry, value): a request within MAX_VALUE_DEPTH nests at most 12 + 4 * 24 =
# 108 deep. So 128 takes every request the per-span bound would, and refuses what only a
# sender bent on depth writes before json.loads (which recurses) sees it.
MAX_JSON_DEPTH = 128

OVER_DEPTH: str = _native.OVER_DEPTH
OVER_VALUES: str = _native.OVER_VALUES


class TooDeep(InputError):
    """A request body nested past ``MAX_JSON_DEPTH``: permanent (INVALID_ARGUMENT / 400)."""


def check_json_depth(body: bytes | str) -> None:
    """Raises ``TooDeep`` when ``body`` nests JSON deeper than ``MAX_JSON_DEPTH``, counted
    without parsing it or recursing (so before ``json.loads`` does)."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if _native.json_depth(data, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise TooDeep(f"body nests JSON more than {MAX_JSON_DEPTH} levels deep, past the limit "
                      f"(AnyValues may nest {MAX_VALUE_DEPTH} levels)")


def json_span_problem(span: Any) -> str:
    """``json_problem`` of an OTLP/JSON span's values: its attributes' and its events' and
    links' (what the compiled reader bounds in protobuf, and more); "" for a span of
    another shape, which the parser refuses on its own."""
    if not isinstance(span, dict):
        return ""
    values = []
    for holder in (span, *_items(span.get("events")), *_items(span.get("links"))):
        for kv in _items(holder.get("attributes")):
            values.append(kv.get("value"))
    return json_problem(values)


def _items(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def json_problem(values: Iterable[Any]) -> str:
    """Why these OTLP/JSON ``AnyValue``s (one span's or log record's) are past a bound, or
    "" when they are within both: the compiled check's rule on JSON's spelling, iterative.
    Every member is walked, whichever one ``otlp_json.value`` would read."""
    todo = [(v, 0) for v in values if v is not None]
    seen = len(todo)
    if seen > MAX_VALUES:
        return OVER_VALUES
    while todo:
        value, depth = todo.pop()
        if not isinstance(value, dict):
            continue
        for member, is_kvlist in (("arrayValue", False), ("kvlistValue", True)):
            entries = value.get(member)
            entries = entries.get("values") if isinstance(entries, dict) else None
            if not isinstance(entries, list) or not entries:
                continue
            if depth + 1 > MAX_VALUE_DEPTH:
                return OVER_DEPTH
            for entry in entries:
                if is_kvlist:
                    entry = entry.get("value") if isinstance(entry, dict) else None
                    if entry is None:
                        continue
                todo.append((entry, depth + 1))
                seen += 1
            if seen > MAX_VALUES:
                return OVER_VALUES
    return ""
