"""Trace files -> ``SpanRecord``: format detection and the one error every bad file gets.

OTLP/JSON and OTLP protobuf are what collectors write; the other formats are exports of
vendors and frameworks, mapped onto the same records so that every check runs unchanged.
A file no reader recognises is an error, never "0 steps, clean".

OTLP logs (``{"resourceLogs": [...]}``, alone or beside ``resourceSpans`` in one document)
carry GenAI content that ``event_only`` instrumentations put in log events: they are read
into content records (``read.log_events``) that the assembler joins to their spans, so
``check traces.json logs.json`` and a file holding both read alike.
"""
from __future__ import annotations

import os
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read import containers, otlp_json, payload

# The names of ``formats.READERS``, in its order (a test keeps the two equal): written out
# so that reading OTLP, which most files are, does not import seven vendor readers first.
VENDOR_FORMATS = ("tau2", "child-spans", "langfuse", "langsmith", "braintrust", "n8n", "langgraph", "crewai",
                  "any-agent", "otel-sdk", "otel-js")
FORMATS = ("auto", "otlp", "otlp-proto", *VENDOR_FORMATS)


def _readers() -> dict[str, Any]:
    from faultgate_stream.read.formats import READERS

    return READERS


class Telemetry:
    """What one file holds: its format, its spans, and content records from its log records."""

    __slots__ = ("fmt", "spans", "contents")

    def __init__(self, fmt: str, spans: list[SpanRecord], contents: list[SpanRecord] | None = None) -> None:
        self.fmt = fmt
        self.spans = spans
        self.contents = contents if contents is not None else []


OTLP_NEEDS = (("resourceSpans", "resourceLogs"),)


def detect(doc: Any) -> str:
    if isinstance(doc, dict) and ("resourceSpans" in doc or "resourceLogs" in doc):
        return "otlp"
    readers = _readers()
    for name, reader in readers.items():
        if reader.detect(doc):
            return name
    closest, shared = _closest(doc, readers)
    hint = ""
    if closest:
        needs = OTLP_NEEDS if closest == "otlp" else readers[closest].NEEDS
        lacking = lacks(doc, needs)
        hint = (f"; closest: {closest} (shares {', '.join(sorted(shared)[:4])}"
                + (f"; lacks {'; '.join(lacking)})" if lacking else ")"))
    raise InputError(f"unrecognised trace format; tried otlp, {', '.join(readers)}{hint}")


def _keys(doc: Any) -> set[str]:
    """The field names a document shows: its own and those of its first record."""
    keys: set[str] = set()
    first: Any = doc[0] if isinstance(doc, list) and doc else None
    if isinstance(doc, dict):
        keys |= set(doc)
        first = next((v[0] for v in doc.values() if isinstance(v, list) and v), None)
    if isinstance(first, dict):
        keys |= set(first)
    return {str(k) for k in keys}


def _closest(doc: Any, readers: dict[str, Any]) -> tuple[str, set[str]]:
    """The reader whose format's field names (``SIGNATURE``) the document shares most."""
    keys = _keys(doc)
    best, shared = "", set()
    otlp = {"resourceSpans", "resourceLogs", "scopeSpans", "spans", "traceId", "spanId"} & keys
    if otlp:
        best, shared = "otlp", otlp
    for name, reader in readers.items():
        common = keys & getattr(reader, "SIGNATURE", frozenset())
        if len(common) > len(shared):
            best, shared = name, common
    return best, shared


def _first(x: Any) -> Any:
    """A list's first object (a list of records is looked at through its first), else ``x``."""
    return next((r for r in x if isinstance(r, dict)), None) if isinstance(x, list) else x


def _has(node: Any, path: str) -> bool:
    for name in path.split("."):
        node = _first(node)
        if not isinstance(node, dict) or name not in node:
            return False
        node = node[name]
    return True


def lacks(doc: Any, needs: tuple[tuple[str, ...], ...]) -> list[str]:
    """The groups of ``needs`` (a reader's ``NEEDS``) that no path of reaches a field, from
    the document or from the first record of a list in it (two levels down), each spelled
    ``a or b``."""
    starts = [doc]
    for node in (doc, _first(doc)):
        if isinstance(node, dict):
            starts += [_first(v) for v in node.values() if isinstance(v, list)]
        elif isinstance(node, list):
            starts.append(_first(node))
    return [" or ".join(group) for group in needs
            if not any(_has(start, path) for start in starts for path in group)]


def read_document(doc: Any, fmt: str = "auto") -> tuple[str, list[SpanRecord]]:
    found = read_document_all(doc, fmt)
    return found.fmt, found.spans


def _logs(doc: dict[str, Any]) -> list[SpanRecord]:
    from faultgate_stream.read import otlp_logs

    decoded = otlp_logs.read_json(doc)
    if decoded.rejected:
        raise InputError(decoded.first_problem)
    return decoded.contents


# OTLP/JSON written with protobuf's own field names, as the JSON mapping lets a writer do
PROTO_NAMED = ("resource_spans", "resource_logs")


def read_document_all(doc: Any, fmt: str = "auto") -> Telemetry:
    """The spans and log content of a parsed document. Raises ``InputError``."""
    if isinstance(doc, dict) and any(k in doc for k in PROTO_NAMED):
        doc = otlp_json.json_names(doc)
    if fmt == "auto":
        fmt = detect(doc)
    contents: list[SpanRecord] = []
    if fmt == "otlp":
        if not isinstance(doc, dict) or ("resourceSpans" not in doc and "resourceLogs" not in doc):
            raise InputError("not OTLP/JSON: no resourceSpans or resourceLogs")
        spans = otlp_json.read(doc) if "resourceSpans" in doc else []
        if "resourceLogs" in doc:
            contents = _logs(doc)
    elif fmt in VENDOR_FORMATS:
        reader = _readers()[fmt]
        if not reader.detect(doc):
            lacking = lacks(doc, reader.NEEDS)
            raise InputError(f"not a valid {fmt} export: the records do not have its fields"
                             + (f" (lacks {'; '.join(lacking)})" if lacking else ""))
        try:
            spans = reader.read(doc)
        except (KeyError, TypeError, AttributeError, ValueError, OverflowError, RecursionError) as e:
            raise InputError(f"not a valid {fmt} export: {e!r}") from None
    else:
        raise InputError(f"unknown format {fmt!r}; available: {', '.join(FORMATS)}")
    return Telemetry(fmt, spans, contents)


def read_file(path: str | os.PathLike, fmt: str = "auto") -> tuple[str, list[SpanRecord]]:
    """(format read, spans) of a file. Raises ``InputError`` with a one-line reason."""
    found = read_telemetry(path, fmt)
    if not found.spans:
        raise InputError(f"{os.fspath(path)}: no spans found in this {found.fmt} file")
    return found.fmt, found.spans


def read_files(paths: list[str], fmt: str = "auto") -> list[Telemetry]:
    """Every file of one check: spans in some, log content in others (``check traces.json
    logs.json``). A file with neither is an error, and so is a set with no spans at all."""
    found = [read_telemetry(p, fmt) for p in paths]
    if not any(f.spans for f in found):
        raise InputError(f"{paths[0]}: no spans found in this {found[0].fmt} file" if len(paths) == 1
                         else "no spans found in any of the files (log records alone have no runs to join)")
    return found


def read_telemetry(path: str | os.PathLike, fmt: str = "auto") -> Telemetry:
    """The spans and log content of a file. Raises ``InputError`` with a one-line reason."""
    # os, not pathlib: pathlib's import is ~4% of a `check` command's instructions
    p = os.path.normpath(os.fspath(path))
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; available: {', '.join(FORMATS)}")
    try:
        with open(p, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"{p}: cannot read ({e.strerror or e})") from None
    try:
        data, compression = containers.decompress(data)
    except InputError as e:
        raise InputError(f"{p}: {e}") from None
    if not data.strip():
        raise InputError(f"{p}: empty file")
    found = _read_bytes(p, data, fmt)
    if compression:
        found.fmt += f" ({compression})"
    return found


def _read_bytes(p: str, data: bytes, fmt: str) -> Telemetry:
    # JSON is whatever decodes as JSON (``null``, a string, a file with a byte order mark:
    # issue 9, defect 15), not only what starts with a brace
    starts_like_json = data.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] in (b"{", b"[", b'"')
    if fmt == "otlp-proto" or (fmt == "auto" and not starts_like_json and not _is_json(data)):
        spans, contents, shape = _proto(p, data)
        return Telemetry(shape, spans, contents)
    if fmt in ("auto", "otlp"):
        # An OTLP/JSON trace file, the common case, is read from its bytes by the compiled
        # reader, with no Python object of the whole document; anything else it hands back.
        try:
            spans = otlp_json.read_bytes(data)
        except InputError as e:
            raise InputError(f"{p}: {' '.join(str(e).split())[:500]}") from None
        if spans is not None:
            if not spans:
                raise InputError(f"{p}: no spans found in this otlp file")
            return Telemetry("otlp", spans, [])
    try:
        docs, lines = [payload.loads(data)], False
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text, and not an OTLP protobuf export") from None
    except ValueError as e:
        values = containers.json_values(data)
        if values is None:
            raise InputError(f"{p}: not valid JSON ({' '.join(str(e).split())[:300]})") from None
        docs, lines = values, True
    if not lines and not isinstance(docs[0], (dict, list)):
        d = docs[0]
        raise InputError(f"{p}: valid JSON, but a {type(d).__name__ if d is not None else 'null'} "
                         "where a trace export (an object or a list) belongs")
    if lines and not all(isinstance(d, dict) and any(k in d for k in ("resourceSpans", "resourceLogs", *PROTO_NAMED))
                         for d in docs):
        docs = [docs]  # lines of records (spans, events) rather than of export requests: one list
    found = Telemetry(fmt, [], [])
    for i, doc in enumerate(docs):
        where = f"{p}: line {i + 1}" if lines and len(docs) > 1 else f"{p}"
        try:
            part = read_document_all(doc, fmt)
        except InputError as e:
            raise InputError(f"{where}: {' '.join(str(e).split())[:500]}") from None
        except RecursionError:
            raise InputError(f"{where}: nested too deep to read") from None
        found.fmt = part.fmt
        found.spans += part.spans
        found.contents += part.contents
    if lines:
        found.fmt += " (json lines)"
    if not found.spans and not found.contents:
        logs = any(isinstance(d, dict) and "resourceLogs" in d for d in docs)
        raise InputError(f"{p}: no {'spans or GenAI log content' if logs else 'spans'} found in this {found.fmt} file")
    return found


def _is_json(data: bytes) -> bool:
    try:
        payload.loads(data)
    except ValueError:  # UnicodeDecodeError included
        return False
    return True


def _proto(p: str, data: bytes) -> tuple[list[SpanRecord], list[SpanRecord], str]:
    """(spans, contents, format) of a protobuf file: one ``ExportTraceServiceRequest``, or
    the file exporter's length-prefixed stream of trace or logs requests."""
    # Only binary files need protobuf and the OTLP message classes, whose import is most of
    # what `check` imports: a JSON file is read without them.
    from faultgate_stream.read import otlp_logs, otlp_proto

    messages = containers.length_prefixed(data)
    if messages and messages[0][:4] == containers.ZSTD_MAGIC:
        # compression: zstd frames each request, behind the same length prefixes
        raise InputError(f"{p}: length-prefixed zstd frames (the file exporter's compression: zstd); no zstd "
                         "decoder is installed: re-export without compression, or decompress each frame with zstd -d")
    spans: list[SpanRecord] = []
    contents: list[SpanRecord] = []
    for i, message in enumerate(messages or [data]):
        where = f"{p}: message {i + 1}" if messages else f"{p}"
        try:
            decoded, problem = otlp_proto.decode(message)[1], ""
        except InputError as e:
            decoded, problem = None, str(e)
        if messages and (decoded is None or not decoded.spans):
            # the file exporter writes one signal per file: a logs pipeline's requests do
            # not parse as trace requests, or parse with no valid spans
            try:
                logs = otlp_logs.decode(message)[1]
            except InputError:
                logs = None
            if logs is not None and logs.records and not logs.rejected:
                contents += logs.contents
                continue
        if decoded is None:
            raise InputError(f"{where}: not JSON, and {problem}")
        if decoded.rejected:
            raise InputError(f"{where}: {decoded.first_problem}")
        spans += decoded.spans
    if not spans and not contents:
        raise InputError(f"{p}: not JSON, and no spans found reading it as OTLP protobuf")
    return spans, contents, "otlp-proto (length-prefixed)" if messages else "otlp-proto"
