"""A compiled reader's span row (native/src/lib.rs for protobuf, otlp_json.rs for
OTLP/JSON: ids as hex, name, times, status, attributes, evaluation events) -> ``SpanRecord``,
the same for both readers."""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import SERVICE_VERSION
from faultgate_stream.read import events
from faultgate_stream.read.conventions import build_span


def row_record(version: Any, tid: str, sid: str, parent: str | None, name: str, start: int, end: int,
               code: int, message: str, attrs: dict[str, Any], evaluations: list[dict[str, Any]] | None,
               kept: frozenset[str] | None = None) -> SpanRecord:
    """The record of one row: the resource's ``service.version`` (``version``) on a root or
    an agent, the evaluation events as results; only ``kept`` attributes when given."""
    if version and (parent is None or attrs.get("gen_ai.operation.name") == "invoke_agent"):
        attrs.setdefault(SERVICE_VERSION, version)
    if evaluations:
        results = events.from_attributes(evaluations)
        if results:
            attrs[events.EVALUATIONS] = results
    return build_span(tid, sid, parent, name, start, end, code, message, attrs, owned=True, kept=kept)
