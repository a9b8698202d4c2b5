"""The gate's rule table (faultgate README), boundary by boundary, on bands built here."""
from __future__ import annotations

from faultgate_stream.gate.band import Band
from faultgate_stream.gate.decide import FAIL, INCONCLUSIVE, PASS, decide, thresholds
from faultgate_stream.gate.runs import GateRun
from faultgate_stream.gate.stats import drop_p_value, required_n

NONE = {"tokens": None, "latency_ms": None, "cost_usd": None}


def band(per_run, n=30):
    return Band(judge="none", checks=("search_loop",), runs=len(per_run), n=n,
                scenarios=tuple(f"s{i:02d}" for i in range(n)), min=min(per_run), max=max(per_run),
                mean=sum(per_run) / len(per_run), per_run=tuple(per_run),
                clean_in_all_runs=tuple(f"s{i:02d}" for i in range(n)), usage=dict(NONE))


def runs(clean, failed=0, undecided=0, policy=0):
    out = []
    for i in range(clean + failed + undecided):
        outcome = "clean" if i < clean else "failed" if i < clean + failed else "undecided"
        out.append(GateRun(f"s{i:02d}", f"t{i:02d}", outcome, i < policy, dict(NONE)))
    return out


def test_pass_at_one_scenario_below_the_lowest_run():
    b = band([0.9, 0.9, 0.9])
    assert thresholds(b) == (0.9 - 1 / 30, 0.9 - 3 / 30)
    assert decide(b, runs(26, 4)).verdict == PASS        # 0.867 = min - 1/n
    assert decide(b, runs(30)).verdict == PASS


def test_fail_below_three_scenarios_under_the_lowest_run_whatever_the_noise():
    noisy = band([0.4, 1.0, 1.0])  # a huge run-to-run variance: this drop is not significant
    r = decide(noisy, runs(8, 22))
    assert r.clean_rate < r.fail_threshold
    assert r.p_value > 0.05 and r.verdict == FAIL


def test_in_between_a_significant_drop_fails_and_an_insignificant_one_is_inconclusive():
    b = band([0.95, 0.95, 0.95], n=40)       # pass at 0.925, fail below 0.875
    few = decide(b, runs(36, 4))              # 0.90 over 40 runs: could be noise
    many = decide(b, runs(1800, 200))         # 0.90 over 2000 runs: it is not
    for r in (few, many):
        assert r.fail_threshold <= r.clean_rate < r.pass_threshold
    assert few.p_value >= 0.05 and few.verdict == INCONCLUSIVE
    assert few.required_n is not None and few.additional_n == few.required_n - 40
    assert many.p_value < 0.05 and many.verdict == FAIL
    assert many.required_n is None  # sized only when inconclusive


def test_the_readme_inconclusive_case_needs_89_scenarios():
    r = decide(band([1.0, 1.0]), runs(28, 2))
    assert r.fail_threshold <= r.clean_rate < r.pass_threshold
    assert r.verdict == INCONCLUSIVE and round(r.p_value, 3) == 0.072
    assert (r.required_n, r.additional_n) == (89, 59)


def test_a_policy_violation_fails_a_run_inside_the_band():
    b = band([0.9, 0.9])
    r = decide(b, runs(30, policy=1))
    assert r.clean_rate == 1.0 and r.verdict == FAIL
    assert r.policy_violations == ("t00",)


def test_undecided_runs_stay_out_of_the_clean_rate():
    b = band([0.9, 0.9])
    r = decide(b, runs(27, 3, undecided=10))
    assert r.clean_rate == 0.9 and r.decided == 30 and r.undecided == 10
    assert r.to_json()["undecided"] == 10
    none = decide(b, runs(0, 0, undecided=5))
    assert none.clean_rate is None and none.verdict == INCONCLUSIVE and none.p_value is None


def test_regressions_are_scenarios_clean_in_every_baseline_run_and_failed_now():
    b = band([0.9, 0.9])
    r = decide(b, runs(28, 2)[:29])
    assert r.regressions == ("s28",)
    assert r.missing == ("s29",)


def test_the_statistics_move_the_right_way():
    # more noise in the baseline -> a larger p for the same drop
    assert drop_p_value(0.8, 30, 0.9, 60, 0.01) > drop_p_value(0.8, 30, 0.9, 60, 0.0)
    assert drop_p_value(0.9, 30, 0.9, 60, 0.0) == 0.5
    assert drop_p_value(1.0, 30, 1.0, 60, 0.0) == 0.5   # no noise, no drop
    assert required_n(0.9, 0.95) is None
    assert required_n(0.9, 0.8) < required_n(0.9, 0.85)


def test_usage_change_is_reported_where_both_sides_carry_it():
    b = band([0.9, 0.9])
    b = Band(**{**b.__dict__, "usage": {"tokens": 1000.0, "latency_ms": None, "cost_usd": 0.02}})
    cand = [GateRun(f"s{i}", f"t{i}", "clean", False, {"tokens": 1200.0, "latency_ms": 5.0, "cost_usd": None})
            for i in range(30)]
    assert decide(b, cand).usage == {"tokens": {"baseline": 1000.0, "candidate": 1200.0, "delta_pct": 20.0}}
