"""One span's attributes, in whichever convention wrote them, -> ``SpanRecord``.

The conventions (OTel GenAI old and new shapes, OpenInference, OpenLLMetry) are compiled:
native/core/src/read/conventions.rs, with openinference.rs, openllmetry.rs and payload.rs. The
protobuf and OTLP/JSON readers build their records there straight from the bytes; this
module gives the same code to everyone else (the vendor format readers, the log events,
``faultgate_stream.testing``) as ``build_span``, and the names other modules read:

``build_span(trace_id, span_id, parent_id, name, start_ns, end_ns, status_code,
status_message, attrs, *, owned=False, kept=None) -> SpanRecord``: ``attrs`` holds plain
values (str, int, float, bool, list, dict); ``kept`` names the only attributes the record
keeps (read/projection.py), every one but content without it. ``owned`` is accepted and no
longer matters: the record's attributes are always a dict of its own.

- ``READ_NAMES`` / ``READ_PREFIXES``: every attribute a record is built from, by name and
  by prefix: a reader may leave any other out (read/projection.py).
- ``CONTENT_KEYS``: content the record carries parsed (the raw attribute is not kept
  beside it); ``TOOL_CONTENT_KEYS`` likewise for a tool span.
- ``USER_KEYS``: where a user id may be, in order; ``OI_KIND`` / ``TL_KIND``: the
  attributes that say a span is OpenInference's / OpenLLMetry's.
"""
from __future__ import annotations

from faultgate_stream._native import (  # noqa: F401  (the names other modules import)
    BUDGET_ANSWERS, CONTENT_KEYS, MODEL_OPERATIONS, OI_KIND, READ_NAMES, READ_PREFIXES, TL_KIND,
    TOOL_CONTENT_KEYS, USER_KEYS, build_span,
)
