"""Request bodies -> spans, shared by the gRPC and HTTP receivers.

Undecodable payloads raise ``InputError`` (INVALID_ARGUMENT / 400); a gzip body that
inflates past the limit raises ``PayloadTooLarge`` (413): the limit applies after
decompression, so a small bomb cannot exhaust memory. Individually bad spans are counted
in ``Decoded.rejected`` for a partial-success answer.
"""
from __future__ import annotations

import json
import zlib

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.model.errors import InputError
from faultgate_stream.read import otlp_json, otlp_proto
from faultgate_stream.read.otlp_proto import Decoded

_CHUNK = 1 << 16


class PayloadTooLarge(InputError):
    """The request is over the size limit (after decompression). Permanent: the same
    request fails again."""


def gunzip(body: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = bytearray()
    try:
        data = body
        while data:
            out += d.decompress(data, _CHUNK)
            if len(out) > limit:
                raise PayloadTooLarge(f"request inflates past the {limit}-byte limit")
            data = d.unconsumed_tail
        out += d.flush()
    except zlib.error as e:
        raise InputError(f"gzip body is corrupt: {e}") from None
    if len(out) > limit:
        raise PayloadTooLarge(f"request inflates past the {limit}-byte limit")
    return bytes(out)


def protobuf(body: bytes) -> tuple[ExportTraceServiceRequest, Decoded]:
    request = otlp_proto.parse(body)
    return request, otlp_proto.read(request)


def json_body(body: bytes) -> tuple[ExportTraceServiceRequest, Decoded]:
    try:
        doc = json.loads(body)
    except UnicodeDecodeError:
        raise InputError("body is not UTF-8 JSON") from None
    except ValueError as e:
        raise InputError(f"body is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise InputError("body is not an ExportTraceServiceRequest: expected a JSON object")
    doc.setdefault("resourceSpans", [])
    request, _, first = otlp_json.to_request(doc)
    decoded = otlp_proto.read(request)
    # the JSON path knows the field and the value at fault; the protobuf reader only bytes
    return request, Decoded(decoded.spans, decoded.rejected, first or decoded.first_problem)
