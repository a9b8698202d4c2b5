"""Spans and log records captured in memory by the OTel SDK, written as OTLP/JSON.

The SDK's own OTLP encoder builds the export requests; ``MessageToDict`` writes them in
the protobuf JSON mapping, and ids become hex as the OTLP/JSON spec requires (the mapping
alone writes bytes as base64). This is the file shape the collector and ``check`` read.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry import _logs, trace
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ID_KEYS = ("traceId", "spanId", "parentSpanId")


class Capture:
    def __init__(self, service: str) -> None:
        resource = Resource.create({"service.name": service})
        self.spans = InMemorySpanExporter()
        self.logs = InMemoryLogRecordExporter()
        self.tracer_provider = TracerProvider(resource=resource)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.logger_provider = LoggerProvider(resource=resource)
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        trace.set_tracer_provider(self.tracer_provider)
        _logs.set_logger_provider(self.logger_provider)

    def write(self, out_dir: Path) -> dict[str, int]:
        self.tracer_provider.force_flush()
        self.logger_provider.force_flush()
        spans = sorted(self.spans.get_finished_spans(), key=lambda s: (s.context.trace_id, s.start_time))
        logs = list(self.logs.get_finished_logs())
        out_dir.mkdir(parents=True, exist_ok=True)
        doc: dict[str, Any] = _hex_ids(MessageToDict(encode_spans(spans)))
        (out_dir / "traces.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        written = {"spans": len(spans), "logs": len(logs)}
        if logs:
            (out_dir / "logs.json").write_text(
                json.dumps(_hex_ids(MessageToDict(encode_logs(logs))), indent=1, sort_keys=True) + "\n")
        return written


def _hex_ids(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: (base64.b64decode(x).hex() if k in ID_KEYS and isinstance(x, str) else _hex_ids(x))
                for k, x in v.items()}
    if isinstance(v, list):
        return [_hex_ids(x) for x in v]
    return v
