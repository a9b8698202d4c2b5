"""Request bodies -> spans, shared by the gRPC and HTTP receivers.

Undecodable payloads raise ``InputError`` (INVALID_ARGUMENT / 400); a body over the size
limit after decompression raises ``PayloadTooLarge`` (RESOURCE_EXHAUSTED / 413).
Individually bad spans are counted in ``Decoded.rejected`` for a partial-success answer.
"""
from __future__ import annotations

import json
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.read import otlp_json, otlp_logs, otlp_proto
from faultgate_stream.read.otlp_logs import DecodedLogs
from faultgate_stream.read.otlp_proto import Decoded, Received
from faultgate_stream.read.projection import Projection


class PayloadTooLarge(InputError):
    """The request is over the size limit (after decompression). Permanent: the same
    request fails again."""


def protobuf(body: bytes, projection: Projection | None = None) -> tuple[Received, Decoded]:
    return otlp_proto.decode(body, projection)


def logs_protobuf(body: bytes) -> tuple[Any, DecodedLogs]:
    return otlp_logs.decode(body)


def logs_json(body: bytes) -> tuple[Any, DecodedLogs]:
    """The body itself stands for the request (what the write-ahead log keeps), and its records."""
    doc = _json(body)
    doc.setdefault("resourceLogs", [])
    return body, otlp_logs.read_json(doc)


def _json(body: bytes, what: str = "an OTLP export request") -> dict[str, Any]:
    try:
        doc = json.loads(body)
    except UnicodeDecodeError:
        raise InputError("body is not UTF-8 JSON") from None
    except ValueError as e:
        raise InputError(f"body is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise InputError(f"body is not {what}: expected a JSON object")
    return doc


def json_body(body: bytes, projection: Projection | None = None) -> tuple[Received, Decoded]:
    doc = _json(body, "an ExportTraceServiceRequest")
    doc.setdefault("resourceSpans", [])
    request, _, first = otlp_json.to_request(doc)
    received = Received.of(request)
    decoded = otlp_proto.read(received.body, projection)
    # the JSON path knows the field and the value at fault; the protobuf reader only bytes
    return received, Decoded(decoded.spans, decoded.rejected, first or decoded.first_problem)


class Reader:
    """How the receivers decode trace requests: with the attribute projection the service's
    checks need (read/projection.py), or every attribute when ``projection`` is None. The
    service replaces ``projection`` whole on reload; a request reads the one it finds."""

    def __init__(self, projection: Projection | None = None) -> None:
        self.projection = projection

    def protobuf(self, body: bytes) -> tuple[Received, Decoded]:
        return protobuf(body, self.projection)

    def json_body(self, body: bytes) -> tuple[Received, Decoded]:
        return json_body(body, self.projection)
