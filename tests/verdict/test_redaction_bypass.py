"""Redaction cannot be stepped around: a reason that quotes a value cut short is masked
with the value whole, then cut; agent names are masked wherever they leave (the log, the
verdict stream, the report, metric labels); cards written with dots, non-ASCII emails,
PEM private keys and AWS secret keys are masked."""
from __future__ import annotations

import json

import pytest
from structlog.testing import capture_logs

from faultgate_stream.checks.registry import select
from faultgate_stream.export.log.sink import VerdictLog
from faultgate_stream.export.metrics.sink import MetricsSink
from faultgate_stream.export.stream.encode import encode
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.pipeline import check_spans
from faultgate_stream.testing import simple_run
from faultgate_stream.verdict.redact import builtin
from faultgate_stream.verdict.report import Report
import structlog

JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
SK = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
CARD = "4111 1111 1111 1111"
EMAIL = "jane.longname.doe@example-corp.com"


def _fired(check: str, verdicts) -> str:
    return next(r.reason for v in verdicts for r in v.results if r.check == check and r.fired)


@pytest.mark.parametrize("secret, pieces", [
    (JWT, ["eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"]),
    (SK, ["sk-proj-A1b2C3d4"]),
    (EMAIL, ["jane.longname", "longname.doe"]),
    (CARD, ["4111 1111"]),
])
def test_a_secret_that_straddles_the_cut_of_a_quoted_argument_is_masked_whole(secret, pieces):
    # the argument text ({"q":"x...x secret"}) puts the secret across character 60, where
    # the reason cuts it, at every offset: where the cut falls decides which pattern a half
    # secret escapes
    for lead in range(max(0, 54 - len(secret)), 53):
        args = {"q": "x" * lead + " " + secret}
        verdicts = check_spans([simple_run([("search", args, "same")] * 3)], select())
        raw = _fired("repeated_call", verdicts)
        assert "x" * lead + " " + secret not in raw  # the reason does cut the argument
        masked = builtin()(raw)
        assert not any(p in masked for p in pieces), (lead, masked)
        assert "<" in masked, (lead, masked)  # the part that was shown is a tag now


def test_a_tool_error_quoted_in_a_reason_is_masked_before_it_is_cut():
    error = json.dumps({"error": "y" * 70 + " contact " + EMAIL})
    verdicts = check_spans([simple_run([("lookup", {"id": 1}, error)])], select())
    masked = builtin()(_fired("unrecovered_tool_error", verdicts))
    assert "jane.longname" not in masked and "<EMAIL>" in masked


def test_reasons_without_a_secret_read_as_before():
    verdicts = check_spans([simple_run([("search", {"q": "z" * 100}, "same")] * 3)], select())
    raw = _fired("repeated_call", verdicts)
    assert builtin()(raw) == raw and "z" * 40 in raw and "z" * 100 not in raw


def test_an_agent_name_is_masked_in_the_log_the_stream_the_report_and_the_metric_labels():
    name = f"support for {EMAIL}"
    verdicts = check_spans([simple_run([("search", {"q": "a"}, "[]")], name=name)], select())
    v = verdicts[0]
    with capture_logs() as logs:
        VerdictLog(structlog.get_logger("t"), builtin()).verdict(v)
    assert logs[0]["agent"] == "support for <EMAIL>"
    assert encode(v, builtin()).agent == "support for <EMAIL>"
    report = Report([c.name for c in select()], verdicts).to_dict(builtin())
    assert {r["agent"] for r in report["runs"]} == {"support for <EMAIL>"}
    telemetry = Telemetry()
    MetricsSink(telemetry, 10, redact=builtin()).verdict(v)
    assert telemetry.registry.get_sample_value("faultgate_runs_total", {
        "agent": "support for <EMAIL>", "verdict": "clean" if v.clean else "failed",
        "completion": v.completion.value}) == 1


def test_a_long_agent_name_is_cut_to_the_label_length_and_counted():
    telemetry = Telemetry()
    sink = MetricsSink(telemetry, 10, max_label_length=64)
    for name in ("a" * 1024 * 1024, "a" * 1024 * 1024 + "b"):
        verdicts = check_spans([simple_run([("search", {"q": "a"}, "[]")], name=name)], select())
        sink.verdict(verdicts[0])
    agents = {s.labels["agent"] for m in telemetry.registry.collect() if m.name == "faultgate_runs"
              for s in m.samples}
    assert len(agents) == 2 and all(len(a) == 64 for a in agents)
    assert telemetry.registry.get_sample_value("faultgate_label_values_shortened_total", {"label": "agent"}) == 2


@pytest.mark.parametrize("text, tag, leaked", [
    ("card 4111.1111.1111.1111 on file", "<CREDIT_CARD>", "4111.1111"),
    ("mail josé.müller@exämple.de now", "<EMAIL>", "müller"),
    ("mail 用户@例子.广告 now", "<EMAIL>", "用户"),
    ("key -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7Vt2q\n-----END RSA PRIVATE KEY----- end",
     "<SECRET>", "MIIEowIBAAKCAQEA"),
    ('{"key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC', "<SECRET>", "MIIEvQIBADAN"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "<SECRET>", "wJalrXUtnFEMI"),
    ('{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}', "<SECRET>", "bPxRfiCY"),
    ("then wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY alone", "<SECRET>", "K7MDENG"),
])
def test_the_new_shapes_are_masked(text, tag, leaked):
    masked = builtin()(text)
    assert tag in masked and leaked not in masked, masked


@pytest.mark.parametrize("text", [
    "version 1.2.3.4 and 10.0.0.1", "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "order 1234.5678 shipped", "see docs/index.html for more",
])
def test_lookalikes_are_left_alone(text):
    assert builtin()(text).count("<SECRET>") == 0 and "<CREDIT_CARD>" not in builtin()(text)
