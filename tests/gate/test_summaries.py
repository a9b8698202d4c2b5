"""``check --markdown`` and ``--audit``: the PR summary and audit files carry the verdict
and the gate's numbers, hash every input, and copy no prompt, answer or payload; reasons
are masked."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

from faultgate_stream.cli.main import main


def test_summary_and_audit_of_a_failing_candidate(corpus, tmp_path, capsys):
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    band = tmp_path / "band.json"
    assert main(["baseline", str(g / "baseline_glm_run1.json"), str(g / "baseline_glm_run2.json"), "--out", str(band)]) == 0
    md, audit = tmp_path / "pr" / "summary.md", tmp_path / "audit"
    code = main(["check", str(g / "candidate_gpt.json"), "--band", str(band), "--markdown", str(md), "--audit", str(audit)])
    capsys.readouterr()
    assert code == 1
    text = md.read_text()
    assert text.startswith("<!-- faultgate -->\n## faultgate-stream: FAIL")
    assert "| **FAIL** | 0.40 | [0.93, 0.93] | 0.90 | 0.83 | 0.000 | 2 |" in text
    assert "| latency_ms | 16483.3 | 21900.0 | +32.9% |" in text
    assert "search_loop | no answer, 24 steps (cap)" in text
    verdict = json.loads((audit / "verdict.json").read_text())
    assert verdict["verdict"] == "FAIL" and verdict["exit_code"] == 1
    assert verdict["gate"]["clean_rate"] == 0.4
    hashes = {i["role"]: i["sha256"] for i in verdict["inputs"]}
    assert hashes["traces"] == hashlib.sha256((g / "candidate_gpt.json").read_bytes()).hexdigest()
    assert hashes["band"] == hashlib.sha256(band.read_bytes()).hexdigest()
    failing = json.loads((audit / "failing_traces.json").read_text())
    assert len(failing) == 18 and all(f["fired"] for f in failing)
    # no payloads: not one prompt or answer of the candidate appears in any file written
    doc = json.loads((g / "candidate_gpt.json").read_text())
    texts = [a["value"]["stringValue"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
             for a in s["attributes"] if a["key"] in ("gen_ai.input.messages", "gen_ai.output.messages",
                                                      "gen_ai.tool.call.result")]
    assert texts
    written = text + "".join(p.read_text() for p in audit.iterdir())
    assert not any(t in written for t in texts)
    # repro.sh re-runs the same check: same verdict, same exit code
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    rerun = subprocess.run(["sh", str(audit / "repro.sh")], capture_output=True, text=True, env=env, timeout=120)
    assert rerun.returncode == 1
    assert "gate: FAIL · clean rate 0.40" in rerun.stdout


def test_reasons_in_the_audit_are_masked(tmp_path, capsys):
    """An identity mismatch between two emails: the reason names both, masked."""
    trace = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "a" * 32, "spanId": "1" * 16, "name": "invoke_agent", "startTimeUnixNano": "1",
         "endTimeUnixNano": "9", "attributes": [
             {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
             {"key": "enduser.id", "value": {"stringValue": "sam.roe@example.com"}},
             {"key": "gen_ai.output.messages", "value": {"stringValue": "done"}}]},
        {"traceId": "a" * 32, "spanId": "2" * 16, "parentSpanId": "1" * 16, "name": "execute_tool read_file",
         "startTimeUnixNano": "2", "endTimeUnixNano": "3", "attributes": [
             {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
             {"key": "gen_ai.tool.name", "value": {"stringValue": "read_file"}},
             {"key": "gen_ai.tool.call.arguments",
              "value": {"stringValue": "{\"customer_id\": \"jane.doe@example.com\"}"}}]}]}]}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    audit = tmp_path / "audit"
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"identity": {"arg": "customer_id", "session_attr": "enduser.id"}}))
    code = main(["check", str(path), "--policy", str(policy), "--audit", str(audit), "--markdown", str(tmp_path / "s.md")])
    capsys.readouterr()
    assert code == 1
    failing = (audit / "failing_traces.json").read_text()
    assert "policy" in failing
    assert "<EMAIL>" in failing  # the reason quotes the argument, masked
    assert "jane.doe@example.com" not in failing + (tmp_path / "s.md").read_text()
    assert json.loads((audit / "verdict.json").read_text())["gate"] is None


def test_a_bad_band_or_an_unwritable_output_exits_2(corpus, tmp_path, capsys):
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    bad = tmp_path / "band.json"
    bad.write_text('{"n": 30}')
    assert main(["check", str(g / "candidate_gpt.json"), "--band", str(bad)]) == 2
    assert "clean_rate" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["check", str(g / "candidate_gpt.json"), "--band", str(g / "band.json"),
                 "--markdown", str(blocker / "pr.md")]) == 2
    assert main(["baseline", str(g / "baseline_glm_run1.json"), "--out", str(tmp_path / "b.json")]) == 2
    assert "at least 2 baseline runs" in capsys.readouterr().err
