"""Operators' deny_patterns run on RE2, whose search time is linear in the text whatever
the pattern: ``(a+)+$`` against 26 bytes took Python's ``re`` 8.8 s under the assembler's
lock. This pins the engine (no timing threshold) and that a pattern RE2 cannot run is
refused when the policy loads, naming it."""
from __future__ import annotations

import pytest
import re2

from faultgate_stream.checks.policy import PolicyError, load_policy
from faultgate_stream.checks.policy.deny_patterns import DEFAULT_DENY_PATTERNS, DenyPatterns
from tests.checks.test_policy import reasons

NESTED = r"(a+)+$"
ATTACK = "a" * 25 + "!"   # 26 bytes: exponential for a backtracking engine


def test_every_deny_pattern_runs_on_re2_the_defaults_too():
    for deny in (DenyPatterns(), DenyPatterns((NESTED, r"drop\s+table"))):
        assert deny.engines and all(e is type(re2.compile("x")) for e in deny.engines)


def test_the_nested_quantifier_case_is_searched_by_re2_and_does_not_match():
    assert DenyPatterns((NESTED,)).first_match(ATTACK) is None
    assert DenyPatterns((NESTED,)).first_match("aaaa") == NESTED


def test_matching_keeps_faultgates_case_insensitivity_and_reports_the_pattern_as_written():
    deny = DenyPatterns((r"DROP\s+TABLE",))
    assert deny.first_match("please drop   table users") == r"DROP\s+TABLE"
    assert DenyPatterns().first_match("read ../../ETC/PASSWD") in DEFAULT_DENY_PATTERNS


def test_a_denied_argument_still_fires_through_the_policy_check():
    assert reasons({"deny_patterns": [NESTED]}, [("search", "aaaa", "ok")])
    assert reasons({"deny_patterns": [NESTED]}, [("search", ATTACK, "ok")]) == []


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?<=secret)key", r"foo(?!bar)"])
def test_a_pattern_re2_cannot_run_is_refused_at_load_naming_it(tmp_path, pattern):
    f = tmp_path / "policy.json"
    f.write_text('{"deny_patterns": ["ok", %s]}' % __import__("json").dumps(pattern))
    with pytest.raises(PolicyError) as e:
        load_policy(f)
    assert "deny_patterns[1] cannot run in linear time on RE2" in str(e.value)
