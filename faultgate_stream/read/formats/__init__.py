"""Readers for exports that are not OTLP: each module has ``detect(doc) -> bool`` and
``read(doc) -> list[SpanRecord]``. Order matters: the first reader that recognises a
document reads it.

Each ``detect`` checks the fields only its format has, so no two claim one document; the
order still puts the vendor exports, which are recognised by their first record, before
the framework dumps, which are recognised by every record.
"""
from __future__ import annotations

from types import ModuleType

from faultgate_stream.read.formats import (
    any_agent, braintrust, child_spans, crewai, langfuse, langgraph, langsmith, n8n, otel_js, otel_sdk, tau2,
)

READERS: dict[str, ModuleType] = {
    "tau2": tau2,
    "child-spans": child_spans,
    "langfuse": langfuse,
    "langsmith": langsmith,
    "braintrust": braintrust,
    "n8n": n8n,
    "langgraph": langgraph,
    "crewai": crewai,
    "any-agent": any_agent,
    "otel-sdk": otel_sdk,
    "otel-js": otel_js,
}
