"""Readers for exports that are not OTLP: each module has ``detect(doc) -> bool`` and
``read(doc) -> list[SpanRecord]``. Order matters: the first reader that recognises a
document reads it.

For a document no reader recognises, each module also says what its format looks like:
``SIGNATURE``, the field names it shares with its kind (the closest reader is the one whose
names the document shares most), and ``NEEDS``, what ``detect`` looks for as groups of
dotted field paths, any one path of a group enough (a list is looked into at its first
record), so the error can say which groups the document lacks.

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
