"""Which steps a result points at: its own span ids, its early findings, else the steps its
reason names in the check's own words."""
from __future__ import annotations

from faultgate_stream.model.reason import quoted, reason
from faultgate_stream.model.verdict import CheckResult, EarlyFinding
from faultgate_stream.verdict.pointers import named_steps, pointed_spans

STEPS = {1: "s1", 2: "s2", 3: "s3", 4: "s4"}


def _fired(check: str, why: str, span_ids: tuple[str, ...] = ()) -> CheckResult:
    return CheckResult(check, True, 1.0, why, span_ids=span_ids)


def test_every_way_the_checks_name_steps_is_read():
    assert named_steps("step 4: issue_refund.amount 900 > max 500") == (4,)
    assert named_steps("Tool 'x' failed at step 1 (Response starts with 'Error:')") == (1,)
    assert named_steps("step 5: confirm_action({}) repeats step 3, which succeeded") == (5, 3)
    assert named_steps("issued >= 3 times (steps 2, 3, 4) where all 3 responses are identical") == (2, 3, 4)
    assert named_steps("undecided: tool results not recorded on step(s) 3, 5") == (3, 5)


def test_counts_and_names_that_merely_contain_step_are_not_steps():
    assert named_steps("6 steps > max_steps 5: over budget from step 6 (x)") == (6,)
    assert named_steps("no answer, 12 steps (cap), 83% empty results") == ()


def test_a_quoted_value_that_says_step_names_no_step():
    r = reason("step 2: argument ", quoted("go back to step 9", 60), " is denied")
    assert named_steps(r) == (2,)


def test_the_results_own_span_ids_come_first_then_early_findings_then_the_reason():
    early = (EarlyFinding("t", "s3", "policy", "denied"),)
    assert pointed_spans(_fired("policy", "step 1: denied", ("s2",)), early, STEPS) == ("s2",)
    assert pointed_spans(_fired("policy", "step 1: denied"), early, STEPS) == ("s3",)
    assert pointed_spans(_fired("policy", "step 1: denied; step 4: denied"), (), STEPS) == ("s1", "s4")


def test_a_step_past_the_runs_last_and_a_reason_without_steps_point_at_nothing():
    assert pointed_spans(_fired("x", "step 7: out of range"), (), STEPS) == ()
    assert pointed_spans(_fired("abstention", "answer says 'no matching source'"), (), STEPS) == ()
