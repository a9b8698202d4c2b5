"""The compiled default checks give the results the Python ones they replaced gave
(tests/checks/checks_oracle.py), byte for byte, reasons' quoted parts included: on
generated runs and on every recorded trace. Where the Python raised (an exit code of
1e400 makes ``int()`` raise OverflowError), the compiled check raises the same."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgate_stream.checks.abstention import Abstention
from faultgate_stream.checks.context_overflow import ContextOverflow
from faultgate_stream.checks.policy.check import PolicyCheck
from faultgate_stream.checks.repeated_call import RepeatedCall
from faultgate_stream.checks.search_loop import SearchLoop
from faultgate_stream.checks.unrecovered_tool_error import UnrecoveredToolError
from faultgate_stream.model.reason import Reason
from faultgate_stream.model.run import Run
from tests.checks import checks_oracle as oracle
from tests.model.native_inputs import TOOLS, both, loop_runs, recorded_runs, repeat_runs, runs
from tests.model.run_oracle import OracleRun

ALTERNATIVES = {"search": frozenset({"read"}), "read": frozenset({"search", "pay"})}


def pairs(alternatives=None):
    return [(SearchLoop(), oracle.SearchLoop()), (Abstention(), oracle.Abstention()),
            (RepeatedCall(), oracle.RepeatedCall()),
            (UnrecoveredToolError(alternatives), oracle.UnrecoveredToolError(alternatives)),
            (ContextOverflow(), oracle.ContextOverflow())]


def _outcome(f, *args):
    try:
        r = f(*args)
    except Exception as e:  # noqa: BLE001  (a failure is an outcome to compare)
        return ("raised", type(e))
    if r is None or isinstance(r, str):  # observe: a reason or nothing
        return (r, type(r), r.parts if isinstance(r, Reason) else None)
    return (r, type(r.reason), r.reason.parts if isinstance(r.reason, Reason) else None)


def _judge_alike(new: Run, old: OracleRun, alternatives=None) -> None:
    for mine, theirs in pairs(alternatives):
        assert _outcome(mine.finish, None, new) == _outcome(theirs.finish, None, old), mine.name
    for s in new.spans:
        assert _outcome(ContextOverflow.observe, None, s) == _outcome(oracle.ContextOverflow().observe, None, s)
    # the policy without a policy file: each span as it arrives, then the verdict with the
    # memo observe filled, and without one
    mine, theirs = PolicyCheck(), oracle.DenyOnlyPolicy()
    ms, ts = mine.start(), theirs.start()
    for s in new.spans:
        assert _outcome(mine.observe, ms, s) == _outcome(theirs.observe, ts, s)
    assert _outcome(mine.finish, ms, new) == _outcome(theirs.finish, ts, old)
    assert _outcome(mine.finish, None, new) == _outcome(theirs.finish, None, old)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(runs(), loop_runs(), repeat_runs()), st.booleans())
def test_generated_runs_are_judged_as_python_judged_them(run, with_alternatives):
    spans, root = run
    new, old = both(spans, root)
    _judge_alike(new, old, ALTERNATIVES if with_alternatives else None)


def test_every_recorded_run_is_judged_as_python_judged_it():
    for run in recorded_runs():
        for alternatives in (None, ALTERNATIVES):
            new = Run(run.key, list(run.spans), run.root, run.completion)
            old = OracleRun(run.key, list(run.spans), run.root, run.completion)
            _judge_alike(new, old, alternatives)


def test_results_that_say_the_same_for_every_run_are_one_shared_object():
    check = Abstention()
    new, _ = both([], None)
    other, _ = both([], None)
    assert check.finish(None, new) is check.finish(None, other)


def test_a_fired_reason_keeps_the_quoted_arguments_whole_for_masking():
    from faultgate_stream.model.records import Step
    from faultgate_stream.model.run import Run as R
    from faultgate_stream.model.records import RunKey
    from faultgate_stream.model.verdict import Completion

    secret = '{"token": "' + "k" * 80 + '"}'
    run = R(RunKey("t", "r"), [], None, Completion.COMPLETE)
    run.__dict__["steps"] = tuple(Step(i, "get", secret, "same", f"s{i}") for i in (1, 2, 3))
    r = RepeatedCall().finish(None, run)
    assert r.fired and isinstance(r.reason, Reason) and "k" * 80 in r.reason.marked()
    assert "k" * 80 not in r.reason  # cut to 60 characters in the text itself
    assert TOOLS  # the generated runs call these tools
