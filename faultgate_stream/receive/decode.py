"""Request bodies -> spans, shared by the gRPC and HTTP receivers.

Undecodable payloads raise ``InputError`` (INVALID_ARGUMENT / 400); a body over the size
limit after decompression raises ``PayloadTooLarge`` (RESOURCE_EXHAUSTED / 413); JSON
nested past ``bounds.MAX_JSON_DEPTH`` raises ``bounds.TooDeep`` (400) before it is parsed.
Individually bad spans are counted in ``Decoded.rejected`` for a partial-success answer.
"""
from __future__ import annotations

import json
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.read import bounds, otlp_json, otlp_logs, otlp_proto
from faultgate_stream.read.otlp_logs import DecodedLogs
from faultgate_stream.read.otlp_proto import Decoded, Received
from faultgate_stream.read.projection import Projection


class PayloadTooLarge(InputError):
    """The request is over the size limit (after decompression). Permanent: the same
    request fails again."""


class Unaccounted(RuntimeError):
    """Spans of a request the reader neither took nor rejected: a bug of ours, never an
    answer of OK (issue 42: a request with protobuf's field names had its spans silently
    dropped). Classified as an internal error."""


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
    bounds.check_json_depth(body)  # json.loads recurses: bounded before it runs
    try:
        doc = json.loads(body)
    except UnicodeDecodeError:
        raise InputError("body is not UTF-8 JSON") from None
    except ValueError as e:
        raise InputError(f"body is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise InputError(f"body is not {what}: expected a JSON object")
    return otlp_json.json_names(doc, body if isinstance(body, bytes) else None)


def json_body(body: bytes, projection: Projection | None = None) -> tuple[Received, Decoded]:
    doc = _json(body, "an ExportTraceServiceRequest")
    doc.setdefault("resourceSpans", [])
    over = _over_bounds(doc)
    request, _, first = otlp_json.to_request(doc)
    received = Received.of(request)
    decoded = otlp_proto.read(received.body, projection)
    offered = sum(1 for _ in otlp_json.raw_spans(doc))
    if offered != len(decoded.spans) + decoded.rejected:
        raise Unaccounted(f"{offered} spans in the request, {len(decoded.spans)} taken and "
                          f"{decoded.rejected} rejected")
    received.rejected = decoded.rejected_places()
    rejections = tuple((*r[:3], "too_deep" if r[:3] in over else r[3]) for r in decoded.rejections)
    if over:
        i, j, k = place = min(over)
        first = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]: {over[place]}"
    # the JSON path knows the field and the value at fault; the protobuf reader only bytes
    return received, Decoded(decoded.spans, decoded.rejected, first or decoded.first_problem, rejections)


def _over_bounds(doc: dict[str, Any]) -> dict[tuple[int, int, int], str]:
    """The spans whose values are past a bound (read/bounds.py), each emptied of its values
    and of its trace id before the protobuf parser walks them, so that the reader rejects
    it: a span of 65,536 values cost the parser 2.7 s before the reader could refuse it."""
    over = {}
    for place, s in otlp_json.located_spans(doc):
        problem = bounds.json_span_problem(s)
        if problem:
            over[place] = problem
            for key in ("attributes", "events", "links"):
                s.pop(key, None)
            s["traceId"] = ""
    return over


class Reader:
    """How the receivers decode trace requests: with the attribute projection the service's
    checks need (read/projection.py), or every attribute when ``projection`` is None. The
    service replaces ``projection`` whole on reload; a request reads the one it finds.

    ``max_span_bytes``: with span export on, a span that no request the downstream takes
    could hold (with its resource, scope and verdict) is rejected on arrival, naming the
    limit (issue 42): acknowledged, it could only have been dropped on the way out."""

    def __init__(self, projection: Projection | None = None, max_span_bytes: int | None = None) -> None:
        self.projection = projection
        self.max_span_bytes = max_span_bytes

    def protobuf(self, body: bytes) -> tuple[Received, Decoded]:
        return self._sized(*protobuf(body, self.projection))

    def json_body(self, body: bytes) -> tuple[Received, Decoded]:
        return self._sized(*json_body(body, self.projection))

    def _sized(self, received: Received, decoded: Decoded) -> tuple[Received, Decoded]:
        if self.max_span_bytes is None:
            return received, decoded
        why = "the bytes a span may take in an export request: export.max_request_bytes less room for its verdict"
        return received, otlp_proto.reject_larger_than(received, decoded, self.max_span_bytes, why)
