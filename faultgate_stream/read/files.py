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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read import otlp_json, payload

# The names of ``formats.READERS``, in its order (a test keeps the two equal): written out
# so that reading OTLP, which most files are, does not import seven vendor readers first.
VENDOR_FORMATS = ("langfuse", "langsmith", "braintrust", "n8n", "langgraph", "crewai", "otel-sdk")
FORMATS = ("auto", "otlp", "otlp-proto", *VENDOR_FORMATS)


def _readers() -> dict[str, Any]:
    from faultgate_stream.read.formats import READERS

    return READERS


@dataclass
class Telemetry:
    """What one file holds: its format, its spans, and content records from its log records."""

    fmt: str
    spans: list[SpanRecord]
    contents: list[SpanRecord] = field(default_factory=list)


def detect(doc: Any) -> str:
    if isinstance(doc, dict) and ("resourceSpans" in doc or "resourceLogs" in doc):
        return "otlp"
    for name, reader in _readers().items():
        if reader.detect(doc):
            return name
    raise InputError("unrecognised trace format; expected OTLP/JSON or protobuf, Langfuse, LangSmith, Braintrust, "
                     "n8n, LangGraph, CrewAI or OTel SDK span dumps (pass --format to force one)")


def read_document(doc: Any, fmt: str = "auto") -> tuple[str, list[SpanRecord]]:
    found = read_document_all(doc, fmt)
    return found.fmt, found.spans


def _logs(doc: dict[str, Any]) -> list[SpanRecord]:
    from faultgate_stream.read import otlp_logs

    decoded = otlp_logs.read_json(doc)
    if decoded.rejected:
        raise InputError(decoded.first_problem)
    return decoded.contents


def read_document_all(doc: Any, fmt: str = "auto") -> Telemetry:
    """The spans and log content of a parsed document. Raises ``InputError``."""
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
            raise InputError(f"not a valid {fmt} export: the records do not have its fields")
        try:
            spans = reader.read(doc)
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise InputError(f"not a valid {fmt} export: {e!r}") from None
    else:
        raise InputError(f"unknown format {fmt!r}; available: {', '.join(FORMATS)}")
    return Telemetry(fmt, spans, contents)


def read_file(path: str | Path, fmt: str = "auto") -> tuple[str, list[SpanRecord]]:
    """(format read, spans) of a file. Raises ``InputError`` with a one-line reason."""
    found = read_telemetry(path, fmt)
    if not found.spans:
        raise InputError(f"{Path(path)}: no spans found in this {found.fmt} file")
    return found.fmt, found.spans


def read_files(paths: list[str], fmt: str = "auto") -> list[Telemetry]:
    """Every file of one check: spans in some, log content in others (``check traces.json
    logs.json``). A file with neither is an error, and so is a set with no spans at all."""
    found = [read_telemetry(p, fmt) for p in paths]
    if not any(f.spans for f in found):
        raise InputError(f"{paths[0]}: no spans found in this {found[0].fmt} file" if len(paths) == 1
                         else "no spans found in any of the files (log records alone have no runs to join)")
    return found


def read_telemetry(path: str | Path, fmt: str = "auto") -> Telemetry:
    """The spans and log content of a file. Raises ``InputError`` with a one-line reason."""
    p = Path(path)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; available: {', '.join(FORMATS)}")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InputError(f"{p}: cannot read ({e.strerror or e})") from None
    if not data.strip():
        raise InputError(f"{p}: empty file")
    if fmt == "otlp-proto" or (fmt == "auto" and not data.lstrip()[:1] in (b"{", b"[")):
        return Telemetry("otlp-proto", _proto(p, data))
    try:
        doc = payload.loads(data)
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text, and not an OTLP protobuf export") from None
    except ValueError as e:
        raise InputError(f"{p}: not valid JSON ({e})") from None
    try:
        found = read_document_all(doc, fmt)
    except InputError as e:
        raise InputError(f"{p}: {e}") from None
    if not found.spans and not found.contents:
        what = "spans or GenAI log content" if isinstance(doc, dict) and "resourceLogs" in doc else "spans"
        raise InputError(f"{p}: no {what} found in this {found.fmt} file")
    return found


def _proto(p: Path, data: bytes) -> list[SpanRecord]:
    # Only binary files need protobuf and the OTLP message classes, whose import is most of
    # what `check` imports: a JSON file is read without them.
    from faultgate_stream.read import otlp_proto

    try:
        decoded = otlp_proto.read(otlp_proto.parse(data))
    except InputError as e:
        raise InputError(f"{p}: not JSON, and {e}") from None
    if decoded.rejected:
        raise InputError(f"{p}: {decoded.first_problem}")
    if not decoded.spans:
        raise InputError(f"{p}: not JSON, and no spans found reading it as OTLP protobuf")
    return decoded.spans
