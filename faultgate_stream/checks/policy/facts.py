"""What the policy rules read from a call, each worked out once per call.

A rule never decodes JSON itself: ``Call`` decodes a call's arguments on first use and
keeps them, with every dotted value a rule asked for, the result's JSON and whether the
call failed. faultgate decodes a step's arguments once per rule that reads them, and once
more for every later step a ``same_arg`` rule compares it with, which grows with the
square of the run. Here an earlier call's ``order_id`` is read once, whoever asks.

The same rules judge two sequences of calls: a completed run's steps (``finish``, where a
call is ``step N``) and the calls observed so far in a run still arriving (``observe``,
where a call is ``span <id>``). ``Calls`` is either, in start order.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Any

from faultgate_stream.checks.signals import span_error, structural_error
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.payload import loads


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


ABSENT: Any = _Marker("ABSENT")      # a dotted path that leads nowhere
NOT_JSON: Any = _Marker("NOT_JSON")  # a result that is not a JSON object or list
UNKNOWN: Any = _Marker("UNKNOWN")    # a run root not observed yet
# Values faultgate reads as "confirmed" in ``faultgate.confirmed``. Membership is by ==, so
# 1 counts too, as it does in faultgate.
CONFIRMED = (True, "true", "True")
CONFIRMED_ATTR = "faultgate.confirmed"


def decode_arguments(arguments: str) -> dict[str, Any] | None:
    """The arguments as a JSON object: ``{}`` for none, one more decode for JSON encoded
    twice, ``None`` when they are not an object."""
    if not arguments.strip():
        return {}
    try:
        d = loads(arguments)
        if isinstance(d, str):
            d = loads(d)
    except (ValueError, RecursionError):  # RecursionError: nested too deep to read, so unreadable
        return None
    return d if isinstance(d, dict) else None


def decode_result(result: str) -> Any:
    """The result as a JSON object or list (one more decode for JSON encoded twice), else
    ``NOT_JSON``."""
    try:
        v = loads(result)
        if isinstance(v, str):
            v = loads(v)
    except (ValueError, RecursionError):
        return NOT_JSON
    return v if isinstance(v, (dict, list)) else NOT_JSON


def dig(args: dict[str, Any], path: str) -> Any:
    """A dotted path through nested objects of the arguments, or ``ABSENT``."""
    cur: Any = args
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return ABSENT
        cur = cur[part]
    return cur


def json_path(doc: Any, path: str) -> Any:
    """A dotted path into a parsed result, where a number indexes a list, or ``ABSENT``."""
    for part in path.split("."):
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdecimal() and part.isascii() and int(part) < len(doc):
            # isascii: "²" is a digit to str.isdigit but not to int(), which faultgate
            # then raises on
            doc = doc[int(part)]
        else:
            return ABSENT
    return doc


def number(v: Any) -> float | None:
    """A JSON number, or text such as ``" $1,200.50 "``. Booleans, non-finite values and
    integers too large for a float are not numbers."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        try:
            f = float(v)
        except OverflowError:
            return None
        return f if math.isfinite(f) else None
    if isinstance(v, str):
        try:
            f = float(v.strip().removeprefix("$").replace(",", ""))
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def as_text(v: Any) -> str:
    """A value compared as text, as faultgate compares ids, session ids and allowed values."""
    return str(v).strip()


def empty(v: Any) -> bool:
    """Absent, null, or an empty (or blank) string, list or object."""
    if v is ABSENT or v is None:
        return True
    if isinstance(v, str):
        return not v.strip()
    return isinstance(v, (list, dict)) and not v


class Call:
    """One tool call as the rules see it. ``where`` names it in reasons (``step 4``)."""

    __slots__ = ("where", "tool", "arguments", "result", "span", "_args", "_values", "_error", "_doc")

    def __init__(self, where: str, tool: str, arguments: str, result: str, span: SpanRecord | None,
                 error: str | None = None) -> None:
        self.where = where
        self.tool = tool
        self.arguments = arguments
        self.result = result
        self.span = span        # the span that carried the call: its tool span, or the model span
        self._error = error     # structural_error(result), when the caller already knows it
        self._args: Any = ABSENT
        self._values: dict[str, Any] | None = None
        self._doc: Any = ABSENT

    @property
    def args(self) -> dict[str, Any] | None:
        if self._args is ABSENT:
            self._args = decode_arguments(self.arguments)
        return self._args

    def value(self, path: str) -> Any:
        """The argument at ``path``; ``ABSENT`` when it is not there or the arguments are unreadable."""
        if self._values is None:
            self._values = {}
        elif path in self._values:
            return self._values[path]
        args = self.args
        v = self._values[path] = dig(args, path) if args is not None else ABSENT
        return v

    def key(self, path: str) -> str | None:
        """The argument at ``path`` as text, or ``None`` when there is none to read."""
        v = self.value(path)
        return None if v is ABSENT else as_text(v)

    @property
    def failed(self) -> bool:
        """The result says the call failed (a structural error)."""
        if self._error is None:
            self._error = structural_error(self.result)
        return bool(self._error)

    @property
    def succeeded(self) -> bool:
        """No structural error in the result, and no error on the call's own tool span."""
        if self.failed:
            return False
        s = self.span
        return not (s is not None and s.tool is not None and span_error(s))

    @property
    def doc(self) -> Any:
        if self._doc is ABSENT:
            self._doc = decode_result(self.result)
        return self._doc

    @property
    def confirmed(self) -> bool:
        """``faultgate.confirmed = true`` on the span that carried the call."""
        return self.span is not None and self.span.attrs.get(CONFIRMED_ATTR) in CONFIRMED


class Calls:
    """Calls in start order, and the run's root for rules that read it (``UNKNOWN`` while
    a run is still arriving and its root has not been observed)."""

    __slots__ = ("calls", "root", "_by_tool", "memo")

    def __init__(self, calls: Sequence[Call], root: SpanRecord | None) -> None:
        self.calls = calls
        self.root = root
        self._by_tool: dict[str, list[int]] | None = None
        # indexes a rule builds once over these calls (keyed by the rule's own object), so
        # that judging each call is a lookup, not a scan of the calls before it
        self.memo: dict[int, Any] = {}

    def earlier(self, tools: Iterable[str], i: int) -> list[int]:
        """Positions before ``i`` of calls to any of ``tools``, in order. An index by tool
        makes this a lookup, not a scan of every earlier call."""
        if self._by_tool is None:
            self._by_tool = {}
            for j, c in enumerate(self.calls):
                self._by_tool.setdefault(c.tool, []).append(j)
        found: list[int] = []
        for t in set(tools):
            at = self._by_tool.get(t)
            if at:
                found += at[:bisect_left(at, i)]
        found.sort()
        return found
