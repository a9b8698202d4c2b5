"""The checks' shortcuts decide exactly what the plain rules they stand in for decide."""
from __future__ import annotations

import json
import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from faultgate_stream.checks.policy.deny_patterns import DEFAULT_DENY_PATTERNS, DEFAULTS_NEED, DenyPatterns
from faultgate_stream.checks.repeated_call import RepeatedCall
from faultgate_stream.checks.signals import canonical_arguments, squash, step_errors, structural_error
from faultgate_stream.model.records import RunKey, Step
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import Completion


def test_squash_folds_exactly_the_whitespace_the_regex_folds():
    ws = re.compile(r"\s+")
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        text = f"a{chr(cp)}{chr(cp)}b{chr(cp)}"
        assert squash(text) == ws.sub(" ", text).strip(), hex(cp)


def test_each_default_deny_pattern_needs_a_slash():
    for p in DEFAULT_DENY_PATTERNS:
        top_level = re.sub(r"\([^)]*\)", "", p)  # a group may hold alternatives; the rest is one sequence
        assert DEFAULTS_NEED in top_level and not re.search(r"[|\[]|/[?*{]", top_level), p


@given(st.text(alphabet="./~etcpasswdhfilroPROC:ssh \\", max_size=30))
def test_deny_patterns_shortcut_agrees_with_every_search(text):
    plain = next((p for p in DEFAULT_DENY_PATTERNS if re.search(p, text, re.I)), None)
    assert DenyPatterns().first_match(text) == plain


def _run(steps: list[tuple[str, str, str]]) -> Run:
    run = Run(RunKey("t", "r"), [], None, Completion.COMPLETE)
    run.__dict__["steps"] = tuple(Step(i, tool, args, result, f"s{i}") for i, (tool, args, result) in
                                  enumerate(steps, start=1))
    return run


def test_step_errors_are_worked_out_once_per_run():
    run = _run([("search", "{}", '{"error": "boom"}'), ("search", "{}", "ok"), ("read", "{}", '{"error": "boom"}')])
    first = step_errors(run)
    assert first == tuple(structural_error(st.result) for st in run.steps)
    assert step_errors(run) is first


def _repeated_call_plainly(steps: tuple[Step, ...]) -> str:
    """repeated_call as written before its shortcuts: every step's arguments canonicalised."""
    if len(steps) < 3:
        return "fewer than 3 tool calls"
    same_call: dict[tuple[str, str], list[int]] = {}
    for i, st in enumerate(steps):
        same_call.setdefault((st.tool, canonical_arguments(st.arguments)), []).append(i)
    fold = re.compile(r"\s+")
    for (tool, args), idx in same_call.items():
        for a, b, c in zip(idx, idx[1:], idx[2:]):
            results = {fold.sub(" ", steps[k].result).strip() for k in (a, b, c)}
            if len(results) == 1:
                return (f"Tool '{tool}' with arguments {args[:60]} issued >= 3 times (steps {steps[a].index}, "
                        f"{steps[b].index}, {steps[c].index}) where all 3 responses are identical after "
                        "whitespace normalization.")
    return "no repeated calls without progress"


# Argument texts that canonicalise alike in ways a shortcut could miss: key order, layout,
# 1 against 1.0, NaN, duplicate keys, a raw newline that only whitespace folding repairs.
ARGS = ['{"a": 1}', '{"a":1}', '{"a": 1.0}', '{"a": true}', '{"a": NaN}', '{"a": 1, "a": 2}', '{"a": 2}',
        '{"a": "x\ny"}', '{"a": "x y"}', '[1, 2]', '[1,2]', '[NaN]', '{bad', '{ bad}', 'plain', 'pl  ain',
        '{"b": "1", "a": "2"}', '{"a": "2", "b": "1"}', '{"a": "\\u0041"}', '{"a": "A"}', '[]', ' {} ']
RESULTS = ["r", " r ", "r\n", "s", "", json.dumps({"n": 0})]


@settings(max_examples=500)
@given(st.lists(st.tuples(st.sampled_from(["t", "u"]), st.sampled_from(ARGS), st.sampled_from(RESULTS)), max_size=12))
def test_repeated_call_decides_as_the_plain_rule(calls):
    run = _run(calls)
    assert RepeatedCall().finish(None, run).reason == _repeated_call_plainly(run.steps)
