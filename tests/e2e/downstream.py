"""A real downstream collector (otlp receiver -> file exporter) and readers of what it wrote."""
from __future__ import annotations

import json
from pathlib import Path

from tests.peers import free_port


def downstream_config(port: int, out: Path, auth_token: str = "", tls: tuple[str, str] | None = None) -> str:
    ext = ""
    auth = ""
    if auth_token:
        ext = f"extensions:\n  bearertokenauth:\n    token: \"{auth_token}\"\n"
        auth = "\n        auth: {authenticator: bearertokenauth}"
    if tls:
        auth += f"\n        tls: {{cert_file: \"{tls[0]}\", key_file: \"{tls[1]}\"}}"
    return f"""{ext}receivers:
  otlp:
    protocols:
      grpc:
        endpoint: "127.0.0.1:{port}"{auth}
exporters:
  # append: the file exporter empties its file on start, and outage tests restart it
  file/traces: {{path: "{out / 'traces.jsonl'}", flush_interval: 100ms, append: true}}
  file/logs: {{path: "{out / 'logs.jsonl'}", flush_interval: 100ms, append: true}}
service:
  {"extensions: [bearertokenauth]" if auth_token else ""}
  pipelines:
    traces: {{receivers: [otlp], exporters: [file/traces]}}
    logs: {{receivers: [otlp], exporters: [file/logs]}}
"""


def written_lines(path: Path) -> list[str]:
    """The lines the collector's file exporter has finished writing: tests poll the file while
    it writes, and a line not yet ended by its newline is half a JSON document."""
    if not path.exists():
        return []
    return [line for line in path.read_text().split("\n")[:-1] if line.strip()]


def read_spans(out: Path) -> list[dict]:
    spans = []
    for line in written_lines(out / "traces.jsonl"):
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans.extend(ss.get("spans", []))
    return spans


def read_logs(out: Path) -> list[dict]:
    return [record for _, record in read_logs_with_resource(out)]


def read_logs_with_resource(out: Path) -> list[tuple[dict, dict]]:
    """(resource attributes, log record) of every record the downstream collector wrote."""
    records = []
    for line in written_lines(out / "logs.jsonl"):
        for rl in json.loads(line).get("resourceLogs", []):
            resource = attrs(rl.get("resource", {}))
            for sl in rl.get("scopeLogs", []):
                records.extend((resource, r) for r in sl.get("logRecords", []))
    return records


def attrs(obj: dict) -> dict:
    out = {}
    for kv in obj.get("attributes", []):
        v = kv.get("value", {})
        if "arrayValue" in v:
            out[kv["key"]] = [x.get("stringValue") for x in v["arrayValue"].get("values", [])]
        else:
            out[kv["key"]] = next(iter(v.values()), None) if v else None
    return out


def agent_run_request(run: int, tools: int = 4):
    """One agent run as an OTLP request: a root and ``tools`` tool spans, unique ids."""
    import time

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    trace = (0xFA17 << 64 | run).to_bytes(16, "big")
    now = time.time_ns()
    root = spans.add(trace_id=trace, span_id=(run << 8 | 1).to_bytes(8, "big"), name="invoke_agent steady",
                     start_time_unix_nano=now, end_time_unix_nano=now + 1000)
    root.attributes.add(key="gen_ai.operation.name").value.string_value = "invoke_agent"
    root.attributes.add(key="gen_ai.agent.name").value.string_value = "steady"
    for i in range(tools):
        s = spans.add(trace_id=trace, span_id=(run << 8 | 2 + i).to_bytes(8, "big"), parent_span_id=root.span_id,
                      name="execute_tool lookup", start_time_unix_nano=now + i, end_time_unix_nano=now + i + 1)
        s.attributes.add(key="gen_ai.operation.name").value.string_value = "execute_tool"
        s.attributes.add(key="gen_ai.tool.name").value.string_value = "lookup"
        s.attributes.add(key="gen_ai.tool.call.arguments").value.string_value = f'{{"id": {i}}}'
    return req


def span_keys(req) -> set[tuple[str, str]]:
    return {(s.trace_id.hex(), s.span_id.hex()) for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans}
