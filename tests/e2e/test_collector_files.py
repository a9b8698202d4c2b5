"""The files the collector's own file exporter writes are read offline as they are: JSON
Lines (``format: json``, one export request per line), gzip'd, and length-prefixed
protobuf (``format: proto``), for traces and for logs carrying GenAI content. The agent
runs are made by the OpenTelemetry SDK and sent to a real collector over OTLP/gRPC."""
from __future__ import annotations

import gzip
import json
import shutil

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from faultgate_stream.cli.main import main
from tests.genai_sdk import event_only_run
from tests.peers import eventually, free_port, running_collector

RUNS = {"clean": (1, "21 degrees"), "looping": (3, "21 degrees"), "abstaining": (1, "I could not find the weather.")}


def _config(grpc: int, out) -> str:
    files = {"tj": "traces.jsonl", "tp": "traces.pb", "tz": "traces.jsonl.zst", "lj": "logs.jsonl", "lp": "logs.pb"}
    ex = {
        "tj": "format: json", "tp": "format: proto", "tz": "format: json\n    compression: zstd",
        "lj": "format: json", "lp": "format: proto",
    }
    exporters = "\n".join(f"  file/{k}:\n    path: {out / files[k]}\n    {ex[k]}\n    flush_interval: 100ms"
                          for k in files)
    return f"""
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{grpc}
exporters:
{exporters}
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file/tj, file/tp, file/tz]
    logs:
      receivers: [otlp]
      exporters: [file/lj, file/lp]
"""


@pytest.fixture(scope="module")
def collector_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("collector-files")
    out = tmp / "out"
    out.mkdir()
    grpc = free_port()
    with running_collector(_config(grpc, out), tmp):
        resource = Resource.create({"service.name": "weather-agent"})
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc}",
                                                                               insecure=True)))
        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(
            endpoint=f"127.0.0.1:{grpc}", insecure=True)))
        tracer, logger = tracer_provider.get_tracer("t"), logger_provider.get_logger("t")
        records = sum(event_only_run(tracer, logger, agent, n, answer) for agent, (n, answer) in RUNS.items())
        assert tracer_provider.force_flush(10_000) and logger_provider.force_flush(10_000)
        tracer_provider.shutdown()
        logger_provider.shutdown()

        def written():
            text = (out / "traces.jsonl").read_text() if (out / "traces.jsonl").exists() else ""
            logs = (out / "logs.jsonl").read_text() if (out / "logs.jsonl").exists() else ""
            spans = text.count('"spanId"')
            return spans >= 16 and logs.count('"eventName"') >= records and (out / "logs.pb").exists() \
                and (out / "traces.pb").stat().st_size > 0 or None

        eventually(written, timeout=30)
    return out


def _check(paths, tmp_path):
    report = tmp_path / "report.json"
    code = main(["check", *map(str, paths), "--json", str(report)])
    return code, json.loads(report.read_text())


def _verdicts(report):
    return sorted((r["agent"], r["verdict"], tuple(r["fired"])) for r in report["runs"])


EXPECTED = [("abstaining", "failed", ("abstention",)), ("clean", "clean", ()), ("looping", "failed", ("repeated_call",))]


@pytest.mark.parametrize("files", [("traces.jsonl", "logs.jsonl"), ("traces.pb", "logs.pb"),
                                   ("traces.jsonl", "logs.pb"), ("traces.jsonl.gz", "logs.jsonl.gz")])
def test_the_collector_file_exporter_output_is_read_as_it_is(collector_files, tmp_path, files, capsys):
    for name in ("traces.jsonl", "logs.jsonl"):
        with open(collector_files / name, "rb") as src, gzip.open(tmp_path / f"{name}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
    paths = [tmp_path / f if f.endswith(".gz") else collector_files / f for f in files]
    code, report = _check(paths, tmp_path)
    assert code == 1
    assert _verdicts(report) == EXPECTED
    # the file exporter writes one request per line: several lines, not one document
    assert len((collector_files / "traces.jsonl").read_text().splitlines()) >= 1


def test_without_the_log_file_the_same_runs_are_undecided(collector_files, tmp_path, capsys):
    code, report = _check([collector_files / "traces.pb"], tmp_path)
    assert code == 0
    assert {r["verdict"] for r in report["runs"]} == {"undecided"}


def test_a_zstd_file_is_refused_with_what_to_run(collector_files, capsys):
    assert main(["check", str(collector_files / "traces.jsonl.zst")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "zstd" in line and "zstd -d" in line
