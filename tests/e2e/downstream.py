"""A real downstream collector (otlp receiver -> file exporter) and readers of what it wrote."""
from __future__ import annotations

import json
from pathlib import Path

from tests.peers import free_port


def downstream_config(port: int, out: Path, auth_token: str = "") -> str:
    ext = ""
    auth = ""
    if auth_token:
        ext = f"extensions:\n  bearertokenauth:\n    token: \"{auth_token}\"\n"
        auth = "\n        auth: {authenticator: bearertokenauth}"
    return f"""{ext}receivers:
  otlp:
    protocols:
      grpc:
        endpoint: "127.0.0.1:{port}"{auth}
exporters:
  file/traces: {{path: "{out / 'traces.jsonl'}", flush_interval: 100ms}}
  file/logs: {{path: "{out / 'logs.jsonl'}", flush_interval: 100ms}}
service:
  {"extensions: [bearertokenauth]" if auth_token else ""}
  pipelines:
    traces: {{receivers: [otlp], exporters: [file/traces]}}
    logs: {{receivers: [otlp], exporters: [file/logs]}}
"""


def read_spans(out: Path) -> list[dict]:
    path = out / "traces.jsonl"
    spans = []
    if not path.exists():
        return spans
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans.extend(ss.get("spans", []))
    return spans


def read_logs(out: Path) -> list[dict]:
    path = out / "logs.jsonl"
    records = []
    if not path.exists():
        return records
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        for rl in json.loads(line).get("resourceLogs", []):
            for sl in rl.get("scopeLogs", []):
                records.extend(sl.get("logRecords", []))
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


__all__ = ["downstream_config", "read_spans", "read_logs", "attrs", "free_port"]
