"""Readers for exports that are not OTLP: each module has ``detect(doc) -> bool`` and
``read(doc) -> list[SpanRecord]``. Order matters: the first reader that recognises a
document reads it.

Each ``detect`` checks the fields only its format has, so no two claim one document; the
order still puts the vendor exports, which are recognised by their first record, before
the framework dumps, which are recognised by every record.
"""
from __future__ import annotations

from types import ModuleType

from faultgate_stream.read.formats import braintrust, crewai, langfuse, langgraph, langsmith, n8n, otel_sdk

READERS: dict[str, ModuleType] = {
    "langfuse": langfuse,
    "langsmith": langsmith,
    "braintrust": braintrust,
    "n8n": n8n,
    "langgraph": langgraph,
    "crewai": crewai,
    "otel-sdk": otel_sdk,
}
