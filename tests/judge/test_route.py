"""Judge routing (judge/route.py): which route a decided run takes, and the trace-id sample."""
from __future__ import annotations

from faultgate_stream.judge.route import Router, sampled
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, Completion, RunVerdict

FIRED = CheckResult("loop", True, 1.0, "looped")
UNSEEN = CheckResult("abstention", False, 0.0, "no answer captured", undecided=True)
PASSED = CheckResult("loop", False, 1.0, "")


def _v(n: int, *results: CheckResult) -> RunVerdict:
    return RunVerdict(RunKey(f"{n:032x}", "r"), "s", "a", "1", Completion.GRACE, results, 1, 1)


def test_routes_are_taken_in_order_failed_undecided_drifted_then_the_sample():
    drifted = {3}
    r = Router(("failed", "undecided", "drifted"), 0.0, lambda v: int(v.key.trace_id, 16) in drifted)
    assert [r.route(_v(1, FIRED, UNSEEN)), r.route(_v(2, UNSEEN)), r.route(_v(3, PASSED)), r.route(_v(4, PASSED))] == [
        "failed", "undecided", "drifted", "skipped"]
    assert Router(("all",), 0.0).route(_v(4, PASSED)) == "all"
    assert Router(("failed",), 0.0).route(_v(2, UNSEEN)) == "skipped"  # undecided is not asked for


def test_the_sample_is_a_stable_share_of_trace_ids():
    ids = [f"{i:032x}" for i in range(20_000)]
    chosen = [t for t in ids if sampled(t, 0.1)]
    assert 0.09 < len(chosen) / len(ids) < 0.11
    assert chosen == [t for t in ids if sampled(t, 0.1)]  # the same runs every time
    assert set(chosen) <= {t for t in ids if sampled(t, 0.2)}  # a larger share keeps the smaller one's runs
    assert not any(sampled(t, 0.0) for t in ids[:100]) and all(sampled(t, 1.0) for t in ids[:100])
    r = Router(("failed",), 0.1)
    assert sum(r.route(_v(i, PASSED)) == "sampled" for i in range(20_000)) == len(chosen)
