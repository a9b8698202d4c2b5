"""Rules without code: a rules file's CEL expressions, compiled at load and judged as checks
(checks/rules/)."""
from __future__ import annotations

import json

import pytest

from faultgate_stream.checks.rules.check import rule_checks
from faultgate_stream.checks.rules.load import load_rules
from faultgate_stream.model.errors import InputError
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.testing import agent, tool, trace_id
from tests.conftest import ROOT

EXAMPLE_RULES = ROOT / "examples" / "plugins" / "rules.yaml"
RETAIL = ROOT / "examples" / "traces" / "retail_gaps.json"


def _file(tmp_path, rules, suffix=".yaml"):
    p = tmp_path / f"rules{suffix}"
    p.write_text(json.dumps(rules))
    return str(p)


def _spans():
    t = trace_id()
    a = agent(t, name="shop", prompt="q", answer="done")
    return [a,
            tool(t, a.span_id, "run_sql", {"query": "select 1"}, "ok", start_s=1),
            tool(t, a.span_id, "run_sql", {"query": "DROP  TABLE users"}, "ok", start_s=2),
            tool(t, a.span_id, "issue_refund", {"order": "A"}, "ok", start_s=3),
            tool(t, a.span_id, "lookup", {"id": 1}, "Error: gone", start_s=4)]


RULES = [
    {"name": "sql_drop", "level": "span", "tools": ["run_sql"],
     "when": 'span.args.query.matches("(?i)drop\\\\s+table")', "reason": "DROP TABLE"},
    {"name": "big_refund", "when": 'span.tool == "issue_refund" && span.args.amount > 500', "reason": "big refund"},
    {"name": "two_sql", "level": "run", "severity": "soft", "when": 'run.calls["run_sql"] >= 2', "reason": "two SQL"},
    {"name": "failed_lookup", "level": "run", "when": 'run.steps.exists(s, s.tool == "lookup" && !s.result.startsWith("ok"))',
     "reason": "a lookup failed"},
    {"name": "all_ok", "level": "run", "when": 'run.steps.all(s, s.ok && s.arguments_captured)', "reason": "all ok"},
]


def test_span_rules_fire_on_their_span_early_and_run_rules_at_the_verdict(tmp_path):
    checks = rule_checks(load_rules(_file(tmp_path, RULES)))
    spans = _spans()
    [v] = check_spans([spans], checks)
    by = {r.check: r for r in v.results}
    assert by["sql_drop"].fired and by["sql_drop"].span_ids == (spans[2].span_id,)
    assert by["sql_drop"].reason == f"DROP TABLE: span 'execute_tool run_sql' ({spans[2].span_id})"
    # the refund without an amount could not be judged: undecided, naming the span and the error
    assert by["big_refund"].undecided and spans[3].span_id in by["big_refund"].reason
    assert "amount" in by["big_refund"].reason
    assert by["two_sql"].fired and by["two_sql"].severity.value == "soft"
    assert by["failed_lookup"].fired and by["failed_lookup"].kind == "rule"
    assert by["all_ok"].fired  # a step's own fields (ok, arguments_captured) are there to read
    assert [(f.check, f.span_id) for f in v.early] == [("sql_drop", spans[2].span_id)]
    # every rule's digest is its file's
    assert {c.digest for c in checks} == {load_rules(_file(tmp_path, RULES)).digest}


def test_a_rule_judges_the_same_whether_spans_were_observed_in_any_order_or_not_at_all(tmp_path):
    checks = rule_checks(load_rules(_file(tmp_path, RULES)))
    spans = _spans()
    want = [(r.check, r.fired, r.undecided, r.reason) for v in check_spans([spans], checks, early=False)
            for r in v.results]
    for batches in ([spans[::-1]], [[s] for s in spans], [spans[3:], spans[:3]]):
        got = [(r.check, r.fired, r.undecided, r.reason) for v in check_spans(batches, checks) for r in v.results]
        assert got == want


@pytest.mark.parametrize("rule, message", [
    ({"name": "x", "when": "span.tool =="}, "rules[0] (x): line 1, column 13: Syntax error"),
    ({"name": "x", "when": 'span.tool + 1 == "a"'}, "rules[0] (x): line 1, column"),
    ({"name": "x", "when": "nope.tool == 1"}, "undeclared reference to 'nope.tool'"),
    ({"name": "x", "when": "1 + 2"}, "`when` must be true or false, and this expression is int"),
    ({"name": "x", "when": '\n span.tool.matches("(")'}, "line 2, column 11: matches(): invalid RE2 pattern '('"),
    ({"name": "x", "when": "run.steps.size() > 1"}, "a span rule reads `span`, not `run` (set level: run?)"),
    ({"name": "x", "level": "run", "tools": ["a"], "when": "true"}, "tools applies to span rules only"),
    ({"name": "x", "when": "span.attributes.size() > 1"}, "name each attribute it reads as a literal"),
    ({"name": "Bad Name", "when": "true"}, "name must be lower-case"),
    ({"name": "policy", "when": "true"}, "is a built-in check's"),
    ({"name": "x", "when": "true", "levle": "run"}, "unknown key 'levle'"),
    ({"name": "x", "when": "true", "severity": "fatal"}, "severity must be hard, soft or warn"),
])
def test_a_bad_rule_refuses_the_file_naming_rule_position_and_cause(tmp_path, rule, message):
    with pytest.raises(InputError) as e:
        load_rules(_file(tmp_path, [rule]))
    assert message in str(e.value)


def test_every_bad_rule_of_a_file_is_reported_at_once(tmp_path):
    with pytest.raises(InputError) as e:
        load_rules(_file(tmp_path, [{"name": "a", "when": "span.x +"}, {"name": "b", "when": "true"},
                                    {"name": "b", "when": "true"}]))
    assert "rules[0] (a)" in str(e.value) and "rules[2] (b): the name is taken" in str(e.value)


def test_attributes_a_rule_names_are_what_the_live_reader_keeps(tmp_path):
    [c] = rule_checks(load_rules(_file(tmp_path, [
        {"name": "x", "when": 'span.attributes["gen_ai.request.model"] == "m" || "k.v" in span.attributes'}])))
    assert c.attributes == {"gen_ai.request.model", "k.v"}


def test_the_example_rules_file_judges_the_retail_gaps():
    checks = rule_checks(load_rules(str(EXAMPLE_RULES)))
    _, spans = read_file(RETAIL)
    verdicts = check_spans([spans], checks, early=False)
    fired = {c.name: sorted(v.scenario for v in verdicts for r in v.results if r.check == c.name and r.fired)
             for c in checks}
    assert fired == {"cancel_without_reason": ["gap-G5-missing-reason"],
                     "user_lookup_failed": ["gap-G1-failed-auth", "ok-failed-auth-then-retry"],
                     "sql_drop": [],
                     "unconfirmed_cancel": ["gap-G6-no-confirmation"],
                     "search_spree": []}


def test_the_rules_in_docs_writing_checks_load(tmp_path):
    text = (ROOT / "docs" / "writing-checks.md").read_text()
    block = text.split("```yaml\n# rules.yaml\n", 1)[1].split("```", 1)[0]
    p = tmp_path / "rules.yaml"
    p.write_text(block)
    assert [r.name for r in load_rules(str(p)).rules] == ["cancel_without_reason", "unconfirmed_cancel"]
