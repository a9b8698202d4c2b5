"""Trajectory drift (gate/drift.py): the chi-square tail, the test's false-drift rate on
windows drawn from the baseline's own distribution (over seeds), its power on a shifted
mix, and the bookkeeping around it (pooling, rolling windows, the band's key)."""
from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from faultgate_stream.gate import drift
from faultgate_stream.gate.band import Band
from faultgate_stream.gate.drift import (DRIFT, INCONCLUSIVE, PASS, ShapeCounts, ShapeWindow, Trajectories, compare,
                                         compare_dimension)
from faultgate_stream.gate.stats import chi2_sf
from faultgate_stream.model.profile import count_bucket, steps_bucket, tokens_bucket, tool_class

# Upper critical values of the chi-square distribution, as printed in every statistics
# table (and as scipy.stats.chi2.isf gives them): (df, x, tail probability).
CRITICAL = [(1, 3.841459, 0.05), (1, 6.634897, 0.01), (2, 5.991465, 0.05), (2, 9.210340, 0.01),
            (3, 7.814728, 0.05), (4, 9.487729, 0.05), (5, 11.070498, 0.05), (10, 18.307038, 0.05),
            (20, 31.410433, 0.05), (30, 43.772972, 0.05), (30, 50.892181, 0.01), (61, 80.232, 0.05)]


@pytest.mark.parametrize("df,x,p", CRITICAL)
def test_the_chi_square_tail_matches_the_tables(df, x, p):
    assert chi2_sf(x, df) == pytest.approx(p, abs=2e-6 if df < 61 else 2e-5)


def test_the_chi_square_tail_is_one_at_zero_and_vanishes_far_out_without_overflow():
    assert chi2_sf(0.0, 3) == 1.0
    assert chi2_sf(1e6, 7) == 0.0
    # df 2 is the exponential tail exactly
    assert chi2_sf(4.0, 2) == pytest.approx(math.exp(-2.0), rel=1e-12)


def _sample(rng: random.Random, weights: dict[str, float], n: int) -> Counter[str]:
    cats, w = zip(*weights.items())
    return Counter(rng.choices(cats, w, k=n))


def _counts(tools: Counter[str], rng: random.Random) -> ShapeCounts:
    """Shape counts whose tools dimension is ``tools`` and whose other dimensions are drawn
    from fixed distributions (the same on both sides)."""
    out = ShapeCounts()
    n = sum(tools.values())
    out.runs = n
    out.counts["tools"] = Counter(tools)
    for dim, values in (("steps", ["1", "2-3", "2-3", "4-7"]), ("errors", ["0"] * 8 + ["1", "2"]),
                        ("retries", ["0"] * 9 + ["1"]), ("tokens", ["<1k", "1k-2k", "1k-2k", "2k-4k", ""])):
        out.counts[dim] = Counter(v for v in rng.choices(values, k=n) if v)  # "" : tokens not recorded
    return out


def _mix(rng: random.Random) -> dict[str, float]:
    """A random tool-class distribution: 2 to 12 classes, some rare."""
    k = rng.randint(2, 12)
    return {f"class{i}": rng.expovariate(1.0) for i in range(k)}


def test_windows_drawn_from_the_baseline_distribution_drift_at_most_alpha_of_the_time_over_seeds():
    """The false-drift rate, measured: 2,000 seeds, each a random distribution of shapes, a
    baseline and a window of random sizes drawn from it. Under the null the rate must not
    exceed alpha by more than three binomial standard errors."""
    alpha, trials, drifted, decided = 0.05, 2000, 0, 0
    for seed in range(trials):
        rng = random.Random(seed)
        mix = _mix(rng)
        base = _counts(_sample(rng, mix, rng.randint(30, 400)), rng)
        window = _counts(_sample(rng, mix, rng.randint(30, 200)), rng)
        r = compare(base, window, alpha)
        decided += r.verdict != INCONCLUSIVE
        drifted += r.verdict == DRIFT
    rate = drifted / trials
    print(f"false-drift rate {rate:.4f} over {trials} seeds ({decided} decided), alpha {alpha}")
    assert decided > 0.95 * trials  # the test was asked, not dodged
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / trials), rate
    assert rate > 0.005, rate  # and it is not so conservative that it never fires


def test_a_shifted_tool_mix_is_drift_in_nearly_every_seed_and_names_the_class_that_rose():
    base_mix = {"lookup>answer": 40, "lookup": 25, "search>answer": 20, "lookup>refund": 10, "search>escalate": 5}
    shifted = {**base_mix, "search>escalate": 35, "lookup>answer": 15}
    hits = 0
    for seed in range(200):
        rng = random.Random(seed)
        r = compare(_counts(_sample(rng, base_mix, 150), rng), _counts(_sample(rng, shifted, 100), rng))
        if r.verdict == DRIFT:
            hits += 1
            (tools,) = [d for d in r.drifted if d.dimension == "tools"]
            rose = [m for m in tools.moved if m.change > 0]
            assert rose[0].category == "search>escalate" and rose[0].change > 0.1
    assert hits >= 190, hits


def test_too_few_runs_or_no_baseline_is_inconclusive_with_the_reason():
    rng = random.Random(1)
    small = _counts(Counter({"a": 10, "b": 5}), rng)
    big = _counts(Counter({"a": 100, "b": 50}), rng)
    assert compare(big, small).verdict == INCONCLUSIVE and "fewer than min_runs 30" in compare(big, small).why
    assert compare(None, big).why == "the band holds no trajectories for this agent"
    assert compare(big, big).verdict == PASS


def test_rare_categories_are_pooled_until_each_bin_expects_five_runs():
    base = Counter({"a": 50, "b": 40, "r1": 1, "r2": 1, "r3": 2})
    window = Counter({"a": 45, "b": 41, "r1": 2, "r4": 1})
    d = compare_dimension("tools", base, window, 30)
    # r1..r4 pool to 7 runs, which expect 3.4 of the window's 89 (< 5): the pool joins the
    # smallest category left (b), so the table is a vs b-and-the-rare: one degree of freedom
    assert d.df == 1 and d.p_value is not None and d.p_value > 0.5
    # with enough rare runs the pool is a bin of its own
    d = compare_dimension("tools", base + Counter({"r5": 6}), window + Counter({"r6": 6}), 30)
    assert d.df == 2


def test_one_category_on_both_sides_passes_and_a_dimension_too_sparse_to_pool_is_not_tested():
    assert compare_dimension("errors", Counter({"0": 40}), Counter({"0": 35}), 30).p_value == 1.0
    sparse = compare_dimension("tools", Counter({f"c{i}": 1 for i in range(40)}),
                               Counter({f"d{i}": 1 for i in range(40)}), 30)
    assert sparse.p_value is None and sparse.distance == pytest.approx(1.0)


def test_a_rolling_window_forgets_its_oldest_run_and_an_amendment_replaces_a_shape_in_place():
    w = ShapeWindow(2)
    w.add("r1", ("a", "1", "0", "0", "<1k"))
    w.add("r2", ("b", "1", "0", "0", ""))
    w.add("r3", ("b", "2-3", "1", "0", "<1k"))
    assert w.counts.runs == 2 and w.counts.counts["tools"] == Counter({"b": 2})
    assert w.counts.counts["tokens"] == Counter({"<1k": 1})  # a run without tokens is not counted there
    assert w.amend("r2", ("c", "1", "0", "0", "")) and not w.amend("r1", ("a",) * 5)
    assert w.counts.counts["tools"] == Counter({"b": 1, "c": 1})
    assert list(w.shapes) == ["r2", "r3"]


def test_the_band_keeps_faultgates_keys_and_adds_trajectories_after_them():
    t = Trajectories()
    t.add("support", "1.0", ("lookup", "1", "0", "0", "<1k"))
    band = Band(judge="none", checks=("loop",), runs=2, n=3, scenarios=("a", "b", "c"), min=0.5, max=0.7, mean=0.6,
                per_run=(0.5, 0.7), clean_in_all_runs=("a",), usage={"tokens": None, "latency_ms": None,
                                                                   "cost_usd": None}, trajectories=t)
    doc = band.to_json()
    assert list(doc) == ["judge", "checks", "runs", "n", "scenarios", "clean_rate", "clean_in_all_runs", "usage",
                         "rule", "trajectories"]
    again = Band.from_json(doc)
    assert again.trajectories.baseline_for("support", "1.0").counts["tools"] == Counter({"lookup": 1})
    # another version of the agent, or another agent under the band's glob, is compared with what the band has
    assert again.trajectories.baseline_for("support", "2.0").runs == 1
    assert again.trajectories.baseline_for("support-eu", "1.0").runs == 1
    assert Band.from_json({k: v for k, v in doc.items() if k != "trajectories"}).trajectories is None


def test_a_band_with_malformed_trajectories_is_refused_naming_the_field():
    doc = {"n": 1, "runs": 2, "clean_rate": {"min": 1, "max": 1, "mean": 1, "per_run": [1, 1]},
           "trajectories": {"support": {"1.0": {"runs": 3, "tools": {"lookup": "three"}}}}}
    with pytest.raises(Exception, match=r"trajectories\.support\.1\.0\.tools: expected an object of category"):
        Band.from_json(doc, "band.json")


def test_shape_buckets_are_coarse_and_bounded():
    assert [steps_bucket(n) for n in (0, 1, 2, 3, 4, 7, 8, 63, 64, 1000)] == [
        "0", "1", "2-3", "2-3", "4-7", "4-7", "8-15", "32-63", "64+", "64+"]
    assert [count_bucket(n) for n in (0, 1, 2, 3, 9)] == ["0", "1", "2", "3+", "3+"]
    assert [tokens_bucket(t) for t in (None, 0, 999, 1000, 1999, 2000, 5000, 600_000)] == [
        "", "<1k", "<1k", "1k-2k", "1k-2k", "2k-4k", "4k-8k", "512k+"]
    assert tool_class([]) == "(none)"
    assert tool_class(["search", "search", "fetch", "search"]) == "search>fetch>search"
    assert tool_class([f"t{i}" for i in range(10)]) == "t0>t1>t2>t3>t4>t5>…"
    assert tool_class(["x" * 500]) == "x" * 48


def test_describe_moved_reads_as_a_sentence():
    rng = random.Random(3)
    r = compare(_counts(Counter({"a": 90, "b": 10}), rng), _counts(Counter({"a": 30, "b": 70}), rng))
    assert r.verdict == DRIFT
    assert drift.describe_moved(r)[0] in ("tools b 10% -> 70%", "tools a 90% -> 30%")
