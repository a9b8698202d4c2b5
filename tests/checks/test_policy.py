"""The ``policy`` check, key by key: when each rule fires, when it must not, how it fails
closed, what a malformed policy says, and what ``observe`` reports before a run completes.

Reasons are faultgate 0.4.1's, word for word, so reports of the two tools diff cleanly.
"""
from __future__ import annotations

import json
import random
from typing import Any

import pytest

from faultgate_stream.checks.policy import DEFAULT_DENY_PATTERNS, Policy, PolicyCheck, PolicyError, load_policy
from faultgate_stream.checks.policy.check import PROVISIONAL
from faultgate_stream.model.errors import InputError
from faultgate_stream.pipeline import check_spans
from faultgate_stream.testing import agent, simple_run, span, trace_id

PLAIN = {"allow": ["lookup", "refund"]}


def judge(policy: dict[str, Any] | Policy | None, spans: list) -> tuple[Any, Any]:
    """(the policy result, the run's verdict), spans arriving one at a time in list order."""
    if isinstance(policy, dict):
        policy = Policy.from_mapping(policy)
    (verdict,) = check_spans([[s] for s in spans], [PolicyCheck(policy)])
    (result,) = verdict.results
    return result, verdict


def reasons(policy: dict[str, Any], calls: list[tuple[str, Any, Any]], **root: Any) -> list[str]:
    r, _ = judge(policy, simple_run(calls, **root))
    return r.reason.split("; ") if r.fired else []


def call(t: str, parent: str | None, name: str, arguments: Any = "", result: Any = "", *, at: float = 1.0,
         status: int = 0, **attrs: Any):
    """A tool span with extra attributes (``faultgate__confirmed=True``, ``error__type=...``)."""
    a = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
         "gen_ai.tool.call.arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
         "gen_ai.tool.call.result": result if isinstance(result, str) else json.dumps(result)}
    a.update({k.replace("__", "."): v for k, v in attrs.items()})
    return span(t, f"execute_tool {name}", parent=parent, start_s=at, status=status, attributes=a)


# --- defaults, loading ------------------------------------------------------------------------


def test_without_a_policy_only_the_default_deny_patterns_apply():
    assert Policy().deny_patterns == DEFAULT_DENY_PATTERNS and Policy().only_defaults
    r, _ = judge(None, simple_run([("shell", {"cmd": "rm -rf /"}, "ok"), ("read", {"path": "/etc/passwd"}, "x")]))
    assert r.fired and r.reason == "step 2: argument matches denied pattern '/etc/(passwd|shadow)'"


def test_no_policy_is_set_up_as_the_empty_policy_is():
    # PolicyCheck() takes a path that skips the schema (start-up, issue 12): it must be the
    # check PolicyCheck(Policy()) is, part for part and verdict for verdict
    bare, empty = PolicyCheck(), PolicyCheck(Policy())
    parts = ("_allow", "_size", "_rules", "_budgets", "_windows", "_deny_only", "_reads", "_roots")
    assert {k: getattr(bare, k) for k in parts} == {k: getattr(empty, k) for k in parts}
    assert bare.deny == empty.deny and bare.policy == empty.policy == Policy()
    run = simple_run([("fetch", {"url": "file:///etc/shadow"}, "x"), ("search", {"q": "../up"}, "y"),
                      ("search", {"q": "plain"}, "z")])
    (a,), (b,) = (check_spans([[s] for s in run], [c])[0].results for c in (bare, empty))
    assert (a.fired, a.reason) == (b.fired, b.reason) and a.fired


def test_a_clean_run_says_how_many_calls_were_within_policy():
    r, _ = judge(PLAIN, simple_run([("lookup", {"id": 1}, "{}"), ("refund", {"amount": 5}, "ok")]))
    assert not r.fired and r.reason == "2 calls within policy"


def test_a_policy_loads_the_same_from_json_and_yaml(tmp_path):
    doc = {"allow": ["a", "b"], "limits": [{"tool": "a", "arg": "x.y", "max": 5}],
           "requires": [{"tool": "b", "after": ["a", "c"], "result": [{"path": "s", "in": ["p"]}]}],
           "require_complete": True}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    (tmp_path / "p.yaml").write_text(
        "allow: [a, b]\nlimits:\n  - {tool: a, arg: x.y, max: 5}\n"
        "requires:\n  - tool: b\n    after: [a, c]\n    result: [{path: s, in: [p]}]\nrequire_complete: true\n")
    assert load_policy(tmp_path / "p.json") == load_policy(tmp_path / "p.yaml") == Policy.from_mapping(doc)


def test_an_empty_yaml_policy_is_the_policy_without_a_file(tmp_path):
    (tmp_path / "p.yaml").write_text("# nothing yet\n")
    assert load_policy(tmp_path / "p.yaml") == Policy()


def test_files_that_cannot_be_read_as_a_policy_are_input_errors_naming_the_file(tmp_path):
    (tmp_path / "bad.json").write_text("{nope")
    (tmp_path / "bad.yaml").write_text("a: [")
    for name, says in (("bad.json", "not valid JSON"), ("bad.yaml", "not valid YAML"), ("missing.json", "cannot read")):
        with pytest.raises(InputError, match=says) as e:
            load_policy(tmp_path / name)
        assert name in str(e.value)


def test_a_policy_is_immutable_and_one_check_serves_many_runs():
    check = PolicyCheck(Policy.from_mapping({"max_calls": 1}))
    with pytest.raises(AttributeError):
        check.policy.max_calls = 5  # type: ignore[misc]
    runs = [simple_run([("a", {}, "")] * n) for n in (2, 1, 3)]
    verdicts = check_spans(runs, [check])
    assert [v.results[0].fired for v in verdicts] == [True, False, True]


# --- malformed policies: every message, in faultgate's words ----------------------------------

L = {"tool": "refund", "arg": "amount", "max": 5}
R = {"tool": "cancel", "after": "lookup"}
MALFORMED: list[tuple[str, Any, list[str]]] = [
    ("not an object", ["allow"], ["policy: must be an object of policy keys, not list"]),
    ("unknown top-level keys", {"alow": [], "limit": []}, ["policy: unknown keys ['alow', 'limit']"]),
    ("allow not a list", {"allow": "search"}, ["policy: allow must be a list of tool names"]),
    ("deny_patterns not a list", {"deny_patterns": "etc"}, ["policy: deny_patterns must be a list of regular expressions"]),
    ("deny pattern that does not compile", {"deny_patterns": ["ok", "(unclosed"]},
     ["policy: deny_patterns[1] is not a valid regular expression (missing ), unterminated subpattern at position 0)"]),
    ("max_calls not a whole number", {"max_calls": "10"}, ["policy: max_calls must be a whole number >= 0"]),
    ("max_arg_chars negative", {"max_arg_chars": -1}, ["policy: max_arg_chars must be a whole number >= 0"]),
    ("limits not a list", {"limits": {}}, ["policy: limits must be a list"]),
    ("limit not an object", {"limits": [3]}, ["policy: limits[0] must be an object"]),
    ("limit without tool and arg", {"limits": [{"max": 1}]}, ["policy: limits[0] needs 'arg' and 'tool'"]),
    ("limit with an unknown key", {"limits": [{**L, "maximum": 3}]}, ["policy: limits[0] has unknown keys ['maximum']"]),
    ("limit max not a number", {"limits": [{**L, "max": "5"}]}, ["policy: limits[0].max must be a finite number"]),
    ("limit max infinite", {"limits": [{**L, "max": float("inf")}]}, ["policy: limits[0].max must be a finite number"]),
    ("limit min NaN", {"limits": [{**L, "min": float("nan")}]}, ["policy: limits[0].min must be a finite number"]),
    ("limit max a boolean", {"limits": [{**L, "max": True}]}, ["policy: limits[0].max must be a finite number"]),
    ("limit tool not a string", {"limits": [{**L, "tool": 3}]}, ["policy: limits[0].tool must be a string"]),
    ("limit without a bound", {"limits": [{"tool": "t", "arg": "a"}]}, ["policy: limits[0] needs 'min' or 'max'"]),
    ("limit min above max", {"limits": [{**L, "min": 10}]}, ["policy: limits[0] min 10 > max 5"]),
    ("identity null", {"identity": None}, ["policy: identity must be an object"]),
    ("identity without arg", {"identity": {}}, ["policy: identity needs 'arg'"]),
    ("identity tools not a list", {"identity": {"arg": "x", "tools": "t"}}, ["policy: identity.tools must be a list of tool names"]),
    ("identity session_attr not a string", {"identity": {"arg": "x", "session_attr": 3}},
     ["policy: identity.session_attr must be a string"]),
    ("requires not a list", {"requires": "x"}, ["policy: requires must be a list"]),
    ("requirement without tool", {"requires": [{"after": "x"}]}, ["policy: requires[0] needs 'tool'"]),
    ("after an empty list", {"requires": [{**R, "after": []}]},
     ["policy: requires[0].after must be a tool name or a list of tool names"]),
    ("after not names", {"requires": [{**R, "after": [1]}]},
     ["policy: requires[0].after must be a tool name or a list of tool names"]),
    ("result_contains not a string", {"requires": [{**R, "result_contains": 3}]},
     ["policy: requires[0].result_contains must be a string"]),
    ("same_arg null", {"requires": [{**R, "same_arg": None}]}, ["policy: requires[0].same_arg must be a string"]),
    ("success not a flag", {"requires": [{**R, "success": "yes"}]}, ["policy: requires[0].success must be true or false"]),
    ("latest not a flag", {"requires": [{**R, "latest": 1}]}, ["policy: requires[0].latest must be true or false"]),
    ("invalidated_by empty", {"requires": [{**R, "invalidated_by": []}]},
     ["policy: requires[0].invalidated_by must be a non-empty list of names"]),
    ("invalidated_by with an empty name", {"requires": [{**R, "invalidated_by": [""]}]},
     ["policy: requires[0].invalidated_by must be a non-empty list of names"]),
    ("result empty", {"requires": [{**R, "result": []}]}, ["policy: requires[0].result must be a non-empty list of predicates"]),
    ("predicate not an object", {"requires": [{**R, "result": [3]}]}, ["policy: requires[0].result[0] must be an object"]),
    ("predicate without path", {"requires": [{**R, "result": [{"equals": 1}]}]},
     ["policy: requires[0].result[0] needs a 'path' (a dotted path into the JSON result)"]),
    ("predicate with an empty path", {"requires": [{**R, "result": [{"path": "", "equals": 1}]}]},
     ["policy: requires[0].result[0] needs a 'path' (a dotted path into the JSON result)"]),
    ("predicate without operator", {"requires": [{**R, "result": [{"path": "s"}]}]},
     ["policy: requires[0].result[0] needs exactly one of equals, in, not_in, exists"]),
    ("predicate with two operators", {"requires": [{**R, "result": [{"path": "s", "equals": 1, "in": [1]}]}]},
     ["policy: requires[0].result[0] needs exactly one of equals, in, not_in, exists"]),
    ("predicate with a misspelt operator", {"requires": [{**R, "result": [{"path": "s", "eq": 1}]}]},
     ["policy: requires[0].result[0] has unknown keys ['eq']",
      "policy: requires[0].result[0] needs exactly one of equals, in, not_in, exists"]),
    ("in not a list", {"requires": [{**R, "result": [{"path": "s", "in": "x"}]}]},
     ["policy: requires[0].result[0].in must be a list"]),
    ("not_in not a list", {"requires": [{**R, "result": [{"path": "s", "not_in": 3}]}]},
     ["policy: requires[0].result[0].not_in must be a list"]),
    ("exists not a flag", {"requires": [{**R, "result": [{"path": "s", "exists": "yes"}]}]},
     ["policy: requires[0].result[0].exists must be true or false"]),
    ("per-value max zero", {"max_calls_per_arg": [{"tools": ["t"], "arg": "a", "max": 0}]},
     ["policy: max_calls_per_arg[0].max must be a whole number >= 1"]),
    ("per-value max fractional", {"max_calls_per_arg": [{"tools": ["t"], "arg": "a", "max": 1.5}]},
     ["policy: max_calls_per_arg[0].max must be a whole number >= 1"]),
    ("per-value tools a string", {"max_calls_per_arg": [{"tools": "t", "arg": "a", "max": 1}]},
     ["policy: max_calls_per_arg[0].tools must be a list of tool names"]),
    ("per-value without max", {"max_calls_per_arg": [{"tools": ["t"], "arg": "a"}]},
     ["policy: max_calls_per_arg[0] needs 'max'"]),
    ("per-value with min", {"max_calls_per_arg": [{"tools": ["t"], "arg": "a", "max": 1, "min": 0}]},
     ["policy: max_calls_per_arg[0] has unknown keys ['min']"]),
    ("allowed empty", {"values": [{"tool": "t", "arg": "a", "allowed": []}]}, ["policy: values[0].allowed must be a list of strings"]),
    ("allowed not strings", {"values": [{"tool": "t", "arg": "a", "allowed": [1]}]},
     ["policy: values[0].allowed must be a list of strings"]),
    ("values without allowed", {"values": [{"tool": "t", "arg": "a"}]}, ["policy: values[0] needs 'allowed'"]),
    ("required args with an empty name", {"required_args": [{"tool": "t", "args": [""]}]},
     ["policy: required_args[0].args must be a non-empty list of names"]),
    ("required args a string", {"required_args": [{"tool": "t", "args": "a"}]},
     ["policy: required_args[0].args must be a non-empty list of names"]),
    ("confirmation not an object", {"confirmation": []}, ["policy: confirmation must be an object"]),
    ("confirmation without by and tools", {"confirmation": {}}, ["policy: confirmation needs 'by' and 'tools'"]),
    ("confirmation same_arg not a string", {"confirmation": {"tools": ["t"], "by": "c", "same_arg": 1}},
     ["policy: confirmation.same_arg must be a string"]),
    ("require_complete not a flag", {"require_complete": "yes"}, ["policy: require_complete must be true or false"]),
]


@pytest.mark.parametrize("name,doc,expected", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_policy_is_an_input_error_naming_the_key_path(name, doc, expected):
    with pytest.raises(PolicyError) as e:
        Policy.from_mapping(doc)
    assert isinstance(e.value, InputError)
    assert e.value.problems == expected
    assert str(e.value) == "\n".join(expected)


def test_every_problem_in_a_policy_is_reported_at_once():
    doc = {"bogus": 1, "limits": [{"tool": "t", "arg": "a", "max": "x"}, {"tool": "t", "arg": "a"}],
           "requires": [{"tool": "t"}], "require_complete": 1}
    with pytest.raises(PolicyError) as e:
        Policy.from_mapping(doc)
    assert e.value.problems == [
        "policy: unknown keys ['bogus']",
        "policy: limits[0].max must be a finite number",
        "policy: limits[1] needs 'min' or 'max'",
        "policy: requires[0] needs 'after'",
        "policy: require_complete must be true or false",
    ]


def test_a_non_finite_limit_in_a_json_file_is_refused(tmp_path):
    (tmp_path / "p.json").write_text('{"limits": [{"tool": "t", "arg": "a", "max": Infinity}]}')
    with pytest.raises(PolicyError, match=r"^policy: limits\[0\].max must be a finite number$"):
        load_policy(tmp_path / "p.json")


def test_null_max_calls_is_off_as_in_faultgate():
    assert Policy.from_mapping({"max_calls": None, "max_arg_chars": None}) == Policy()


# --- allow, deny_patterns, max_arg_chars, max_calls -------------------------------------------


def test_a_tool_outside_the_allowlist_is_a_violation():
    assert reasons(PLAIN, [("lookup", {}, ""), ("delete_all", {}, "")]) == [
        "step 2: tool 'delete_all' not in allowlist"]


def test_deny_patterns_in_a_policy_replace_the_defaults():
    calls = [("read", {"path": "../x"}, ""), ("q", {"sql": "DROP table"}, "")]
    assert reasons({"deny_patterns": ["drop\\s+table"]}, calls) == [
        "step 2: argument matches denied pattern 'drop\\\\s+table'"]
    assert reasons({"deny_patterns": []}, calls) == []


def test_oversized_arguments_are_a_violation():
    assert reasons({"max_arg_chars": 20}, [("search", {"q": "x" * 30}, "")]) == ["step 1: arguments 39 chars > 20"]


def test_the_run_may_make_max_calls_calls_and_not_one_more():
    assert reasons({"max_calls": 2}, [("a", {}, "")] * 2) == []
    assert reasons({"max_calls": 2}, [("a", {}, "")] * 3) == ["3 tool calls > max 2"]


# --- limits -------------------------------------------------------------------------------------

REFUND = {"limits": [{"tool": "issue_refund", "arg": "amount", "min": 0, "max": 500}]}


def test_a_limit_bounds_a_numeric_argument_from_both_sides():
    assert reasons(REFUND, [("issue_refund", {"amount": 900}, "")]) == ["step 1: issue_refund.amount 900 > max 500"]
    assert reasons(REFUND, [("issue_refund", {"amount": -5}, "")]) == ["step 1: issue_refund.amount -5 < min 0"]
    assert reasons(REFUND, [("issue_refund", {"amount": 500}, ""), ("other_tool", {"amount": 10**6}, "")]) == []


def test_money_written_as_text_is_read_as_a_number():
    assert reasons(REFUND, [("issue_refund", {"amount": "$1,200.50"}, "")]) == [
        "step 1: issue_refund.amount 1200.5 > max 500"]
    assert reasons(REFUND, [("issue_refund", {"amount": " $499.99 "}, "")]) == []


def test_a_limit_reads_a_dotted_path_and_arguments_encoded_twice():
    policy = {"limits": [{"tool": "pay", "arg": "refund.amount", "max": 100}]}
    twice = json.dumps(json.dumps({"refund": {"amount": 250}}))
    assert reasons(policy, [("pay", twice, "")]) == ["step 1: pay.refund.amount 250 > max 100"]


def test_a_limit_fails_closed_on_values_that_are_not_numbers_and_on_unreadable_arguments():
    assert reasons(REFUND, [("issue_refund", {"amount": "lots"}, "")]) == [
        "step 1: issue_refund.amount 'lots' is not a number"]
    assert reasons(REFUND, [("issue_refund", {"amount": True}, "")]) == [
        "step 1: issue_refund.amount True is not a number"]
    assert reasons(REFUND, [("issue_refund", "amount=900", "")]) == [
        "step 1: issue_refund arguments are not a JSON object, cannot check amount"]


def test_an_absent_argument_or_no_arguments_at_all_is_not_a_limit_violation():
    assert reasons(REFUND, [("issue_refund", {"note": "x"}, ""), ("issue_refund", "", "")]) == []


# --- identity -----------------------------------------------------------------------------------

IDENT = {"identity": {"arg": "customer_id", "tools": ["issue_refund", "modify_billing_record"]}}


def test_an_argument_that_is_not_the_session_user_is_a_violation():
    assert reasons(IDENT, [("modify_billing_record", {"customer_id": "C-999"}, "")], enduser__id="C-123") == [
        "step 1: modify_billing_record.customer_id 'C-999' != session enduser.id 'C-123'"]


def test_identity_compares_as_trimmed_text():
    assert reasons(IDENT, [("issue_refund", {"customer_id": " 123 "}, "")], enduser__id=123) == []


def test_identity_without_the_session_attribute_cannot_be_verified_and_fails_closed():
    assert reasons(IDENT, [("issue_refund", {"customer_id": "C-1"}, "")]) == [
        "step 1: cannot verify customer_id, root span has no enduser.id"]


def test_identity_reads_the_named_session_attribute():
    policy = {"identity": {"arg": "account", "session_attr": "app.account"}}
    assert reasons(policy, [("x", {"account": "A"}, "")], app__account="A", enduser__id="B") == []


def test_identity_checks_only_listed_tools_and_only_calls_that_carry_the_argument():
    calls = [("lookup_order", {"customer_id": "C-999"}, ""), ("issue_refund", {"order": 1}, "")]
    assert reasons(IDENT, calls, enduser__id="C-123") == []


def test_identity_fails_closed_on_unreadable_arguments_of_a_listed_tool():
    assert reasons(IDENT, [("issue_refund", "C-999", "")], enduser__id="C-123") == [
        "step 1: issue_refund arguments are not a JSON object, cannot check customer_id"]


def test_identity_without_a_tool_list_fails_closed_only_when_the_argument_name_shows_in_unreadable_text():
    policy = {"identity": {"arg": "who.customer_id"}}
    calls = [("search", "plain text", ""), ("update", "customer_id=C-9", "")]
    assert reasons(policy, calls, enduser__id="C-1") == [
        "step 2: update arguments are not a JSON object, cannot check who.customer_id"]


# --- values, required_args ----------------------------------------------------------------------

REASONS = {"values": [{"tool": "cancel", "arg": "reason", "allowed": ["no longer needed", "ordered by mistake"]}]}


def test_a_value_outside_the_allowed_list_is_a_violation_compared_trimmed():
    assert reasons(REASONS, [("cancel", {"reason": " no longer needed "}, "")]) == []
    assert reasons(REASONS, [("cancel", {"reason": "found it cheaper"}, "")]) == [
        "step 1: cancel.reason 'found it cheaper' not in allowed values"]


def test_values_judge_an_argument_that_is_there_and_fail_closed_on_unreadable_arguments():
    assert reasons(REASONS, [("cancel", {"order_id": "#1"}, "")]) == []
    assert reasons(REASONS, [("cancel", "[1]", "")]) == [
        "step 1: cancel arguments are not a JSON object, cannot check reason"]


def test_required_arguments_must_be_present_and_not_empty():
    policy = {"required_args": [{"tool": "cancel", "args": ["order_id", "reason", "meta.by"]}]}
    calls = [("cancel", {"order_id": "#1", "reason": "x", "meta": {"by": "me"}}, ""),
             ("cancel", {"order_id": " ", "reason": [], "meta": {}}, ""),
             ("cancel", "nope", "")]
    assert reasons(policy, calls) == [
        "step 2: cancel missing required argument order_id",
        "step 2: cancel missing required argument reason",
        "step 2: cancel missing required argument meta.by",
        "step 3: cancel arguments are not a JSON object, cannot check required order_id",
    ]


# --- requires -------------------------------------------------------------------------------------


def test_a_prerequisite_must_come_first_and_any_one_of_a_list_will_do():
    policy = {"requires": [{"tool": "get_user", "after": ["find_by_email", "find_by_zip"]}]}
    assert reasons(policy, [("find_by_zip", {}, ""), ("get_user", {}, "")]) == []
    assert reasons(policy, [("get_user", {}, ""), ("find_by_zip", {}, "")]) == [
        "step 1: get_user before find_by_email or find_by_zip"]


def test_result_contains_is_a_substring_of_the_earlier_result():
    policy = {"requires": [{"tool": "modify", "after": "verify", "result_contains": "VERIFIED"}]}
    assert reasons(policy, [("verify", {}, "status: VERIFIED"), ("modify", {}, "")]) == []
    assert reasons(policy, [("verify", {}, "status: DENIED"), ("modify", {}, "")]) == [
        "step 2: modify before verify returned 'VERIFIED'"]


def test_same_arg_binds_the_prerequisite_to_the_same_record():
    policy = {"requires": [{"tool": "cancel", "after": "get_order", "result_contains": "pending",
                            "same_arg": "order_id"}]}
    calls = [("get_order", {"order_id": "#A"}, "pending"), ("cancel", {"order_id": "#B"}, ""),
             ("cancel", {"order_id": " #A"}, ""), ("cancel", {}, "")]
    assert reasons(policy, calls) == [
        "step 2: cancel before get_order returned 'pending' for the same order_id '#B'",
        "step 4: cancel has no readable order_id, cannot match it to get_order",
    ]


AUTH = {"requires": [{"tool": "cancel", "after": ["find_by_email", "find_by_zip"], "success": True}]}


def test_success_ignores_a_failed_prerequisite():
    assert reasons(AUTH, [("find_by_email", {}, "Error: User not found"), ("cancel", {}, "")]) == [
        "step 2: cancel before a successful find_by_email or find_by_zip (step 1 find_by_email: failed)"]
    assert reasons(AUTH, [("find_by_email", {}, "Error: no"), ("find_by_zip", {}, "u1"), ("cancel", {}, "")]) == []


def test_success_also_reads_an_error_on_the_prerequisites_own_tool_span():
    t = trace_id()
    root = agent(t, answer="done")
    for bad in ({"status": 2}, {"error__type": "Timeout"}):
        spans = [root, call(t, root.span_id, "find_by_zip", {}, "u1", at=1, **bad),
                 call(t, root.span_id, "cancel", {}, "", at=2)]
        r, _ = judge(AUTH, spans)
        assert r.reason == ("step 2: cancel before a successful find_by_email or find_by_zip "
                            "(step 1 find_by_zip: failed)")


STATUS = {"requires": [{"tool": "cancel", "after": "get_order", "same_arg": "order_id",
                        "result": [{"path": "status", "equals": "pending"}]}]}


def test_result_predicates_read_the_earlier_result_as_json():
    ok = [("get_order", {"order_id": "#1"}, {"status": "pending"}), ("cancel", {"order_id": "#1"}, "")]
    assert reasons(STATUS, ok) == []
    incidental = [("get_order", {"order_id": "#1"}, {"status": "delivered", "note": "previously pending"}),
                  ("cancel", {"order_id": "#1"}, "")]
    assert reasons(STATUS, incidental) == [
        "step 2: cancel before get_order with status == 'pending' for the same order_id '#1' "
        "(step 1 get_order: status is 'delivered', not 'pending')"]


def test_a_result_that_is_not_json_or_lacks_the_path_does_not_meet_a_predicate():
    for result, why in (("Error: order #1 is not pending", "result is not JSON"),
                        ({"state": "pending"}, "result has no status")):
        assert reasons(STATUS, [("get_order", {"order_id": "#1"}, result), ("cancel", {"order_id": "#1"}, "")]) == [
            "step 2: cancel before get_order with status == 'pending' for the same order_id '#1' "
            f"(step 1 get_order: {why})"]


def test_predicates_keep_json_types_apart_and_index_lists():
    def met(pred: dict, result: Any) -> bool:
        policy = {"requires": [{"tool": "b", "after": "a", "result": [pred]}]}
        return reasons(policy, [("a", {}, result), ("b", {}, "")]) == []

    assert met({"path": "ok", "equals": True}, {"ok": True}) and not met({"path": "ok", "equals": True}, {"ok": 1})
    assert not met({"path": "n", "equals": 1}, {"n": "1"}) and met({"path": "n", "equals": 1}, {"n": 1.0})
    assert met({"path": "items.1.s", "in": ["a", "b"]}, {"items": [{"s": "x"}, {"s": "b"}]})
    assert not met({"path": "items.2.s", "in": ["a", "b"]}, {"items": [{"s": "x"}, {"s": "b"}]})
    assert met({"path": "0.s", "not_in": ["gone"]}, [{"s": "here"}])
    assert not met({"path": "0.s", "not_in": ["gone"]}, [{"s": "gone"}])
    assert met({"path": "refund", "exists": False}, {"s": 1}) and not met({"path": "refund", "exists": True}, {"s": 1})
    assert met({"path": "s", "equals": "p"}, json.dumps(json.dumps({"s": "p"})))  # a result encoded twice


def test_each_predicate_says_why_it_was_not_met():
    cases = [({"path": "s", "in": ["a", "b"]}, "s is 'c', not in ['a', 'b']"),
             ({"path": "s", "not_in": ["c"]}, "s is 'c'"),
             ({"path": "s", "exists": False}, "result has s"), ({"path": "t", "exists": True}, "result has no t")]
    for pred, why in cases:
        policy = {"requires": [{"tool": "b", "after": "a", "result": [pred]}]}
        (reason,) = reasons(policy, [("a", {}, {"s": "c"}), ("b", {}, "")])
        assert reason.endswith(f"(step 1 a: {why})"), reason


LATEST = {"requires": [{"tool": "modify", "after": "get_order", "same_arg": "order_id", "latest": True, "success": True,
                        "result": [{"path": "status", "equals": "pending"}], "invalidated_by": ["cancel", "modify"]}]}


def test_latest_counts_only_the_most_recent_lookup_of_the_record():
    calls = [("get_order", {"order_id": "#1"}, {"status": "pending"}),
             ("get_order", {"order_id": "#1"}, {"status": "cancelled"}),
             ("get_order", {"order_id": "#2"}, {"status": "pending"}),
             ("modify", {"order_id": "#1"}, "")]
    assert reasons(LATEST, calls) == [
        "step 4: modify before a successful get_order with status == 'pending' for the same order_id '#1' "
        "(latest get_order at step 2: status is 'cancelled', not 'pending')"]


def test_a_successful_invalidating_call_voids_earlier_lookups_and_a_fresh_one_restores_them():
    stale = [("get_order", {"order_id": "#W1"}, {"status": "pending"}), ("cancel", {"order_id": "#W1"}, "ok"),
             ("modify", {"order_id": "#W1"}, "")]
    assert reasons(LATEST, stale) == [
        "step 3: modify before a successful get_order with status == 'pending' for the same order_id '#W1' "
        "(get_order at step 1 voided by cancel at step 2)"]
    fresh = stale[:2] + [("get_order", {"order_id": "#W1"}, {"status": "pending"}), ("modify", {"order_id": "#W1"}, "")]
    assert reasons(LATEST, fresh) == []


def test_a_failed_or_other_record_invalidating_call_voids_nothing():
    calls = [("get_order", {"order_id": "#1"}, {"status": "pending"}), ("cancel", {"order_id": "#1"}, "Error: refused"),
             ("cancel", {"order_id": "#2"}, "ok"), ("modify", {"order_id": "#1"}, "")]
    assert reasons(LATEST, calls) == []


def test_a_call_that_is_its_own_invalidator_needs_a_fresh_lookup_for_the_next_one():
    calls = [("get_order", {"order_id": "#1"}, {"status": "pending"}), ("modify", {"order_id": "#1"}, "ok"),
             ("modify", {"order_id": "#1"}, "ok")]
    assert reasons(LATEST, calls) == [
        "step 3: modify before a successful get_order with status == 'pending' for the same order_id '#1' "
        "(get_order at step 1 voided by modify at step 2)"]


def test_a_stateful_requirement_with_no_candidate_at_all_names_no_step():
    assert reasons(LATEST, [("modify", {"order_id": "#1"}, "")]) == [
        "step 1: modify before a successful get_order with status == 'pending' for the same order_id '#1'"]


# --- max_calls_per_arg ----------------------------------------------------------------------------

ONCE = {"max_calls_per_arg": [{"tools": ["modify_items", "exchange"], "arg": "order_id", "max": 1}]}


def test_a_per_value_budget_counts_successful_calls_per_record():
    calls = [("modify_items", {"order_id": "#1"}, "ok"), ("exchange", {"order_id": "#2"}, "ok"),
             ("exchange", {"order_id": "#1"}, "ok"), ("modify_items", {"order_id": "#1"}, "ok")]
    assert reasons(ONCE, calls) == [
        "step 3: 2 successful exchange/modify_items calls for order_id '#1' > max 1 (steps 1, 3)"]


def test_an_errored_call_is_not_counted_against_a_per_value_budget():
    calls = [("modify_items", {"order_id": "#1"}, "Error: Item not found"), ("modify_items", {"order_id": "#1"}, "ok")]
    assert reasons(ONCE, calls) == []


def test_a_call_without_the_counted_argument_is_a_violation():
    assert reasons(ONCE, [("exchange", {"items": [1]}, "ok")]) == [
        "step 1: exchange has no readable order_id, cannot count it against max 1 per order_id"]


# --- confirmation ---------------------------------------------------------------------------------

CONFIRM = {"confirmation": {"tools": ["cancel"], "by": "confirm_action", "same_arg": "order_id"}}


def test_a_mutation_needs_an_earlier_successful_confirmation_of_the_same_record():
    assert reasons(CONFIRM, [("confirm_action", {"order_id": "#1"}, "{}"), ("cancel", {"order_id": "#1"}, "")]) == []
    for earlier in ([], [("confirm_action", {"order_id": "#2"}, "{}")],
                    [("confirm_action", {"order_id": "#1"}, '{"error": "user said no"}')]):
        assert reasons(CONFIRM, [*earlier, ("cancel", {"order_id": "#1"}, "")]) == [
            f"step {len(earlier) + 1}: cancel without an earlier successful confirm_action for the same order_id '#1' "
            "(or faultgate.confirmed = true on its span)"]


def test_confirmed_on_the_mutations_own_span_is_enough():
    t = trace_id()
    root = agent(t, answer="done")
    r, _ = judge(CONFIRM, [root, call(t, root.span_id, "cancel", {"order_id": "#1"}, "ok", faultgate__confirmed=True)])
    assert not r.fired


def test_confirmation_without_same_arg_takes_any_confirmation_and_without_it_fails_closed():
    policy = {"confirmation": {"tools": ["cancel"], "by": "confirm_action"}}
    assert reasons(policy, [("confirm_action", {"order_id": "#2"}, "{}"), ("cancel", {"order_id": "#1"}, "")]) == []
    assert reasons(CONFIRM, [("confirm_action", {}, "{}"), ("cancel", "#1", "")]) == [
        "step 2: cancel has no readable order_id, cannot match it to a confirm_action"]


# --- require_complete -----------------------------------------------------------------------------

COMPLETE = {"require_complete": True}


def test_a_complete_run_passes_require_complete():
    assert reasons(COMPLETE, [("a", {}, "")], faultgate__termination="user_stop") == []


def test_an_incomplete_run_is_a_violation():
    assert reasons(COMPLETE, [("a", {}, "")], answer="") == ["run incomplete: no final answer"]
    assert reasons(COMPLETE, [], faultgate__termination="max_steps reached") == [
        "run incomplete: terminated 'max_steps reached'"]
    t = trace_id()
    root = agent(t, answer="done")._replace(status_code=2, end_ns=0)
    r, _ = judge(COMPLETE, [root])
    assert r.reason == ("run incomplete: root span error (Span status error: Code 2); "
                        "run incomplete: root span has no end time")


def test_a_run_without_a_root_is_incomplete():
    t = trace_id()
    r, _ = judge(COMPLETE, [call(t, None, "a", {}, "", at=1)._replace(parent_id="0" * 16)])
    assert r.reason == "run incomplete: no root span"


# --- the verdict as a whole -----------------------------------------------------------------------


def test_reasons_come_in_faultgates_order():
    policy = {"allow": ["cancel", "get_order"], "max_arg_chars": 30, "max_calls": 2,
              "limits": [{"tool": "cancel", "arg": "fee", "max": 1}],
              "identity": {"arg": "user", "tools": ["cancel"]},
              "values": [{"tool": "cancel", "arg": "reason", "allowed": ["x"]}],
              "requires": [{"tool": "cancel", "after": "get_order"}],
              "required_args": [{"tool": "cancel", "args": ["order_id"]}],
              "confirmation": {"tools": ["cancel"], "by": "ok"},
              "max_calls_per_arg": [{"tools": ["cancel"], "arg": "user", "max": 1}],
              "require_complete": True}
    args = {"fee": 5, "user": "u2", "reason": "y", "path": "../"}
    calls = [("cancel", args, ""), ("cancel", args, ""), ("rm", {}, "")]
    assert reasons(policy, calls, answer="", enduser__id="u1") == [
        "step 1: argument matches denied pattern '\\\\.\\\\./'",
        "step 1: arguments 54 chars > 30",
        "step 1: cancel.fee 5 > max 1",
        "step 1: cancel.user 'u2' != session enduser.id 'u1'",
        "step 1: cancel.reason 'y' not in allowed values",
        "step 1: cancel before get_order",
        "step 1: cancel missing required argument order_id",
        "step 1: cancel without an earlier successful ok (or faultgate.confirmed = true on its span)",
        "step 2: argument matches denied pattern '\\\\.\\\\./'",
        "step 2: arguments 54 chars > 30",
        "step 2: cancel.fee 5 > max 1",
        "step 2: cancel.user 'u2' != session enduser.id 'u1'",
        "step 2: cancel.reason 'y' not in allowed values",
        "step 2: cancel before get_order",
        "step 2: cancel missing required argument order_id",
        "step 2: cancel without an earlier successful ok (or faultgate.confirmed = true on its span)",
        "step 3: tool 'rm' not in allowlist",
        "step 2: 2 successful cancel calls for user 'u2' > max 1 (steps 1, 2)",
        "run incomplete: no final answer",
        "3 tool calls > max 2",
    ]


def test_message_calls_of_a_chat_only_run_are_judged_like_tool_spans():
    t = trace_id()
    root = agent(t, answer="done", enduser__id="u1")

    def chat(at: float, calls: list[tuple[str, str, dict]], responses: list[tuple[str, str]]):
        attrs = {"gen_ai.operation.name": "chat",
                 "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                     {"type": "tool_call", "id": cid, "name": n, "arguments": a} for cid, n, a in calls]}])}
        if responses:
            attrs["gen_ai.input.messages"] = json.dumps([{"role": "tool", "parts": [
                {"type": "tool_call_response", "id": cid, "result": res} for cid, res in responses]}])
        return span(t, "chat", parent=root.span_id, start_s=at, attributes=attrs)

    spans = [root, chat(1, [("c1", "find_by_zip", {"zip": "1"})], []),
             chat(2, [("c2", "cancel", {"order_id": "#1"})], [("c1", "Error: not found")]),
             chat(3, [], [("c2", "ok")])]
    r, v = judge(AUTH, spans)
    assert r.reason == "step 2: cancel before a successful find_by_email or find_by_zip (step 1 find_by_zip: failed)"
    assert v.early[0].reason.startswith(f"span {spans[2].span_id}: cancel before a successful")


# --- early findings -------------------------------------------------------------------------------


def early(policy: dict[str, Any], spans: list) -> tuple[list[str], Any]:
    r, v = judge(policy, spans)
    return [f.reason for f in v.early], r


def test_each_call_level_violation_fires_when_its_span_arrives():
    cases = [
        (PLAIN, ("rm", {}, ""), "tool 'rm' not in allowlist"),
        ({}, ("read", {"p": "file:///etc"}, ""), "argument matches denied pattern 'file://'"),
        ({"max_arg_chars": 5}, ("q", {"q": "long"}, ""), "arguments 13 chars > 5"),
        (REFUND, ("issue_refund", {"amount": 900}, ""), "issue_refund.amount 900 > max 500"),
        (REASONS, ("cancel", {"reason": "nope"}, ""), "cancel.reason 'nope' not in allowed values"),
        ({"required_args": [{"tool": "cancel", "args": ["reason"]}]}, ("cancel", {}, ""),
         "cancel missing required argument reason"),
    ]
    for policy, tool_call, said in cases:
        spans = simple_run([("lookup", {}, ""), tool_call, ("lookup", {}, "")])
        found, r = early(policy, spans)
        assert found == [f"span {spans[2].span_id}: {said}"] and r.fired, said


def test_identity_fires_early_once_the_root_with_the_session_user_has_arrived():
    spans = simple_run([("issue_refund", {"customer_id": "C-9"}, "")], enduser__id="C-1")
    found, _ = early(IDENT, spans)
    assert found == [f"span {spans[1].span_id}: issue_refund.customer_id 'C-9' != session enduser.id 'C-1'"]
    root_last = spans[1:] + spans[:1]
    found, r = early(IDENT, root_last)
    assert found == [] and r.reason == "step 1: issue_refund.customer_id 'C-9' != session enduser.id 'C-1'"


def test_identity_fails_closed_early_when_the_arrived_root_lacks_the_session_attribute():
    spans = simple_run([("issue_refund", {"customer_id": "C-9"}, "")])
    assert early(IDENT, spans)[0] == [
        f"span {spans[1].span_id}: cannot verify customer_id, root span has no enduser.id"]


def test_identity_does_not_fire_early_against_a_nested_agent():
    t = trace_id()
    root = agent(t, answer="done", enduser__id="C-1")
    sub = agent(t, name="helper", parent=root.span_id, start_s=0.5, end_s=5)
    spans = [root, sub, call(t, sub.span_id, "issue_refund", {"customer_id": "C-9"}, "", at=1)]
    found, r = early(IDENT, spans)
    assert found == [] and r.fired


def test_a_missing_prerequisite_fires_early_as_provisional_and_the_verdict_decides():
    spans = simple_run([("find_by_zip", {}, "u1"), ("cancel", {}, "")])
    in_order, r = early(AUTH, spans)
    assert in_order == [] and not r.fired
    late = [spans[0], spans[2], spans[1]]  # the prerequisite started first but arrives last
    found, r = early(AUTH, late)
    assert found == [f"span {spans[2].span_id}: cancel before a successful find_by_email or find_by_zip{PROVISIONAL}"]
    assert not r.fired


def test_a_missing_confirmation_fires_early_as_provisional():
    spans = simple_run([("cancel", {"order_id": "#1"}, "ok")])
    (found,), r = early(CONFIRM, spans)
    assert found.endswith(PROVISIONAL) and r.fired


def test_the_call_past_max_calls_fires_when_it_arrives():
    spans = simple_run([("a", {}, "")] * 3)
    assert early({"max_calls": 2}, spans)[0] == [f"span {spans[3].span_id}: 3 tool calls > max 2"]


def test_a_message_call_and_the_tool_span_that_ran_it_count_once():
    t = trace_id()
    root = agent(t, answer="done")
    llm = span(t, "chat", parent=root.span_id, start_s=1, attributes={
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "c1", "name": "a", "arguments": {}}]}])})
    ran = call(t, root.span_id, "a", {}, "", at=2)._replace(tool=call(t, None, "a", {}, "").tool._replace(call_id="c1"))
    found, r = early({"max_calls": 1}, [root, llm, ran])
    assert found == [] and not r.fired


def test_order_dependent_rules_wait_for_the_verdict():
    policy = {"max_calls_per_arg": [{"tools": ["x"], "arg": "id", "max": 1}], "require_complete": True}
    found, r = early(policy, simple_run([("x", {"id": 1}, ""), ("x", {"id": 1}, "")], answer=""))
    assert found == [] and r.fired


def test_arrival_order_never_changes_the_verdict():
    policy = Policy.from_mapping({**LATEST, **CONFIRM, **IDENT, **ONCE, "allow": ["get_order", "modify", "cancel"],
                                  "max_calls": 4})
    calls = [("get_order", {"order_id": "#1"}, {"status": "pending"}), ("confirm_action", {"order_id": "#1"}, "{}"),
             ("cancel", {"order_id": "#1", "customer_id": "u"}, "ok"), ("modify", {"order_id": "#1"}, ""),
             ("get_order", {"order_id": "#1"}, {"status": "pending"}), ("modify_items", {"order_id": "#1"}, "ok")]
    spans = simple_run(calls, enduser__id="u")
    expected = judge(policy, spans)[0]
    rnd = random.Random(7)
    for _ in range(20):
        shuffled = rnd.sample(spans, len(spans))
        assert judge(policy, shuffled)[0] == expected


# --- deviations from faultgate, pinned (PARITY_DEVIATIONS.md) ------------------------------------


def test_result_equality_keeps_json_types_apart_inside_lists_and_objects_too():
    """faultgate compares `[1]` and `[true]` equal (it types the top level only), against its
    own README: comparison keeps JSON types apart."""
    policy = {"requires": [{"tool": "b", "after": "a", "result": [{"path": "flags", "equals": [True]}]}]}
    assert reasons(policy, [("a", {}, {"flags": [1]}), ("b", {}, "")]) == [
        "step 2: b before a with flags == [True] (step 1 a: flags is [1], not [True])"]
    assert reasons(policy, [("a", {}, {"flags": [True]}), ("b", {}, "")]) == []


def test_inputs_that_crash_faultgate_fail_closed_here():
    """faultgate raises on an integer too large for a float in a limited argument
    (OverflowError), on a non-ASCII digit in a result path (ValueError from int), and on
    arguments nested too deep for json (RecursionError)."""
    assert reasons(REFUND, [("issue_refund", '{"amount": 1' + "0" * 400 + "}", "")]) == [
        f"step 1: issue_refund.amount 1{'0' * 400} is not a number"]
    policy = {"requires": [{"tool": "b", "after": "a", "result": [{"path": "items.²", "exists": True}]}]}
    assert reasons(policy, [("a", {}, {"items": [1, 2, 3]}), ("b", {}, "")]) == [
        "step 2: b before a with items.² present (step 1 a: result has no items.²)"]
    assert reasons(REFUND, [("issue_refund", "[" * 100_000 + "]" * 100_000, "")]) == [
        "step 1: issue_refund arguments are not a JSON object, cannot check amount"]
