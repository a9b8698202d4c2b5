"""The judge contract against a scripted OpenAI-compatible server on 127.0.0.1."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from faultgate_stream.judge.ask import judge_run
from faultgate_stream.judge.contract import WRONG_DIRECTION, JudgeError
from faultgate_stream.judge.openai import get_judge, parse_answer
from faultgate_stream.judge.render import render
from faultgate_stream.pipeline import assemble_runs
from faultgate_stream.testing import simple_run
from tests.judge.scripted_model import ScriptedModel


def _run(n_steps: int = 3, answer: str = "Lyon."):
    spans = simple_run([("search", {"q": f"hop {i}"}, f"result {i} " + "x" * 50) for i in range(n_steps)],
                       prompt="Which city hosts the HQ of the firm that owns Acme?", answer=answer)
    (run,) = assemble_runs(spans)
    return run


def test_a_judge_answer_becomes_a_judge_result_and_the_request_is_what_the_contract_says(monkeypatch):
    monkeypatch.setenv("FAULTGATE_JUDGE_API_KEY", "sk-test-123")
    with ScriptedModel(['{"detected": true, "confidence": 0.8, "reason": "started from the end"}']) as m:
        judge = get_judge(m.spec())
        (r,) = judge_run(_run(), judge, [WRONG_DIRECTION])
        judge.close()
    assert (r.check, r.fired, r.confidence, r.kind) == ("wrong_direction", True, 0.8, "judge")
    assert r.reason == "openai:judge-model: started from the end"
    (req,) = m.requests
    assert req["path"] == "/v1/chat/completions" and req["model"] == "judge-model" and req["temperature"] == 0
    assert WRONG_DIRECTION.text in req["messages"][0]["content"]
    assert req["messages"][1]["content"].startswith("Agent: agent\nPrompt: Which city")
    assert m.headers[0]["Authorization"] == "Bearer sk-test-123"


def test_a_remote_judge_reads_the_masked_run():
    with ScriptedModel(['{"detected": false, "confidence": 0.9, "reason": "ok"}']) as m:
        judge = get_judge(m.spec())
        judge_run(_run(answer="Mail me at jane.doe@example.com"), judge, [WRONG_DIRECTION],
                  mask=lambda s: s.replace("jane.doe@example.com", "<EMAIL>"))
        judge.close()
    sent = m.requests[0]["messages"][1]["content"]
    assert "<EMAIL>" in sent and "jane.doe" not in sent


@pytest.mark.parametrize("reply", ["I think yes", '{"detected": "yes"}', '{"detected": true, "confidence": 7}', 500])
def test_no_usable_answer_is_undecided_not_a_pass(reply):
    with ScriptedModel([reply]) as m:
        judge = get_judge(m.spec())
        (r,) = judge_run(_run(), judge, [WRONG_DIRECTION])
        judge.close()
    assert r.undecided and not r.fired and r.reason.startswith("undecided: judge gave no answer: ")


def test_a_judge_that_does_not_answer_in_time_is_undecided():
    with ScriptedModel([('{"detected": true}', 30.0)]) as m:
        judge = get_judge(m.spec(), timeout=0.5)
        (r,) = judge_run(_run(), judge, [WRONG_DIRECTION])
        judge.close()
    assert r.undecided and "no answer from" in r.reason and "ReadTimeoutError" in r.reason


def test_a_fenced_json_answer_is_read():
    a = parse_answer("j", '```json\n{"detected": false, "confidence": 0.25, "reason": "fine"}\n```')
    assert (a.detected, a.confidence, a.reason) == (False, 0.25, "fine")
    with pytest.raises(JudgeError):
        parse_answer("j", "```\nnot json\n```")


@pytest.mark.parametrize("spec", ["openai:", "openai:127.0.0.1/v1/m", "openai:http://h/m", "laya"])
def test_a_bad_judge_spec_is_refused_with_the_expected_shape(spec):
    with pytest.raises(ValueError, match="openai:http"):
        get_judge(spec)


def test_render_keeps_the_head_and_the_tail_within_the_budget():
    run = _run(n_steps=40)
    text = render(run, budget=1400)
    assert len(text) <= 1400
    lines = text.splitlines()
    assert lines[:3] == ["Agent: agent", "Prompt: Which city hosts the HQ of the firm that owns Acme?", "Steps used: 40"]
    assert lines[5].startswith("Step 1: search") and lines[6].startswith("Step 2: search")
    assert lines[7].endswith("steps left out ...") and lines[-1].startswith("Step 40: search")
    assert render(run).count("\nStep ") == 40  # no budget: every step
    assert json.dumps(render(run, budget=200))  # a tiny budget still renders


def test_check_judge_asks_once_per_run_offline():
    from faultgate_stream.judge.check import JudgeCheck
    from faultgate_stream.pipeline import check_spans

    runs = [simple_run([("search", {"q": i}, "r")], prompt=f"q{i}") for i in range(3)]
    replies = ['{"detected": true, "confidence": 0.7, "reason": "backwards"}',
               '{"detected": false, "confidence": 0.9, "reason": "forwards"}', 503]
    with ScriptedModel(replies) as m:
        judge = get_judge(m.spec())
        verdicts = check_spans(runs, [JudgeCheck(judge, WRONG_DIRECTION)])
        judge.close()
    got = sorted((v.verdict, v.results[0].confidence) for v in verdicts)
    assert got == [("clean", 0.9), ("failed", 0.7), ("undecided", 0.0)] and len(m.requests) == 3


def test_check_with_a_judge_reports_its_answers_and_names_it(tmp_path, capsys):
    from faultgate_stream.cli.main import main

    traces = tmp_path / "t.json"
    examples = Path(__file__).resolve().parents[2] / "examples"
    src = next(p for p in sorted(examples.rglob("*.json")) if "resourceSpans" in p.read_text()[:2000])
    traces.write_bytes(src.read_bytes())
    n = len(json.loads(traces.read_text())["resourceSpans"])
    replies = ['{"detected": false, "confidence": 0.9, "reason": "follows the chain"}'] * 200
    with ScriptedModel(replies) as m:
        code = main(["check", str(traces), "--check", "abstention", "--judge", m.spec("qwen"), "--json",
                     str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["judge"] == "openai:qwen" and "judge openai:qwen" in out
    judged = [r for r in report["results"] if r["check"] == "wrong_direction"]
    assert judged and all(r["detected"] is False and r["confidence"] == 0.9 for r in judged)
    assert len(m.requests) == len(judged) and n >= 1 and code in (0, 1)


def test_check_with_an_unreachable_judge_leaves_its_question_undecided(tmp_path, capsys):
    from faultgate_stream.cli.main import main

    with ScriptedModel([]) as m:
        dead = m.spec()
    traces = Path(__file__).resolve().parents[2] / "examples"
    src = next(p for p in sorted(traces.rglob("*.json")) if "resourceSpans" in p.read_text()[:2000])
    code = main(["check", str(src), "--check", "abstention", "--judge", dead, "--judge-timeout", "2",
                 "--json", str(tmp_path / "r.json")])
    report = json.loads((tmp_path / "r.json").read_text())
    judged = [r for r in report["results"] if r["check"] == "wrong_direction"]
    assert judged and all(r["detected"] is None for r in judged)
    assert "undecided" in capsys.readouterr().err and code in (0, 1)
