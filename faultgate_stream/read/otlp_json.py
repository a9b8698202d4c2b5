"""OTLP/JSON (``{"resourceSpans": [...]}``) -> ``SpanRecord``.

The JSON mapping of OTLP: hex ids, 64-bit integers as strings, enums as ints or names,
``AnyValue`` objects for attribute values. Trace files are read by the compiled reader
(native/py/src/read/otlp_json.rs), which builds the records as the protobuf reader does;
``value`` stays for OTLP/JSON logs, and ``to_request`` for the HTTP receiver and
``replay``, which forward protobuf.
"""
from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import SERVICE_VERSION
from faultgate_stream import _native
from faultgate_stream.read import events
from faultgate_stream.read.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, hex_id

FIXED64 = 2**64  # OTLP times are fixed64 nanoseconds: what the protobuf reader can be sent


def value(v: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a plain Python value. A value of the wrong shape raises
    ``InputError`` (the caller names the attribute), never a TypeError (issue 9, defect 2)."""
    if not isinstance(v, dict):
        return v
    try:
        return _value(v)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError, binascii.Error) as e:
        raise InputError(f"not an AnyValue ({type(e).__name__}: {e})"[:200]) from None


def _value(v: dict[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [value(x) for x in _values(v["arrayValue"])]
    if "kvlistValue" in v:
        return {_key(kv): value(kv.get("value")) for kv in _values(v["kvlistValue"])}
    if "bytesValue" in v:
        return base64.b64decode(v["bytesValue"])
    return None


def _values(container: Any) -> list[Any]:
    vs = (container or {}).get("values", [])
    if not isinstance(vs, list):
        raise TypeError("values is not a list")
    return vs


def _key(kv: Any) -> str:
    if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
        raise TypeError("a kvlist entry is not a {key, value} object")
    return kv["key"]


_PROTO_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
# The end of a key in protobuf's own spelling (``_spans":``): led by a literal, so the search
# skips ahead by it. A key spelled with escapes (``"resource\u005fspans"``) is not seen by a
# search of the text, so escapes anywhere are worth a walk too.
_MAYBE_PROTO_NAMES = re.compile(rb'_[a-z0-9]+"\s*:')


def json_names(doc: Any, text: bytes | None = None) -> Any:
    """``doc`` with every field named as OTLP/JSON names it (lowerCamelCase), however the
    sender named it: the protobuf JSON mapping requires parsers to accept the proto field
    names too (``resource_spans``, ``trace_id``, ``string_value``), and a request written so
    was answered 200 with its spans neither taken nor rejected (issue 42). Every object of
    an OTLP/JSON document is a message (attribute keys are values, not names), so every key
    is renamed. A field written under both names is refused: which one the sender meant is
    not ours to guess. ``text``: the body ``doc`` was parsed from, to skip the walk when no
    key can be in protobuf's spelling. Changes ``doc`` in place."""
    if text is not None and b"\\u" not in text and not _MAYBE_PROTO_NAMES.search(text):
        return doc
    todo = [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(x for x in node if isinstance(x, (dict, list)))
            continue
        if not isinstance(node, dict):
            continue
        renames = [k for k in node if isinstance(k, str) and "_" in k and _PROTO_NAME.fullmatch(k)]
        for key in renames:
            head, *rest = key.split("_")
            name = head + "".join(p[:1].upper() + p[1:] for p in rest)
            if name == key:
                continue
            if name in node:
                raise InputError(f"a field is written both as {key!r} and as {name!r}")
            node[name] = node.pop(key)
        todo.extend(v for v in node.values() if isinstance(v, (dict, list)))
    return doc


# Where a span sits: its (resource, scope, span) indexes, or the path already written out.
# Reading keeps the indexes and writes the path only into an error message.
Place = tuple[int, int, int] | str


def _where(place: Place) -> str:
    return place if isinstance(place, str) else "resourceSpans[{}].scopeSpans[{}].spans[{}]".format(*place)


def located_spans(doc: dict[str, Any]) -> Iterator[tuple[tuple[int, int, int], Any]]:
    rss = doc.get("resourceSpans")
    if not isinstance(rss, list):
        raise InputError("resourceSpans: expected a list")
    for i, rs in enumerate(rss):
        for j, ss in enumerate(_list_in(rs, "scopeSpans", f"resourceSpans[{i}]")):
            for k, s in enumerate(_list_in(ss, "spans", f"resourceSpans[{i}].scopeSpans[{j}]")):
                yield (i, j, k), s


def _list_in(obj: Any, key: str, where: str) -> list[Any]:
    """``obj[key]`` as a list (absent or null: empty). A container of another shape is
    not OTLP/JSON: an ``InputError`` naming it, never an AttributeError (issue 9, defect 2)."""
    if obj is None:
        return []
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected an object")
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise InputError(f"{where}.{key}: expected a list")
    return v


def raw_spans(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each span object with the path it sits at, for messages that say where."""
    for place, s in located_spans(doc):
        yield _where(place), s


# The compiled reader (native/py/src/read/otlp_json.rs): the file's bytes -> the records. It
# follows ids.hex_id and base64.b64decode by calling them where its own fast paths do not
# decide.
_READER = _native.OtlpJson(SERVICE_VERSION, events.EVENT, hex_id, base64.b64decode)


def read_bytes(data: bytes) -> list[SpanRecord] | None:
    """The records of an OTLP/JSON trace file's bytes, or None when they are not one JSON
    object with ``resourceSpans`` (and no ``resourceLogs``) as the compiled lexer reads
    JSON: the caller then parses them as any other JSON and calls ``read``. Raises
    ``InputError`` naming the first bad span or container, as ``read`` does."""
    try:
        return _READER.read_bytes(data)
    except _native.OtlpJsonError as e:
        raise InputError(str(e)) from None


def read(doc: dict[str, Any]) -> list[SpanRecord]:
    """The records of a parsed OTLP/JSON document (NaN, lone surrogates and other JSON
    only Python reads reach the compiled reader this way)."""
    try:
        return _READER.read_doc(doc)
    except _native.OtlpJsonError as e:
        raise InputError(str(e)) from None


def to_request(doc: Any) -> tuple[Any, int, str]:
    """OTLP/JSON -> (``ExportTraceServiceRequest``, spans whose ids are malformed, the first
    such problem). The live service and ``replay`` speak protobuf; a span whose ids cannot be
    converted gets an empty trace id, so the protobuf reader rejects it like any other bad
    span.
    Raises ``InputError`` when the document is not OTLP/JSON at all."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    if not isinstance(doc, dict):
        raise InputError("not OTLP/JSON: expected an object with resourceSpans")
    bad, first = 0, ""
    for where, s in raw_spans(doc):
        if not isinstance(s, dict):
            raise InputError(f"{where}: expected an object")
        malformed = False
        for key, n in (("traceId", TRACE_ID_BYTES), ("spanId", SPAN_ID_BYTES), ("parentSpanId", SPAN_ID_BYTES)):
            raw = s.get(key)
            if key == "parentSpanId" and not raw:
                s.pop(key, None)
                continue
            h = hex_id(str(raw or ""), n)
            if h is None:
                malformed = True
                first = first or f"{where}.{key}: {raw!r} is not a {2 * n}-digit hex id"
                s[key] = ""
            else:
                # the proto3 JSON mapping reads bytes as base64; OTLP/JSON writes hex
                s[key] = base64.b64encode(bytes.fromhex(h)).decode()
        if malformed:
            # an empty parent would make the span a root, not a rejected span (issue 42):
            # its trace id is emptied, which the reader rejects whatever else is wrong
            bad += 1
            s["traceId"] = ""
    try:
        request = json_format.ParseDict(doc, ExportTraceServiceRequest(), ignore_unknown_fields=True)
    except json_format.ParseError as e:
        raise InputError(f"not a valid OTLP/JSON trace export: {e}") from None
    except OverflowError:  # json_format converts an infinite float for an integer field with int()
        raise InputError("not a valid OTLP/JSON trace export: an integer field holds an infinite number") from None
    except SystemError as e:
        # upb looks an unknown field's name up as UTF-8 and reports an unpaired surrogate
        # (a JSON escape like "\udcff") as SystemError; every other SystemError is a bug
        if not isinstance(e.__context__, UnicodeError):
            raise
        raise InputError("not a valid OTLP/JSON trace export: a field name holds an unpaired "
                         "surrogate (not Unicode text)") from None
    return request, bad, first
