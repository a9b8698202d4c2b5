"""Planted personal data and secrets never leave the process: not in the spans and log
records exported downstream (content stripped, reasons masked), the verdict stream, the
verdict log, the metrics, nor the offline report."""
from __future__ import annotations

import dataclasses
import json
import threading
import urllib.request

import grpc
import structlog

from faultgate_stream.cli.main import main
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.export.log.sink import VerdictLog
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.stream import client as verdict_pb2_grpc
from faultgate_stream.export.stream.gen import verdict_pb2
from faultgate_stream.verdict.redact import get_redactor
from tests.e2e.downstream import downstream_config, read_logs, read_spans
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector

EMAIL = "jane.doe@example.com"
CARD = "4111 1111 1111 1111"
TOKEN = "sk-" + "proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
JWT = "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PLANTED = (EMAIL, CARD, TOKEN, JWT)


def _attr(k: str, v: str) -> dict:
    return {"key": k, "value": {"stringValue": v}}


def _planted_trace(tmp_path):
    """Two runs whose check reasons quote the planted values (an error result, a repeated
    call's arguments, an abstaining answer)."""
    spans = []
    t1, t2 = "a" * 31 + "1", "a" * 31 + "2"
    spans.append({"traceId": t1, "spanId": "1" * 16, "name": "invoke_agent", "startTimeUnixNano": "1000",
                  "endTimeUnixNano": "9000", "attributes": [
                      _attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "billing"),
                      _attr("gen_ai.input.messages", json.dumps([{"role": "user", "content": f"card {CARD}"}])),
                      _attr("gen_ai.output.messages", json.dumps(
                          [{"role": "assistant", "content": f"I could not find {EMAIL} with {TOKEN}"}]))]})
    spans.append({"traceId": t1, "spanId": "2" * 16, "parentSpanId": "1" * 16, "name": "execute_tool charge",
                  "startTimeUnixNano": "2000", "attributes": [
                      _attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "charge"),
                      _attr("gen_ai.tool.call.arguments", json.dumps({"card": CARD, "email": EMAIL})),
                      _attr("gen_ai.tool.call.result", json.dumps({"error": f"declined {CARD} for {EMAIL} {JWT}"}))]})
    spans.append({"traceId": t2, "spanId": "3" * 16, "name": "invoke_agent", "startTimeUnixNano": "1000",
                  "endTimeUnixNano": "9000", "attributes": [
                      _attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "auth")]})
    for i in range(3):
        spans.append({"traceId": t2, "spanId": f"{4 + i:016x}", "parentSpanId": "3" * 16,
                      "name": "execute_tool login", "startTimeUnixNano": str(2000 + i), "attributes": [
                          _attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "login"),
                          _attr("gen_ai.tool.call.arguments", json.dumps({"token": TOKEN})),
                          _attr("gen_ai.tool.call.result", f"Bearer {JWT} rejected")]})
    f = tmp_path / "planted.json"
    f.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return f


def _clean(text: str, where: str) -> None:
    for secret in PLANTED:
        assert secret not in text, f"{secret[:12]}... leaked into {where}"


def test_planted_pii_and_secrets_appear_in_nothing_exported_logged_or_streamed(live_service, tmp_path, capsys):
    planted = _planted_trace(tmp_path)
    report = tmp_path / "report.json"
    page = tmp_path / "report.html"
    assert main(["check", str(planted), "--json", str(report), "--html", str(page)]) == 1
    text = report.read_text()
    _clean(text, "the offline report")
    _clean(page.read_text(), "the HTML report")
    assert "<EMAIL>" in text and "<CREDIT_CARD>" in text and "<SECRET>" in text  # the reasons did quote them
    lines: list[str] = []
    log = VerdictLog(structlog.wrap_logger(structlog.PrintLogger(file=None),
                                           processors=[lambda _, __, ev: lines.append(json.dumps(ev)) or ev,
                                                       structlog.processors.JSONRenderer()]),
                     get_redactor("builtin"))
    port, out = free_port(), tmp_path / "out"
    out.mkdir()
    with running_collector(downstream_config(port, out), tmp_path):
        cfg = dataclasses.replace(make_config(), export=SpansExportConfig(
            endpoint=f"127.0.0.1:{port}", logs_endpoint=f"127.0.0.1:{port}", strip_content=True,
            retry_initial_interval=0.2, retry_max_interval=1.0))
        live = live_service(cfg)
        received: list[bytes] = []
        channel = grpc.insecure_channel(live.grpc)
        stream = verdict_pb2_grpc.VerdictServiceStub(channel).Subscribe(verdict_pb2.SubscribeRequest())

        def read() -> None:
            try:
                for m in stream:
                    received.append(m.SerializeToString())
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.CANCELLED  # our own cancel at the end

        reader = threading.Thread(target=read)
        reader.start()
        eventually(lambda: live.service.stream.subscribers() == 1, what="the subscription")
        sender = GrpcSender(live.grpc)
        replay([str(planted)], sender)
        sender.close()
        verdicts = live.sink.wait_for(2)
        for v in verdicts:
            log.verdict(v)
        eventually(lambda: len(received) == 2, what="both verdicts streamed")
        eventually(lambda: len(read_spans(out)) == 6 and len(read_logs(out)) >= 12, timeout=30,
                   what="spans and log records downstream")
        metrics = live.metrics()
        with urllib.request.urlopen(f"http://127.0.0.1:{live.service.ports['metrics']}/api/v1/verdicts",
                                    timeout=10) as r:
            api = r.read().decode()
        stream.cancel()
        reader.join(timeout=10)
        channel.close()
    assert all(not v.clean for v in verdicts)
    _clean((out / "traces.jsonl").read_text(), "the exported spans")
    _clean((out / "logs.jsonl").read_text(), "the exported log records")
    _clean(b"".join(received).decode("utf-8", "replace"), "the verdict stream")
    _clean("\n".join(lines), "the verdict log")
    _clean(metrics, "the metrics")
    _clean(api, "the verdict API")
    assert "<EMAIL>" in api or "<CREDIT_CARD>" in api or "<SECRET>" in api
    _clean(capsys.readouterr().out, "stdout")
    exported = (out / "traces.jsonl").read_text() + (out / "logs.jsonl").read_text()
    assert "<EMAIL>" in exported or "<CREDIT_CARD>" in exported  # masked reasons did go out
