"""GenAI content in log events (util-genai's event_only, and the older per-message events)
gives the same verdicts as the same run recorded with content on its spans."""
from __future__ import annotations

import json

import pytest

from faultgate_stream.checks.registry import select
from faultgate_stream.cli.main import main
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_document_all
from tests.genai_runs import merge, tool_loop

SCENARIOS = {
    "clean": {},
    "repeated": {"repeats": 3},
    "abstains": {"answer": "I could not find the weather for that city."},
    "denied argument": {"city": "../../etc/passwd"},
    "cut off": {"finish_last": "length"},
    "no answer at the cap": {"repeats": 12, "answer": "", "result": "[]"},
}


def _verdict(mode: str, **kw):
    traces, logs = tool_loop(mode, **kw)
    t, lg = read_document_all(traces), read_document_all(logs)
    (v,) = check_spans([t.spans], select(None), [lg.contents])
    return v


def _said(v):
    return v.verdict, [(r.check, r.fired, r.undecided, r.reason) for r in v.results]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("mode", ["event_only", "span_and_event", "legacy"])
def test_content_in_log_events_gives_the_verdicts_of_content_on_spans(mode, scenario):
    kw = SCENARIOS[scenario]
    spans_only = _verdict("span_only", **kw)
    assert _said(_verdict(mode, **kw)) == _said(spans_only)
    assert spans_only.verdict == ("clean" if scenario == "clean" else "failed")


def test_without_the_logs_an_event_only_run_is_undecided_not_clean():
    traces, _ = tool_loop("event_only")
    (v,) = check_spans([read_document_all(traces).spans], select(None))
    assert v.verdict == "undecided"


def test_check_reads_a_traces_file_and_a_logs_file_and_one_file_holding_both(tmp_path, capsys):
    docs = [tool_loop("event_only", **kw) for kw in ({}, {"repeats": 3})]
    traces, logs = merge([d[0] for d in docs], "resourceSpans"), merge([d[1] for d in docs], "resourceLogs")
    (tmp_path / "traces.json").write_text(json.dumps(traces))
    (tmp_path / "logs.json").write_text(json.dumps(logs))
    (tmp_path / "both.json").write_text(json.dumps({**traces, **logs}))
    reports = []
    for files in (["traces.json", "logs.json"], ["logs.json", "traces.json"], ["both.json"]):
        out = tmp_path / "r.json"
        code = main(["check", *[str(tmp_path / f) for f in files], "--json", str(out)])
        reports.append(json.loads(out.read_text()))
        assert code == 1  # the repeated run fired
    assert reports[0]["results"] == reports[1]["results"] == reports[2]["results"]
    assert [r["verdict"] for r in reports[0]["runs"]] == ["clean", "failed"]
    # the traces alone: the same runs, undecided where the content was in the logs
    code = main(["check", str(tmp_path / "traces.json"), "--json", str(tmp_path / "alone.json")])
    alone = json.loads((tmp_path / "alone.json").read_text())
    assert code == 0 and [r["verdict"] for r in alone["runs"]] == ["undecided", "undecided"]
    err = capsys.readouterr().err
    assert "warning: 2/2 run(s) undecided" in err


def test_a_logs_file_alone_has_no_runs_and_exits_2(tmp_path, capsys):
    _, logs = tool_loop("event_only")
    (tmp_path / "logs.json").write_text(json.dumps(logs))
    assert main(["check", str(tmp_path / "logs.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no spans found" in err[0]


def test_a_log_record_with_a_malformed_span_id_is_bad_input(tmp_path, capsys):
    traces, logs = tool_loop("event_only")
    logs["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["spanId"] = "xyz"
    (tmp_path / "t.json").write_text(json.dumps({**traces, **logs}))
    assert main(["check", str(tmp_path / "t.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "logRecords[0]: spanId is not an 8-byte span id" in err[0]
