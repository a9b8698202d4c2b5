"""Nested span trees as evaluation datasets publish them (TRAIL's GAIA and SWE-bench traces,
for one) -> spans.

A trace is ``{"trace_id": ..., "spans": [...]}`` (a file may hold one trace or a list of
them) whose spans nest their children under ``child_spans``. Each span has ``span_id``,
``parent_span_id`` (else the span it is nested in is its parent), ``span_name``,
``timestamp`` (ISO-8601), ``duration`` as an ISO-8601 duration (``PT1.25S``),
``status_code`` by name (``Unset`` / ``Ok`` / ``Error``), ``status_message``, and its
attributes under ``span_attributes`` (OpenInference, usually). Ids that are not hex (a
dataset's own names) are hashed into ids, so the tree keeps its shape.
"""
from __future__ import annotations

import hashlib
import re
from decimal import Decimal
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.conventions import build_span
from faultgate_stream.read.formats.shared import first_object, to_ns
from faultgate_stream.read.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, hex_id

SIGNATURE = frozenset({"span_id", "parent_span_id", "span_name", "span_attributes", "child_spans", "duration",
                       "status_code", "timestamp", "trace_id"})
NEEDS = (("spans",), ("spans.child_spans", "spans.span_name"), ("spans.child_spans", "spans.span_attributes"))
STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2, "STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
DURATION = re.compile(r"^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
# A tree deeper than this is not an agent's trace: refused rather than walked.
MAX_DEPTH = 1000


def _traces(doc: Any) -> list[Any]:
    if isinstance(doc, dict) and isinstance(doc.get("spans"), list):
        return [doc]
    if isinstance(doc, list) and doc and all(isinstance(t, dict) and isinstance(t.get("spans"), list) for t in doc):
        return doc
    return []


def _is_span(x: Any) -> bool:
    return isinstance(x, dict) and ("child_spans" in x or ("span_attributes" in x and "span_name" in x))


def detect(doc: Any) -> bool:
    traces = _traces(doc)
    return bool(traces) and all(_is_span(first_object(t["spans"]) or {}) for t in traces)


def duration_ns(v: Any) -> int:
    """An ISO-8601 duration (``PT0.125S``, ``PT1M2S``, ``P1DT2H``) in nanoseconds; also a
    plain number of seconds. Raises ``ValueError``."""
    if v is None or v == "":
        return 0
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return int(Decimal(repr(v)) * 1_000_000_000)
    m = DURATION.match(str(v).strip()) if isinstance(v, str) else None
    if not m or not any(m.groups()):
        raise ValueError(f"{v!r} is not an ISO-8601 duration")
    days, hours, minutes, seconds = (Decimal(g) if g else Decimal(0) for g in m.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1_000_000_000)


def _id(raw: Any, nbytes: int) -> str:
    """The id as hex, or a hash of it when it is a dataset's own name."""
    s = str(raw)
    h = hex_id(s, nbytes)
    return h if h is not None else hashlib.sha256(s.encode("utf-8")).hexdigest()[: 2 * nbytes]


def read(doc: Any) -> list[SpanRecord]:
    out: list[SpanRecord] = []
    for t, trace in enumerate(_traces(doc)):
        raw_tid = trace.get("trace_id")
        # iterative, so a deep tree cannot exhaust the stack: (span, where, parent, depth)
        stack: list[tuple[Any, str, str | None, int]] = [
            (s, f"traces[{t}].spans[{i}]", None, 0) for i, s in reversed(list(enumerate(trace["spans"])))]
        while stack:
            s, where, parent, depth = stack.pop()
            if not isinstance(s, dict):
                raise InputError(f"{where}: expected an object")
            if depth > MAX_DEPTH:
                raise InputError(f"{where}: spans nested more than {MAX_DEPTH} deep")
            rec = _span(s, where, raw_tid, parent)
            out.append(rec)
            children = s.get("child_spans") or []
            if not isinstance(children, list):
                raise InputError(f"{where}.child_spans: expected a list")
            stack += [(c, f"{where}.child_spans[{i}]", rec.span_id, depth + 1) for i, c in reversed(list(enumerate(children)))]
    return out


def _span(s: dict[str, Any], where: str, raw_tid: Any, parent: str | None) -> SpanRecord:
    if s.get("span_id") in (None, ""):
        raise InputError(f"{where}: no span_id")
    tid_raw = s.get("trace_id") or raw_tid
    if tid_raw in (None, ""):
        raise InputError(f"{where}: no trace_id (on the span or its trace)")
    attrs = s.get("span_attributes") or {}
    if not isinstance(attrs, dict):
        raise InputError(f"{where}.span_attributes: expected an object")
    code_name = str(s.get("status_code") or "Unset").upper()
    if code_name not in STATUS:
        raise InputError(f"{where}.status_code: {s.get('status_code')!r} is not Unset, Ok or Error")
    try:
        start = to_ns(s.get("timestamp"))
        end = start + duration_ns(s.get("duration"))
    except ValueError as e:
        raise InputError(f"{where}: {e}") from None
    if s.get("parent_span_id"):
        parent = _id(s["parent_span_id"], SPAN_ID_BYTES)
    return build_span(_id(tid_raw, TRACE_ID_BYTES), _id(s["span_id"], SPAN_ID_BYTES), parent,
                      str(s.get("span_name") or ""), start, end, STATUS[code_name], str(s.get("status_message") or ""),
                      dict(attrs))
