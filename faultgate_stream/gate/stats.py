"""The gate's statistics: a one-sided test of a candidate's clean rate against the
baseline mean, and the sample size that would tell a drop from noise.

The variance of the observed drop is the sum of three parts: the candidate's binomial
noise (p(1-p) over its runs), the baseline's binomial noise over all its runs (scenarios x
baseline runs), and the run-to-run variance the baseline measured (the sample variance of
its per-run clean rates). The third term is what makes a noisy baseline need a bigger drop
to fail. These reproduce faultgate 0.4.1's p-values to the last bit on its shipped
examples (tests/gate/test_parity.py), including its tail computed as ``1 - Phi(z)``: on
large drops that gives 0.0 where the exact tail would be ~1e-27, and reports say 0.0.
"""
from __future__ import annotations

import math
from statistics import NormalDist

ALPHA = 0.05   # one-sided significance of a drop
POWER = 0.80   # for required_n: the chance of detecting a drop of the observed size

_STD = NormalDist()


def phi(z: float) -> float:
    """The standard normal CDF, via erf (the form whose tail the reports carry)."""
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def sample_variance(values: list[float]) -> float:
    """Unbiased (n - 1) variance; 0 for fewer than two values (nothing measured)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return sum((x - mean) ** 2 for x in values) / (len(values) - 1)


def drop_p_value(candidate_rate: float, candidate_n: int, baseline_mean: float, baseline_runs_total: int,
                 run_variance: float) -> float:
    """P(a drop at least this large | no real drop): one-sided, normal approximation."""
    drop = baseline_mean - candidate_rate
    var = (candidate_rate * (1 - candidate_rate) / candidate_n
           + baseline_mean * (1 - baseline_mean) / baseline_runs_total
           + run_variance)
    if var <= 0:
        # no noise at all on either side: any drop is certain, no drop is a coin toss
        return 0.0 if drop > 0 else (0.5 if drop == 0 else 1.0)
    return 1.0 - phi(drop / math.sqrt(var))


def required_n(baseline_mean: float, candidate_rate: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Scenarios per side for a one-sided two-proportion test to detect this drop: the
    textbook pooled-variance formula. None when there is no drop to detect."""
    p1, p2 = baseline_mean, candidate_rate
    d = p1 - p2
    if d <= 0:
        return None
    z_a, z_b = _STD.inv_cdf(1 - alpha), _STD.inv_cdf(power)
    pooled = (p1 + p2) / 2
    root = z_a * math.sqrt(2 * pooled * (1 - pooled)) + z_b * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil((root / d) ** 2)


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X chi-square with ``df`` (a whole number >= 1) degrees of freedom.

    Exact closed forms, no series to converge: for even ``df`` the Poisson tail
    ``e^(-x/2) sum_{i < df/2} (x/2)^i / i!``; for odd ``df``
    ``erfc(sqrt(x/2)) + sum_{i=1}^{(df-1)/2} e^(-x/2) (x/2)^(i-1/2) / Gamma(i+1/2)``. Terms
    are summed in log space, so large ``x`` underflows to 0 rather than overflowing.
    Checked once against scipy 1.17.1's ``chi2.sf`` (largest relative difference 6e-14 over
    df 1-199, x 0.01-400); tests/gate/test_drift.py holds it to the printed tables."""
    if df < 1:
        raise ValueError("df must be at least 1")
    if x <= 0:
        return 1.0
    h = x / 2.0
    log_h = math.log(h)
    if df % 2 == 0:
        total = sum(math.exp(-h + i * log_h - math.lgamma(i + 1)) for i in range(df // 2))
    else:
        total = math.erfc(math.sqrt(h)) + sum(math.exp(-h + (i - 0.5) * log_h - math.lgamma(i + 0.5))
                                              for i in range(1, (df - 1) // 2 + 1))
    return min(1.0, total)
