"""Trace files -> ``SpanRecord``: format detection and the one error every bad file gets.

OTLP/JSON and OTLP protobuf are what collectors write; the other formats are exports of
vendors and frameworks, mapped onto the same records so that every check runs unchanged.
A file no reader recognises is an error, never "0 steps, clean".
"""
from __future__ import annotations

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


def detect(doc: Any) -> str:
    if isinstance(doc, dict) and "resourceSpans" in doc:
        return "otlp"
    for name, reader in _readers().items():
        if reader.detect(doc):
            return name
    raise InputError("unrecognised trace format; expected OTLP/JSON or protobuf, Langfuse, LangSmith, Braintrust, "
                     "n8n, LangGraph, CrewAI or OTel SDK span dumps (pass --format to force one)")


def read_document(doc: Any, fmt: str = "auto") -> tuple[str, list[SpanRecord]]:
    if fmt == "auto":
        fmt = detect(doc)
    if fmt == "otlp":
        if not isinstance(doc, dict) or "resourceSpans" not in doc:
            raise InputError("not OTLP/JSON: no resourceSpans")
        spans = otlp_json.read(doc)
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
    return fmt, spans


def read_file(path: str | Path, fmt: str = "auto") -> tuple[str, list[SpanRecord]]:
    """(format read, spans) of a file. Raises ``InputError`` with a one-line reason."""
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
        return "otlp-proto", _proto(p, data)
    try:
        doc = payload.loads(data)
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text, and not an OTLP protobuf export") from None
    except ValueError as e:
        raise InputError(f"{p}: not valid JSON ({e})") from None
    try:
        found, spans = read_document(doc, fmt)
    except InputError as e:
        raise InputError(f"{p}: {e}") from None
    if not spans:
        raise InputError(f"{p}: no spans found in this {found} file")
    return found, spans


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
