"""Rules without code: a rules file's CEL expressions, compiled at load and judged as checks
(checks/rules/)."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgate_stream.checks.rules.check import rule_checks
from faultgate_stream.checks.rules.load import load_rules
from faultgate_stream.model.errors import InputError
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.testing import agent, tool, trace_id
from tests.conftest import ROOT
from tests.model.native_inputs import ARGS, both, runs, span_records

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
    # the file is one check, whose members are its rules, and every rule's digest is its file's
    [check] = checks
    assert [c.name for c in check.members] == [r["name"] for r in RULES]
    assert {c.digest for c in (check, *check.members)} == {load_rules(_file(tmp_path, RULES)).digest}
    assert v.rule_digests == (check.digest,) * len(RULES)


def test_a_rule_judges_the_same_whether_spans_were_observed_in_any_order_or_not_at_all(tmp_path):
    checks = rule_checks(load_rules(_file(tmp_path, RULES)))
    spans = _spans()
    want = [(r.check, r.fired, r.undecided, r.reason) for v in check_spans([spans], checks, early=False)
            for r in v.results]
    for batches in ([spans[::-1]], [[s] for s in spans], [spans[3:], spans[:3]]):
        got = [(r.check, r.fired, r.undecided, r.reason) for v in check_spans(batches, checks) for r in v.results]
        assert got == want


def test_spans_of_a_batch_with_equal_maps_are_judged_once_and_each_answered_in_its_own_trace(tmp_path):
    """A batch is evaluated whole and equal maps are given to CEL once (checks/rules/check.py);
    every span still fires, in its own trace and run, and ``True``, ``1`` and ``1.0`` stay
    three values."""
    from faultgate_stream.testing import span

    rules = [{"name": "calc_failed", "when": 'span.status == "error" && span.tool == "calculator"', "reason": "c"},
             {"name": "flag_is_true", "when": '"x.flag" in span.attributes && span.attributes["x.flag"] == true',
              "reason": "f"}]
    checks = rule_checks(load_rules(_file(tmp_path, rules)))
    traces = []
    for flag in (True, 1, 1.0):
        t = trace_id()
        a = agent(t, name="calc")
        failed = tool(t, a.span_id, "calculator", {"x": 1}, "Error: no", start_s=1, status=2)
        marked = span(t, "mark", parent=a.span_id, start_s=2, attributes={"x.flag": flag})
        traces.append([a, failed, tool(t, a.span_id, "calculator", {"x": 1}, "ok", start_s=3), marked])
    batch = [s for spans in traces for s in spans]
    verdicts = check_spans([batch], checks)
    offline = check_spans(traces, checks, early=False)
    assert [[(r.check, r.fired, r.span_ids) for r in v.results] for v in verdicts] == \
        [[(r.check, r.fired, r.span_ids) for r in v.results] for v in offline]
    by_trace = {v.key.trace_id: {r.check: r for r in v.results} for v in verdicts}
    for spans in traces:
        got = by_trace[spans[0].trace_id]
        assert got["calc_failed"].fired and got["calc_failed"].span_ids == (spans[1].span_id,)
    assert [by_trace[s[0].trace_id]["flag_is_true"].fired for s in traces] == [True, False, False]
    assert sorted((f.trace_id, f.check) for v in verdicts for f in v.early) == sorted(
        [(s[0].trace_id, "calc_failed") for s in traces] + [(traces[0][0].trace_id, "flag_is_true")])


TOGETHER = [
    {"name": "drop", "tools": ["run_sql"], "when": 'span.args.query.matches("(?i)drop")', "reason": "d"},
    {"name": "refund", "when": 'span.tool == "issue_refund" && span.args.amount > 500', "reason": "r"},
    {"name": "ran", "level": "run", "when": 'run.calls["run_sql"] >= 2', "reason": "two"},
    {"name": "sql", "when": 'span.tool == "run_sql"', "reason": "s"},
]


def _interleaved():
    """Three traces' spans in two batches, each trace in both: matches, errors, and a trace
    where nothing matches."""
    traces = []
    for k, (query, amount) in enumerate([("DROP x", 900), ("select", None), ("drop y", 10)]):
        t = trace_id()
        a = agent(t, name="shop")
        refund = {"order": "A"} if amount is None else {"order": "A", "amount": amount}
        traces.append([a, tool(t, a.span_id, "run_sql", {"query": query}, "ok", start_s=1),
                       tool(t, a.span_id, "issue_refund", refund, "ok", start_s=2),
                       tool(t, a.span_id, "run_sql", {"query": "drop z" if k == 0 else "select 2"}, "ok", start_s=3),
                       tool(t, a.span_id, "issue_refund", {"order": "B"} if k == 2 else refund, "ok", start_s=4)])
    return [[s for spans in traces for s in spans[:2]], [s for spans in traces for s in spans[2:]]]


def _by_check(verdicts, name):
    results = sorted((v.key.trace_id, r.fired, r.undecided, r.reason, r.span_ids) for v in verdicts for r in v.results
                     if r.check == name)
    early = sorted((f.trace_id, f.span_id, f.reason) for v in verdicts for f in v.early if f.check == name)
    return results, early


def test_a_files_span_rules_observed_together_find_what_each_finds_alone(tmp_path, monkeypatch):
    """A file's span rules observe as one check (checks/rules/check.py, ``RulesCheck.
    observe_spans``): each still finds, early and at the verdict, what it finds in a file of
    its own; and when the file's look raises on a stretch, the early findings there are lost
    to every rule and no verdict changes."""
    from faultgate_stream.checks.rules.check import SpanRules

    def file_of(name, rules):
        p = tmp_path / f"{name}.yaml"
        p.write_text(json.dumps(rules))
        return rule_checks(load_rules(str(p)))

    batches = _interleaved()
    together = check_spans(batches, file_of("all", TOGETHER))
    for rule in TOGETHER:
        alone = check_spans(batches, file_of(rule["name"], [rule]))
        assert _by_check(together, rule["name"]) == _by_check(alone, rule["name"]), rule["name"]
    assert _by_check(together, "drop")[1] and _by_check(together, "sql")[1]  # early findings were there to compare
    assert any(u for _, _, u, _, _ in _by_check(together, "refund")[0])      # and an undecided result

    stretch = SpanRules.stretch
    calls = []

    def raises_once(self, *args):
        calls.append(1)
        if len(calls) == 1:  # the first trace's first stretch, where "drop" matches
            raise RuntimeError("the first rule's look failed")
        return stretch(self, *args)

    monkeypatch.setattr(SpanRules, "stretch", raises_once)
    failing = check_spans(batches, file_of("all", TOGETHER))
    assert len(calls) == 6  # one look a stretch for all the rules
    for rule in TOGETHER:  # the stretch was judged again at the verdict
        assert _by_check(failing, rule["name"])[0] == _by_check(together, rule["name"])[0], rule["name"]
    first = {s.span_id for s in batches[0] if s.trace_id == batches[0][0].trace_id}
    assert not any(f.span_id in first for v in failing for f in v.early)
    assert any(f.span_id in first for v in together for f in v.early)


def test_a_rules_files_check_gives_its_rules_verdicts_and_their_early_findings_by_span_then_in_the_files_order(
        tmp_path):
    """A rules file is one check (checks/rules/check.py, ``RulesCheck``) whose results are
    its rules', in the file's order, as judged offline from the whole run, however the spans
    arrived; early findings come by span, and at one span in the file's order."""
    rules = [*TOGETHER, {"name": "refund_any", "when": 'span.tool == "issue_refund"', "reason": "any"},
             {"name": "nothing", "level": "run", "when": 'run.calls["nothing"] > 0', "reason": "n"},
             {"name": "first", "when": 'span.operation == "invoke_agent"', "reason": "agent"}]
    batches = _interleaved()
    one = [[s for b in batches for s in b]]
    [check] = rule_checks(load_rules(_file(tmp_path, rules)))
    assert [c.name for c in check.members] == [r["name"] for r in rules]
    place = {r["name"]: k for k, r in enumerate(rules)}
    for b in (batches, one, [[s] for s in one[0]]):
        arrived = {s.span_id: k for k, s in enumerate(s for batch in b for s in batch)}
        got = check_spans(b, [check])
        want = check_spans(b, [check], early=False)
        assert [(v.key, v.results) for v in got] == [(v.key, v.results) for v in want]
        assert all([r.check for r in v.results] == [r["name"] for r in rules] for v in got)
        early = [[(arrived[f.span_id], place[f.check]) for f in v.early] for v in got]
        assert all(e == sorted(e) for e in early)
        assert sum(len(e) for e in early) >= 9  # findings early, several at a span, to order
        assert any(len({k for k, _ in e}) < len(e) for e in early)
        assert all(r.undecided for v in got for r in v.results if r.check == "nothing")


def test_a_rules_file_whose_look_or_verdict_raises_counts_and_holds_undecided_each_of_its_rules(tmp_path, monkeypatch):
    """Where a rules file's shared look at a stretch raises, each of its rules is counted
    (``Evaluator._failed``: ``faultgate_check_errors_total{check}``) and the verdicts stand
    (the stretch is judged again at the verdict); where its ``finish`` raises, each rule is
    undecided and counted."""
    from faultgate_stream.checks.registry import select
    from faultgate_stream.checks.rules.check import RulesCheck, SpanRules
    from faultgate_stream.verdict.evaluate import Evaluator

    names = [r["name"] for r in TOGETHER]
    batches = _interleaved()
    made = lambda: select(None) + rule_checks(load_rules(_file(tmp_path, TOGETHER)))  # noqa: E731
    want = check_spans(batches, made())
    failed = []
    monkeypatch.setattr(Evaluator, "_failed", lambda self, check, where, key: failed.append((check.name, where)))

    def raises(self, *args):
        raise RuntimeError("failed")

    with monkeypatch.context() as m:
        m.setattr(SpanRules, "stretch", raises)
        got = check_spans(batches, made())
    assert [v.results for v in got] == [v.results for v in want]
    assert not any(f.check in names for v in got for f in v.early)
    assert sorted(set(failed)) == sorted((n, "observe") for n in names)
    assert len(failed) == len(names) * 6  # each rule, on each trace's stretch of each batch
    failed.clear()
    monkeypatch.setattr(RulesCheck, "finish", raises)
    got = check_spans(batches, made())
    assert sorted(failed) == sorted((n, "finish") for n in names for _ in want)
    for v, w in zip(got, want):
        assert [r.check for r in v.results] == [r.check for r in w.results]
        for r, x in zip(v.results, w.results):
            assert (r.undecided and "RuntimeError" in r.reason) if r.check in names else r == x, r


def test_rules_files_among_other_checks_give_their_rules_results_in_their_places(tmp_path):
    """Two rules files between built-in checks: each file's rules' results where the file
    is, in the file's order, as each judges alone, the built-ins' unmoved."""
    from faultgate_stream.checks.base import each
    from faultgate_stream.checks.registry import select

    other = tmp_path / "other.yaml"
    other.write_text(json.dumps([{"name": "any_sql", "when": 'span.tool == "run_sql"', "reason": "sql"}]))
    builtin = select(None)
    checks = [*builtin[:2], *rule_checks(load_rules(_file(tmp_path, TOGETHER))), *builtin[2:],
              *rule_checks(load_rules(str(other)))]
    batches = _interleaved()
    got = check_spans(batches, checks)
    names = [c.name for c in each(checks)]
    assert names[2:2 + len(TOGETHER)] == [r["name"] for r in TOGETHER] and names[-1] == "any_sql"
    alone = {}
    for c in checks:
        for v in check_spans(batches, [c]):
            alone.setdefault(v.key, []).extend(v.results)
    for v in got:
        assert [r.check for r in v.results] == names
        assert sorted(v.results) == sorted(alone[v.key])
        assert v.rule_digests == tuple(c.digest or "" for c in each(checks))


def test_a_plugins_result_after_a_rules_file_is_put_in_its_own_place(tmp_path):
    """A plug-in judged on its own thread after a rules file's check: its result goes where
    it is among the results (the file's rules before it), not at its check's index."""
    from faultgate_stream.verdict.ruleset import own_checks

    spans = _spans()
    plugin = own_checks(["tests.checks.hostile_plugins:StepCount"])
    [alone] = check_spans([spans], plugin)
    [v] = check_spans([spans], [*rule_checks(load_rules(_file(tmp_path, RULES))), *plugin])
    assert [r.check for r in v.results] == [r["name"] for r in RULES] + [plugin[0].name]
    assert v.results[-1] == alone.results[0] and not v.results[-1].undecided


def test_a_rules_file_bound_to_an_agent_or_its_shadow_reports_each_rule_as_its_own_check(tmp_path):
    """A rules file bound to an agent, and one as its shadow: each rule a result of its own,
    with the file's digest; a bound span rule fires early, naming the agent."""
    from faultgate_stream.verdict.ruleset import Binding, Ruleset

    file = load_rules(_file(tmp_path, RULES))
    shadow_path = tmp_path / "shadow.yaml"
    shadow_path.write_text(json.dumps([{"name": "any_sql", "when": 'span.tool == "run_sql"', "reason": "sql"},
                                       {"name": "many", "level": "run", "when": "run.steps.size() > 100"}]))
    spans = _spans()
    [every_run] = check_spans([spans], rule_checks(file))
    rs = Ruleset((), (Binding(("shop",), tuple(rule_checks(file)), shadow=tuple(rule_checks(load_rules(str(
        shadow_path)))), digest="bound"),), digest="every-run")
    [v] = check_spans([spans], rs)
    assert v.results == every_run.results
    assert [r.check for r in v.results] == [r["name"] for r in RULES]
    assert v.rule_digests == (file.digest,) * len(RULES)
    assert [(f.check, f.span_id, f.agent) for f in v.early] == [("sql_drop", spans[2].span_id, "shop")]
    assert [(r.check, r.fired) for r in v.shadow] == [("any_sql", True), ("many", False)]
    assert rs.names == [r["name"] for r in RULES]


def test_the_span_ids_of_a_stretch_are_what_the_span_rules_saw_of_it():
    """``SpanRules.add_ids`` (native/py/src/checks/rules.rs): the ids of ``spans[lo:hi]``, of
    a list or a tuple, into the set of what a file's span rules saw of a trace."""
    from faultgate_stream._native import SpanRules

    spans = _spans()
    for given in (spans, tuple(spans)):
        seen = {"before"}
        SpanRules.add_ids(seen, given, 1, 3)
        assert seen == {"before", spans[1].span_id, spans[2].span_id}
        SpanRules.add_ids(seen, given, 4, 99)
        assert seen == {"before", spans[1].span_id, spans[2].span_id, spans[4].span_id}


def test_a_rule_that_fails_on_a_span_another_rule_matched_is_undecided_there_and_the_other_fires(tmp_path):
    rules = [{"name": "any_refund", "when": 'span.tool == "issue_refund"', "reason": "a refund"},
             {"name": "big_refund", "tools": ["issue_refund"], "when": "span.args.amount > 500", "reason": "big"}]
    checks = rule_checks(load_rules(_file(tmp_path, rules)))
    spans = _spans()
    for batches in ([spans], [[s] for s in spans]):
        [v] = check_spans(batches, checks)
        by = {r.check: r for r in v.results}
        assert by["any_refund"].fired and by["any_refund"].span_ids == (spans[3].span_id,)
        assert by["big_refund"].undecided and by["big_refund"].span_ids == (spans[3].span_id,)
        assert "amount" in by["big_refund"].reason


@pytest.mark.parametrize("when, fires", [
    ("run.steps.size() == 4", True),            # the steps counted, none of their fields named
    ('run.steps.exists(s, s.ok) && run.calls["run_sql"] == 2', True),  # one step field
    ('run.steps.exists(s, s.tool == "lookup" && s.ok)', True),         # two step fields
    ('run.steps.all(s, s.status == "ok")', True),                      # a field worked out per step
    ('run.steps.exists(s, s.model != "")', False),                     # a field read from the spans
])
def test_a_run_rule_sees_the_steps_with_as_many_of_their_fields_as_it_names(tmp_path, when, fires):
    checks = rule_checks(load_rules(_file(tmp_path, [{"name": "r", "level": "run", "when": when}])))
    [v] = check_spans([_spans()], checks)
    [r] = v.results
    assert (r.fired, r.undecided) == (fires, False), r.reason


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
             for c in checks[0].members}
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


def test_beside_unread_work_a_span_rules_finding_stands_and_a_pass_or_a_run_rules_finding_is_undecided(tmp_path):
    from faultgate_stream.testing import span
    rules = [RULES[0], {"name": "no_refund", "level": "run", "when": '!("issue_refund" in run.calls)',
                        "reason": "never refunded"}]
    checks = rule_checks(load_rules(_file(tmp_path, rules)))
    spans = _spans()[:3]
    t = spans[0].trace_id
    # a tool call in a vocabulary no convention reads (tests/model/test_unread.py's pattern)
    spans.append(span(t, "acme.toolCall", parent=spans[0].span_id, start_s=5, attributes={
        "acme.toolCall.name": "issue_refund", "acme.toolCall.args": '{"order": "A"}', "acme.toolCall.result": "ok"}))
    [v] = check_spans([spans], checks)
    by = {r.check: r for r in v.results}
    assert by["sql_drop"].fired, by["sql_drop"].reason  # the DROP it saw
    assert by["no_refund"].undecided and "not read as a tool call" in by["no_refund"].reason  # the refund it did not
    [v] = check_spans([spans[:2] + spans[3:]], checks)
    assert {r.check: r for r in v.results}["sql_drop"].undecided  # no DROP seen, one call unread


# ------------------------------------------------------------------ the compiled evaluator

def _typed(v):
    """``v`` with every value's type beside it: ``True``, ``1`` and ``1.0`` are three values
    to CEL; NaN equal to itself."""
    if isinstance(v, dict):
        return ("map", sorted((k, _typed(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("list", [_typed(x) for x in v])
    if isinstance(v, float) and v != v:
        return ("float", "nan")
    return (type(v).__name__, v)


SPAN_ATTRIBUTES = ["error.type", "gen_ai.usage.input_tokens", "faultgate.termination", "gen_ai.agent.name", "absent"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(span_records("s"))
def test_a_spans_map_built_in_rust_holds_what_the_python_map_holds(rec):
    """The evaluator builds a span's map from the record itself (native/py/src/checks/
    rules.rs): field by field, the values and types of adapt.py's ``PlainSpans``."""
    from faultgate_stream._native import SpanRules
    from faultgate_stream.checks.plugins.adapt import SPAN_FIELDS, PlainSpans, plain, plain_args

    native = SpanRules(["true"], [], [None], [[]], SPAN_ATTRIBUTES, plain_args)
    # as CEL takes it: times past 64 bits as doubles
    want = plain(PlainSpans(frozenset(), frozenset(SPAN_ATTRIBUTES))(rec))
    assert _typed(native.map_of(rec, [])) == _typed(want)
    for name in SPAN_FIELDS:  # a field alone: what a rule naming only it is given
        assert _typed(native.map_of(rec, [name])) == _typed({name: want[name]})


@pytest.mark.parametrize("arguments", ARGS + ['{"a": ' + "[" * 300 + "]" * 300 + "}", '{"a": Infinity}',
                                              '{"a": -0.0, "b": 1E2, "c": 18446744073709551615}'])
def test_arguments_the_rust_reader_and_pythons_json_read_alike(arguments):
    from faultgate_stream._native import SpanRules
    from faultgate_stream.checks.plugins.adapt import plain_args
    from faultgate_stream.model.records import SpanRecord, ToolExecution

    rec = SpanRecord("t", "s", None, "execute_tool x", 1, tool=ToolExecution("x", arguments, ""))
    native = SpanRules(["true"], [], [None], [["args"]], [], plain_args)
    assert _typed(native.map_of(rec, ["args"])) == _typed({"args": plain_args(arguments)})


@pytest.mark.parametrize("when, fires", [
    ("span.args.limit > 100", True),                 # a double against an int: by value
    ("span.args.n == 100.0", True),
    ("span.args.n == 100", True),
    ('span.args.q.matches("^DROP")', True),          # literal: compiled once
    ('span.args.q.matches(span.args.p)', True),      # read from the data: compiled per call
    ('matches(span.args.q, "table$")', True),        # the global form, the crate's own
    ('"limit" in span.args && !("x" in span.args)', True),
    ('has(span.args.limit) && !has(span.args.x)', True),
    ('span.args.tags.filter(t, t.startsWith("a")).size() == 2', True),
    ('span.args.tags.exists(t, t == "b") && span.args.tags.all(t, size(t) == 1)', True),
    ('string(span.args.n) == "100"', True),
    ('int(span.args.limit) == 100', True),
    ('span.args.q.contains("TAB") && span.args.q.endsWith("table") && span.args.q.size() == 13', False),
    ('span.tool == "t" && span.status == "ok" && span.is_tool && !span.is_agent', True),
])
def test_the_evaluator_gives_what_cel_says(tmp_path, when, fires):
    from faultgate_stream.model.records import SpanRecord, ToolExecution

    args = json.dumps({"limit": 100.5, "n": 100, "q": "DROP my table", "p": "my", "tags": ["a", "b", "a"]})
    rec = SpanRecord("t", "s", None, "execute_tool t", 1, 2, status_code=1, tool=ToolExecution("t", args, "ok"))
    [c] = rule_checks(load_rules(_file(tmp_path, [{"name": "r", "when": when}])))
    [v] = check_spans([[rec]], [c])
    [r] = v.results
    assert (r.fired, r.undecided) == (fires, False), r.reason


@pytest.mark.parametrize("when, error", [
    ("span.args.amount > 500", "no such key: amount"),
    ('span.args.q > 1', "found no matching overload for '_>_' applied to '(string, int)'"),
    ('span.args.q.matches(span.args.bad)', "'(' not a valid regex: error: unclosed group"),
])
def test_a_rule_that_fails_on_every_span_is_undecided_naming_the_error(tmp_path, when, error):
    from faultgate_stream.model.records import SpanRecord, ToolExecution

    rec = SpanRecord("t", "s", None, "execute_tool t", 1, 2,
                     tool=ToolExecution("t", json.dumps({"q": "x", "bad": "("}), "ok"))
    [c] = rule_checks(load_rules(_file(tmp_path, [{"name": "r", "when": when}])))
    [v] = check_spans([[rec]], [c])
    [r] = v.results
    assert r.undecided and error in r.reason and "'execute_tool t' (s)" in r.reason, r.reason


def test_a_pattern_re2_takes_and_the_evaluator_cannot_run_refuses_the_file_naming_rule_and_cause(tmp_path):
    # a backreference-free RE2 class the regex crate spells otherwise: \C (any byte)
    with pytest.raises(InputError) as e:
        load_rules(_file(tmp_path, [{"name": "x", "when": 'span.name.matches("a\\\\Cb")'}]))
    assert "rules[0] (x): the evaluator cannot run the pattern" in str(e.value)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.sampled_from([["index", "tool", "arguments", "args", "result", "ok", "status", "span_id", "call_id",
                                 "start_ns", "arguments_captured", "result_captured"], ["ok"], []]))
def test_a_runs_steps_and_calls_built_in_rust_hold_what_the_python_map_holds(run, step_fields):
    """The evaluator builds a run's steps and calls from its steps (native/py/src/checks/
    rules.rs): the values and types of adapt.py's ``PlainRun``."""
    from faultgate_stream._native import RunRules
    from faultgate_stream.checks.plugins.adapt import PlainRun, PlainSpans, plain

    r, _ = both(*run)
    fields = frozenset({"steps", "calls", *step_fields})
    native = RunRules(["true"], [], step_fields, True)
    want = plain(PlainRun(fields, PlainSpans(fields, frozenset()))(r))
    assert _typed(native.map_of(r.steps, None)) == _typed(want)
    # and the fields Python builds, beside them
    rest = PlainRun(frozenset({"agent", "answer"}), PlainSpans(frozenset(), frozenset()))(r)
    assert _typed(native.map_of(r.steps, rest)) == _typed({**want, **plain(rest)})


SHARED_STEP_FIELDS = ["index", "tool", "arguments", "args", "result", "ok", "status", "arguments_captured",
                      "result_captured"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.sampled_from([SHARED_STEP_FIELDS, ["ok", "tool"], ["args"], None]))
def test_a_runs_map_read_off_the_cores_steps_holds_what_one_read_off_its_python_steps_holds(run, step_fields):
    """Where the run rules read only step fields runs may share, their map is built from
    the core's steps, never made Python objects (native/py/src/checks/rules.rs,
    ``core_map``): the values and types ``map_of`` gives on ``run.steps``."""
    from faultgate_stream._native import RunRules

    r, _ = both(*run)
    native = RunRules(["true"], [], step_fields, True)
    from_core = native.core_map_of(r)
    assert "steps" not in r.__dict__  # read off the core's: no Python step was made
    assert _typed(from_core) == _typed(native.map_of(r.steps, None))
    assert _typed(native.core_map_of(r)) == _typed(from_core)  # the core's own steps, once made Python's


def test_run_rules_judge_steps_set_by_hand_and_the_cores_own_without_making_them_python_objects():
    """``evaluate_run`` reads the core's steps when the run's were not set by hand (no
    Python step is made for the rules), and the steps set by hand when they were; the two
    kinds of run are kept apart."""
    from faultgate_stream._native import RunRules
    from faultgate_stream.model.records import Step

    t = trace_id()
    a = agent(t, name="shop", prompt="q", answer="done")
    spans = [a, tool(t, a.span_id, "lookup", {"id": 1}, "ok", start_s=1),
             tool(t, a.span_id, "lookup", {"id": 2}, "ok", start_s=2, status=2)]
    native = RunRules(['run.steps.filter(s, !s.ok).size() >= 1 && run.calls["lookup"] == 2'], [], ["ok"], True)
    run, _ = both(spans, a)
    assert native.evaluate_run(run, None) == ((True, ""),)
    assert "steps" not in run.__dict__
    assert native.evaluate(run.steps, None) == ((True, ""),)  # the Python steps agree
    hand, _ = both(spans, a)
    hand.steps = tuple(Step(i + 1, "lookup", "{}", "r", f"s{i}", f"c{i}", i, True) for i in range(2))
    assert native.evaluate_run(hand, None) == ((False, ""),)  # all ok: the steps set by hand are judged
    # a field no two runs share is read off the Python steps, whose ids are the spans'
    ids = RunRules([f'run.steps.exists(s, s.span_id == "{spans[2].span_id}")'], [], ["span_id"], False)
    assert ids.evaluate_run(run, None) == ((True, ""),)


def test_spans_alike_in_what_a_rule_reads_share_its_answer_and_spans_unlike_do_not(tmp_path):
    """A rule's outcome is kept a batch by what the fields it reads are made of (native/py/
    src/checks/rules.rs): spans differing only in a field it does not read share it, a span
    differing in one it reads is evaluated anew."""
    from faultgate_stream.model.records import SpanRecord, ToolExecution

    rules = [{"name": "failed", "when": 'span.status == "error"', "reason": "f"},
             {"name": "big", "tools": ["t"], "when": "span.args.n > 5", "reason": "b"}]
    checks = rule_checks(load_rules(_file(tmp_path, rules)))
    batch = []
    for i, (n, status) in enumerate([(1, 1), (9, 1), (1, 2), (1, 1), (9, 2), ("x", 1)]):
        batch.append(SpanRecord(f"{i:032x}", f"{i:016x}", None, "execute_tool t", 1, 2, status_code=status,
                                tool=ToolExecution("t", json.dumps({"n": n}), "ok")))
    verdicts = {v.key.trace_id: {r.check: r for r in v.results} for v in check_spans([batch], checks)}
    got = [(verdicts[s.trace_id]["failed"].fired, verdicts[s.trace_id]["big"].fired,
            verdicts[s.trace_id]["big"].undecided) for s in batch]
    assert got == [(False, False, False), (False, True, False), (True, False, False), (False, False, False),
                   (True, True, False), (False, False, True)]


def test_a_rule_whose_keys_keep_missing_in_a_batch_is_no_longer_keyed_and_answers_every_span_as_alone(tmp_path):
    """A rule reading what the batch's spans do not share (each call's arguments) stops
    being keyed after some misses (native/py/src/checks/rules.rs, ``worth_keying``), and a
    rule whose keys hit goes on being keyed: every span's outcome is the one it gets in a
    batch of its own, where spans alike come late in the batch too."""
    from faultgate_stream.checks.rules.check import SpanRules
    from faultgate_stream.model.records import SpanRecord, ToolExecution

    rules = load_rules(_file(tmp_path, [
        {"name": "big", "tools": ["t"], "when": "span.args.n > 50", "reason": "b"},
        {"name": "failed", "when": 'span.status == "error" && span.tool == "t"', "reason": "f"},
        {"name": "bad", "tools": ["t"], "when": "span.args.n.size() > 0", "reason": "x"}]))
    native = SpanRules(rules.rules).native
    batch = []
    for i in range(120):
        n = i if i < 60 else [7, 70, "x"][i % 3]  # unique, then three values over and over
        batch.append(SpanRecord(f"{i:032x}", f"{i:016x}", None, "execute_tool t", 1, 2, status_code=1 + i % 2,
                                tool=ToolExecution("t", json.dumps({"n": n}), "ok")))
    fired, errors = native.evaluate(batch)
    alone = [native.evaluate([s]) for s in batch]
    for rule in range(3):
        assert fired[rule] == [p for p, (f, _) in enumerate(alone) if f[rule]]
        assert errors[rule] == [(p, e[rule][0][1]) for p, (_, e) in enumerate(alone) if e[rule]]
    assert (len(fired[0]), len(fired[1]), len(fired[2]), len(errors[2])) == (9 + 20, 60, 20, 100)  # each can fail


def test_a_rule_reading_arguments_by_key_shares_its_answer_on_spans_alike_in_those_keys_values(tmp_path):
    """A rule that reads ``span.args`` only by literal keys is keyed by those keys' values
    (native/py/src/checks/rules.rs, ``arg_values_key``), not by the arguments' text: spans
    whose other arguments differ share its answer, and an int, a double, a string, a map
    or no key at all are each told apart; every span's outcome is the one it gets alone."""
    from faultgate_stream.checks.rules.check import SpanRules
    from faultgate_stream.model.records import SpanRecord, ToolExecution

    rules = load_rules(_file(tmp_path, [
        {"name": "big", "tools": ["t"], "when": "span.args.n > 50", "reason": "b"},
        {"name": "has", "tools": ["t"], "when": "has(span.args.n) && span.args.pad != ''", "reason": "h"},
        {"name": "whole", "tools": ["t"], "when": "size(span.args) > 1", "reason": "w"}]))
    native = SpanRules(rules.rules).native
    values = [7, 70, 7.0, 70.0, "x", None, {"a": 1}, [51], "missing"]
    batch = []
    for i in range(90):
        v = values[i % len(values)]
        args = json.dumps({"pad": f"p{i}"} if v == "missing" else {"n": v, "pad": f"p{i}"})
        batch.append(SpanRecord(f"{i:032x}", f"{i:016x}", None, "execute_tool t", 1, 2,
                                tool=ToolExecution("t", args if i != 5 else "{not json", "ok")))
    fired, errors = native.evaluate(batch)
    alone = [native.evaluate([s]) for s in batch]
    for rule in range(3):
        assert fired[rule] == [p for p, (f, _) in enumerate(alone) if f[rule]], rule
        assert errors[rule] == [(p, e[rule][0][1]) for p, (_, e) in enumerate(alone) if e[rule]], rule
    assert len(fired[0]) == 20 and errors[0] and fired[1] and fired[2]  # each can fire, or fail


def test_runs_alike_in_what_the_run_rules_read_share_their_answer_and_runs_unlike_do_not():
    """A run's outcomes are kept by what its map is made of (native/py/src/checks/rules.rs,
    ``RunRules.run_key``): a run differing only in what no rule reads gets the kept answer,
    one differing in a step field read, a step more or a tool called is evaluated anew, and a
    rule reading a field no two runs share is evaluated every run."""
    from faultgate_stream._native import RunRules
    from faultgate_stream.model.records import Step

    def steps(*oks, tool="t", span="s"):
        return tuple(Step(i + 1, tool, "{}", "r", f"{span}{i}", f"c{i}", i, ok) for i, ok in enumerate(oks))

    native = RunRules(["run.steps.filter(s, !s.ok).size() > 1", '"u" in run.calls'], [], ["ok"], True)
    first = native.evaluate(steps(True, False, False), None)
    assert first == ((True, ""), (False, ""))
    assert native.evaluate(steps(True, False, False, span="x"), None) is first  # span ids are not read
    assert native.evaluate(steps(True, True, False), None) == ((False, ""), (False, ""))
    assert native.evaluate(steps(True, False, False, True), None) is not first
    assert native.evaluate(steps(True, False, False, tool="u"), None) == ((True, ""), (True, ""))
    # an ok that is 1, not True, is another map: a key tells their types apart
    typed = RunRules(["run.steps.all(s, s.ok == true)"], [], ["ok"], False)
    assert typed.evaluate(steps(True, True), None) == ((True, ""),)
    assert typed.evaluate(tuple(s._replace(ok=1) for s in steps(True, True)), None) == ((False, ""),)
    every = RunRules(['run.steps.exists(s, s.span_id == "s0")'], [], ["span_id"], False)
    assert every.evaluate(steps(True), None) == ((True, ""),)
    assert every.evaluate(steps(True, span="x"), None) == ((False, ""),)


@pytest.mark.parametrize("tool_is", ['span.tool == "a"', '"a" == span.tool', 'span.tool in ["a", "c"]'])
def test_a_rule_requiring_a_tool_in_its_expression_judges_as_one_evaluated_on_every_span(tmp_path, tool_is):
    """A rule whose top-level ``&&`` requires a tool is looked at on that tool's spans only
    (native/core/src/checks/rules.rs, ``implied_tools``): it judges as the same rule
    spelled so that it is evaluated everywhere (``span["tool"]``), errors on the other
    tools' spans included (false beside an error is false)."""
    everywhere = tool_is.replace("span.tool", 'span["tool"]')
    rules = [{"name": "implied", "when": f"span.args.n > 1 && {tool_is}", "reason": "i"},
             {"name": "evaluated", "when": f"span.args.n > 1 && {everywhere}", "reason": "e"}]
    checks = rule_checks(load_rules(_file(tmp_path, rules)))
    traces = []
    for spans_of in ([("a", {"n": 2}), ("b", {})], [("b", {"x": 1}), ("a", {"n": 0})], [("a", {}), ("c", {"n": 5})],
                     [("b", {"n": 9})]):
        t = trace_id()
        a = agent(t, name="x")
        traces.append([a, *(tool(t, a.span_id, name, args, "ok", start_s=k + 1) for k, (name, args) in enumerate(spans_of))])
    got = {}
    for v in check_spans(traces, checks) + check_spans(traces, checks, early=False):
        for r in v.results:
            got.setdefault(r.check, []).append((r.fired, r.undecided, r.span_ids))
    assert got["implied"] == got["evaluated"]
    assert [f for f, _, _ in got["implied"]][:4] == [True, False, "c" in tool_is, False]


RUN_VALUES = {"n": 100, "d": 100.5, "s": "Hello", "u": "\u00fcn\u00ef", "l": [1, 2, 3], "m": {"a": 1}, "b": True,
              "z": None}
# Expressions cel-cpp type-checks (the load): the evaluator must give what cel-cpp gives,
# true, false or an error (whose text is the evaluator's own).
AGREED = [
    'run.d > 100', 'run.n == 100.0', 'run.n < 100.5', 'run.n == 100u', 'run.s.size() == 5', 'run.u.size() == 3',
    'run.s.startsWith("He") && run.s.endsWith("lo") && run.s.contains("ll")', 'run.s.matches("^H")',
    'has(run.m.a)', 'has(run.m.x)', 'run.m.x == 1', 'run.z == null', 'run.l.exists(x, x > 2)', 'run.l.all(x, x > 0)',
    'run.l.exists_one(x, x == 2)', 'run.l.map(x, x * 2)[2] == 6', 'run.l.filter(x, x > 1).size() == 2',
    'int(run.d) == 100', 'double(run.n) == 100.0', 'string(run.n) == "100"', 'string(run.d) == "100.5"',
    'run.n / 0 == 1', 'run.n % 7 == 2', '9223372036854775807 + run.n > 0', 'run.s + "x" == "Hellox"',
    'size(run.l) == 3', '"a" in run.m', '2 in run.l', 'run.l[5] == 1', 'type(run.n) == int', 'type(run.d) == double',
    'timestamp("2024-01-01T00:00:00Z").getHours("Europe/Paris") == 1', 'duration("1h") > duration("30m")',
    'run.n > "a"', 'run.l.size() > 2 ? true : false', 'uint(run.n) == 100u', 'run.n == run.d - 0.5',
    'bytes("a") == b"a"', 'dyn(run.n) == 100', 'run.missing == 1', '!run.b || run.n > 1', 'run.z.x == 1',
]


@pytest.mark.parametrize("when", AGREED)
def test_the_evaluator_agrees_with_cel_cpp_on_what_cel_cpp_type_checks(when):
    from cel_expr_python import cel

    from faultgate_stream._native import RunRules

    t = cel.Type
    v = cel.NewEnv(variables={"run": t.Map(t.STRING, t.DYN)}).compile(when).eval(data={"run": RUN_VALUES})
    want = "error" if v.type() == t.ERROR else v.plain_value()
    [(matched, error)] = RunRules([when], []).evaluate((), RUN_VALUES)
    assert ("error" if error else matched) == want, error
