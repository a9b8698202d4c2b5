"""Each built-in check on small hand-built runs: when it fires, when it must not, and why."""
from __future__ import annotations

from faultgate_stream.checks.expectations import Golden
from faultgate_stream.checks.registry import select
from faultgate_stream.pipeline import check_spans
from faultgate_stream.testing import agent, simple_run, span, tool, trace_id


def _result(spans, check, **kw):
    (verdict,) = check_spans([spans], select([check], **kw))
    (r,) = verdict.results
    return r, verdict


def test_search_loop_fires_with_no_answer_at_the_step_cap_and_mostly_empty_results():
    r, _ = _result(simple_run([("search", {"q": i}, "[]") for i in range(12)], answer=""), "search_loop")
    assert r.fired and r.reason == "no answer, 12 steps (cap), 100% empty results"


def test_search_loop_catches_a_named_cap_below_twelve_steps():
    spans = simple_run([("search", {"q": i}, '{"count": 0}') for i in range(4)], answer="",
                       faultgate__termination="max_steps reached")
    assert _result(spans, "search_loop")[0].fired


def test_search_loop_does_not_fire_on_an_answered_run():
    r, _ = _result(simple_run([("search", {"q": i}, "[]") for i in range(12)], answer="Paris"), "search_loop")
    assert not r.fired and r.reason == "answered"


def test_abstention_fires_on_an_inability_to_find():
    assert _result(simple_run([], answer="I couldn't locate the payment method."), "abstention")[0].fired


def test_abstention_does_not_fire_on_a_refusal_or_a_policy_reminder():
    r, _ = _result(simple_run([], answer="I cannot modify the order again, per policy."), "abstention")
    assert not r.fired and r.reason == "answer does not abstain"


def test_repeated_call_fires_on_three_identical_calls_with_identical_results_whatever_the_key_order():
    spans = simple_run([("get", '{"a": 1, "b": 2}', "x  y"), ("get", '{"b": 2, "a": 1}', "x y"),
                        ("get", '{"a":1,"b":2}', " x y ")])
    r, _ = _result(spans, "repeated_call")
    assert r.fired and "(steps 1, 2, 3)" in r.reason


def test_repeated_call_does_not_fire_when_the_results_change():
    spans = simple_run([("get", {"a": 1}, "page 1"), ("get", {"a": 1}, "page 2"), ("get", {"a": 1}, "page 3")])
    assert not _result(spans, "repeated_call")[0].fired


def test_a_tool_error_followed_by_a_success_of_the_same_tool_is_recovered():
    spans = simple_run([("pay", {}, "Error: card declined"), ("pay", {}, '{"ok": true}')])
    assert not _result(spans, "unrecovered_tool_error")[0].fired


def test_a_tool_error_never_followed_by_a_success_is_unrecovered():
    spans = simple_run([("pay", {}, '{"error": "declined"}'), ("notify", {}, "sent")])
    r, _ = _result(spans, "unrecovered_tool_error")
    assert r.fired and r.reason.startswith("Tool 'pay' failed at step 1 (JSON top-level error: declined)")


def test_a_span_status_error_with_no_later_successful_tool_span_is_unrecovered():
    t = trace_id()
    root = agent(t, answer="done")
    spans = [root, span(t, "chat", parent=root.span_id, start_s=1, status=2, message="upstream 500")]
    r, _ = _result(spans, "unrecovered_tool_error")
    assert r.fired and r.reason == "Unrecovered span error at span 2 of 2: Span status error: Code 2"


def test_context_overflow_reads_provider_errors_in_status_messages():
    t = trace_id()
    root = agent(t, answer="done")
    spans = [root, span(t, "chat", parent=root.span_id, start_s=1, status=2,
                        message="This model's maximum context length is 8192 tokens")]
    r, v = _result(spans, "context_overflow")
    assert r.fired and "'maximum context length'" in r.reason
    assert [f.check for f in v.early] == ["context_overflow"]


def test_context_overflow_ignores_a_successful_search_result_that_quotes_the_error_text():
    spans = simple_run([("search", {"q": "llm errors"}, "Top hit: 'context length exceeded' explained")])
    assert not _result(spans, "context_overflow")[0].fired


def test_context_overflow_reads_an_error_result_that_names_the_limit():
    spans = simple_run([("summarise", {}, "Error: prompt is too long: 250000 tokens")])
    r, _ = _result(spans, "context_overflow")
    assert r.fired and r.reason == "step 1 (summarise) result: 'prompt is too long'"


def test_a_denied_argument_fires_policy_when_its_span_arrives_and_in_the_verdict():
    spans = simple_run([("read_file", {"path": "../../etc/passwd"}, "root:x:0:0")])
    r, v = _result(spans, "policy")
    assert r.fired and r.reason == "step 1: argument matches denied pattern '\\\\.\\\\./'"
    assert len(v.early) == 1 and v.early[0].span_id == spans[1].span_id


def test_golden_checks_grade_the_answer_by_scenario_key_or_prompt():
    golden = Golden({"s-1": "Onyx-4413", "what is it?": "Zinc-9"})
    wrong, _ = _result(simple_run([], answer="It is Onyx.", faultgate__scenario="s-1"), "wrong_answer", golden=golden)
    cut, _ = _result(simple_run([], answer="It is Onyx.", faultgate__scenario="s-1"), "truncation", golden=golden)
    right, _ = _result(simple_run([], prompt="what is it?", answer="zinc-9!"), "wrong_answer", golden=golden)
    unknown, _ = _result(simple_run([], prompt="other"), "wrong_answer", golden=golden)
    assert wrong.fired and cut.fired and cut.reason == "answer has 'Onyx' but not 'Onyx-4413'"
    assert not right.fired
    assert not unknown.fired and unknown.confidence == 0.0


def test_outcome_reads_the_root_attribute_when_no_file_names_the_scenario():
    failed, _ = _result(simple_run([], faultgate__outcome="fail"), "outcome")
    passed, _ = _result(simple_run([], faultgate__outcome=True), "outcome")
    missing, _ = _result(simple_run([]), "outcome")
    assert failed.fired and not passed.fired
    assert not missing.fired and missing.confidence == 0.0


def test_the_scenario_key_is_faultgates_prompt_hash_when_nothing_names_it():
    (v,) = check_spans([simple_run([], prompt="Which firm is the external auditor of Aster Labs?")], select())
    import hashlib
    assert v.scenario == "p-" + hashlib.sha256(b"Which firm is the external auditor of Aster Labs?").hexdigest()[:12]


def test_sub_agent_steps_count_in_the_parent_run():
    t = trace_id()
    root = agent(t, answer="")
    sub = agent(t, name="sub", parent=root.span_id, start_s=0.5)
    spans = [root, sub] + [tool(t, sub.span_id, "search", {"q": i}, "[]", start_s=1 + i) for i in range(12)]
    r, v = _result(spans, "search_loop")
    assert r.fired and v.steps == 12 and v.agent == "agent"
