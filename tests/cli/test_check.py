"""The offline command line: faultgate's exit codes, table and report, and one-line errors."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from faultgate_stream.cli.main import main
from tests.conftest import CORPUS

TRACES = CORPUS / "faultgate-0.4.1" / "examples" / "traces.json"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a subprocess, so a traceback would show on stderr."""
    return subprocess.run([sys.executable, "-m", "faultgate_stream.cli.main", *args],
                          capture_output=True, text=True, timeout=120)


BAD_INPUTS = {
    "empty": b"",
    "truncated_json": b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab',
    "json_not_a_trace": b'{"hello": "world"}',
    "binary_garbage": bytes(range(256)) * 8,
    "malformed_span_id": json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "not-hex!", "name": "x",
         "startTimeUnixNano": "1"}]}]}]}).encode(),
    "a_list_of_numbers": b"[1, 2, 3]",
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path, name):
    f = tmp_path / f"{name}.json"
    f.write_bytes(BAD_INPUTS[name])
    p = _cli("check", str(f))
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr
    assert lines[0].startswith("faultgate-stream: ") and str(f.name) in lines[0]


def test_a_malformed_span_id_names_the_field_and_where_it_is(tmp_path):
    f = tmp_path / "bad.json"
    f.write_bytes(BAD_INPUTS["malformed_span_id"])
    p = _cli("check", str(f))
    assert "resourceSpans[0].scopeSpans[0].spans[0].spanId" in p.stderr


def test_a_missing_file_and_a_bad_golden_file_are_input_errors(tmp_path):
    assert _cli("check", str(tmp_path / "nope.json")).returncode == 2
    g = tmp_path / "golden.json"
    g.write_text('{"q": 3}')
    p = _cli("check", str(TRACES), "--golden", str(g))
    assert p.returncode == 2 and "golden" in p.stderr and "must be str" in p.stderr


def test_an_unknown_check_name_is_refused_with_the_available_names():
    p = _cli("check", str(TRACES), "--check", "search_loop,nonsense")
    assert p.returncode == 2 and "nonsense" in p.stderr and "abstention" in p.stderr


def test_a_clean_file_exits_0_and_a_fired_check_exits_1(capsys):
    assert main(["check", str(CORPUS / "faultgate-0.4.1/examples/formats/openinference.json")]) == 0
    assert main(["check", str(TRACES)]) == 1
    out = capsys.readouterr().out
    assert "2/5 traces failed · search_loop=1, abstention=1, policy=0" in out


def test_the_json_report_keeps_faultgates_fields_and_adds_run_completion_and_steps(tmp_path, capsys):
    out = tmp_path / "r.json"
    main(["check", str(TRACES), "--json", str(out)])
    r = json.loads(out.read_text())
    assert {"traces", "failed_traces", "fired", "results", "checks", "measures"} <= set(r)
    row = r["results"][0]
    assert {"trace_id", "scenario", "check", "detected", "confidence", "reason"} <= set(row)
    assert row["completion"] == "complete" and row["steps"] == 12 and row["run_id"].startswith(row["trace_id"] + "/")
    assert r["runs"][0]["clean"] is False


def test_reasons_written_out_are_redacted_unless_redaction_is_off(tmp_path, capsys):
    def attr(k, v):
        return {"key": k, "value": {"stringValue": v}}
    tid = "0af7651916cd43dd8448eb211c80319c"
    t = tmp_path / "t.json"
    t.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": tid, "spanId": "00f067aa0ba902b7", "name": "invoke_agent", "startTimeUnixNano": "1",
         "endTimeUnixNano": "9", "attributes": [attr("gen_ai.operation.name", "invoke_agent")]},
        {"traceId": tid, "spanId": "00f067aa0ba902b8", "parentSpanId": "00f067aa0ba902b7", "name": "execute_tool",
         "startTimeUnixNano": "2", "attributes": [
            attr("gen_ai.tool.name", "find_user"),
            attr("gen_ai.tool.call.result", '{"error": "no account for bob@example.com"}')]}]}]}]}))
    out = tmp_path / "r.json"
    assert main(["check", str(t), "--json", str(out)]) == 1
    text = out.read_text()
    assert "bob@example.com" not in text and "no account for <EMAIL>" in text
    assert main(["check", str(t), "--json", str(out), "--redact", "off"]) == 1
    assert "no account for bob@example.com" in out.read_text()


def test_checks_lists_every_check_with_its_kind():
    p = _cli("checks")
    assert p.returncode == 0
    names = [line.split()[0] for line in p.stdout.splitlines()]
    assert names == ["search_loop", "abstention", "policy", "repeated_call", "unrecovered_tool_error",
                     "context_overflow", "wrong_answer", "truncation", "outcome", "loop",
                     "trajectory.tools", "trajectory.required", "trajectory.forbidden", "trajectory.before",
                     "trajectory.max_steps", "trajectory.no_repeat", "trajectory.ground", "trajectory.taint",
                     "trajectory.secrets"]
    kinds = {line.split()[0]: line.split()[1] for line in p.stdout.splitlines()}
    assert kinds["trajectory.ground"] == "spec" and kinds["wrong_answer"] == "golden"


def test_precheck_reports_duplicate_ids_and_missing_start_times_as_errors(tmp_path):
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "00f067aa0ba902b7", "name": "x"}
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span, span]}]}]}))
    p = _cli("precheck", str(f))
    assert p.returncode == 2
    assert "duplicate span id 00f067aa0ba902b7" in p.stdout and "missing start time" in p.stdout


def test_precheck_passes_the_bundled_examples(capsys):
    assert main(["precheck", str(TRACES)]) == 0
    assert "precheck: OK · format otlp · checked 5 of 5 traces · 31 tool steps read" in capsys.readouterr().out


def test_precheck_names_what_it_does_not_read_in_a_file_of_an_unknown_convention(tmp_path, capsys):
    from tests.conformance.score import CORPUS as CONFORMANCE
    from tests.conformance.test_unknown_convention import moved, namespaced

    doc = moved(json.loads((CONFORMANCE / "langgraph-openinference" / "traces.json").read_text()), namespaced)
    f = tmp_path / "unknown.json"
    f.write_text(json.dumps(doc))
    assert main(["precheck", str(f), "--sample", "3"]) == 0  # warnings: the file is usable, its verdicts undecided
    out = capsys.readouterr().out
    assert re.search(r"not read as (a tool call|tool calls): checks that read the run's steps will be undecided",
                     out), out
    assert re.search(r"not read as (a model call|model calls): checks that read the run's finish reasons will be "
                     r"undecided", out), out
    assert "precheck: OK" in out and "spans of agent work not read" in out


def test_outcomes_add_the_outcome_check_and_its_summary(tmp_path, capsys):
    f = tmp_path / "outcomes.json"
    f.write_text(json.dumps({"What is the internal codename of Girona Foundry?": True}))
    code = main(["check", str(TRACES), "--outcomes", str(f)])
    out = capsys.readouterr().out
    assert code == 1 and "outcome: 1/1 true (1.00) · 4 scenario(s) without an outcome" in out


LUCKRATE = CORPUS / "luckrate-0.3.0" / "tests" / "fixtures"


def _spec_file() -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parents[2] / "examples" / "specs" / "refund.yaml")


@pytest.mark.parametrize("fixture, code", [("n8n_good", 0), ("n8n_skips", 1), ("n8n_loops", 1),
                                           ("n8n_fabricates", 0)])
def test_with_a_spec_hard_and_majority_soft_findings_fail_and_warnings_do_not(fixture, code, capsys):
    assert main(["check", str(LUCKRATE / f"{fixture}.json"), "--spec", _spec_file(), "--check", "policy"]) == code


def test_a_warning_still_marks_the_run_not_clean_in_the_report(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["check", str(LUCKRATE / "n8n_fabricates.json"), "--spec", _spec_file(), "--check", "policy",
                 "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    ground = next(x for x in r["results"] if x["check"] == "trajectory.ground")
    assert ground["detected"] and ground["severity"] == "warn"
    assert r["runs"][0]["clean"] is False


def test_a_malformed_policy_or_spec_exits_2_naming_the_key(tmp_path):
    bad_policy = tmp_path / "p.json"
    bad_policy.write_text('{"limits": [{"tool": "a", "arg": "b", "max": "lots"}], "alow": []}')
    p = _cli("check", str(TRACES), "--policy", str(bad_policy))
    assert p.returncode == 2 and "limits[0].max must be a finite number" in p.stderr and "alow" in p.stderr
    bad_spec = tmp_path / "s.yaml"
    bad_spec.write_text("tools: [lookup]\nrequired: [lookpu]\n")
    p = _cli("check", str(TRACES), "--spec", str(bad_spec))
    assert p.returncode == 2 and "required[0]: 'lookpu' is not in tools" in p.stderr and "Traceback" not in p.stderr


def test_luck_rate_is_the_share_of_passing_runs_whose_path_was_not_clean(tmp_path, capsys):
    outcomes = tmp_path / "o.json"
    outcomes.write_text(json.dumps({"What is the internal codename of Girona Foundry?": True,
                                    "Which firm is the external auditor of Aster Labs?": True}))
    out = tmp_path / "r.json"
    main(["check", str(TRACES), "--outcomes", str(outcomes), "--json", str(out)])
    o = json.loads(out.read_text())["outcome"]
    assert (o["passed"], o["lucky"], o["luck_rate"]) == (2, 1, 0.5)
    assert "luck rate 50% · 1 of 2 passing runs" in capsys.readouterr().out
    outcomes.write_text(json.dumps({"Which firm is the external auditor of Aster Labs?": False}))
    main(["check", str(TRACES), "--outcomes", str(outcomes), "--json", str(out)])
    assert json.loads(out.read_text())["outcome"]["luck_rate"] is None  # undefined, not 0


def test_an_incoming_evaluation_event_named_outcome_gives_the_run_its_outcome(tmp_path, capsys):
    def attr(k, v):
        return {"key": k, "value": {"stringValue": v}}

    tid = "0af7651916cd43dd8448eb211c80319c"
    t = tmp_path / "t.json"
    t.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": tid, "spanId": "00f067aa0ba902b7", "name": "invoke_agent", "startTimeUnixNano": "1",
         "endTimeUnixNano": "9", "attributes": [attr("gen_ai.operation.name", "invoke_agent")],
         "events": [{"name": "gen_ai.evaluation.result", "timeUnixNano": "9", "attributes": [
             attr("gen_ai.evaluation.name", "outcome"), attr("gen_ai.evaluation.score.label", "fail")]}]}]}]}]}))
    out = tmp_path / "r.json"
    assert main(["check", str(t), "--check", "outcome", "--json", str(out)]) == 1
    row = json.loads(out.read_text())["results"][0]
    assert row["detected"] and "gen_ai.evaluation.result" in row["reason"]
