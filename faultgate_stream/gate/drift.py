"""Trajectory drift: has the shape of an agent's runs moved away from its baseline, or is
the difference noise? PASS / DRIFT / INCONCLUSIVE, with the shapes that moved most.

Runs are counted per shape dimension (``model/profile.py``: tool-sequence class, step
bucket, errors, retries, token bucket), on the baseline's side in the band (``baseline``
writes them under ``trajectories``) and on the candidate's in the live gate's window or in
the file ``check --band`` reads.

**The test.** Per dimension, Pearson's chi-square test of homogeneity on the 2 x K table
(baseline, window) x categories, with the p-value from the chi-square distribution's exact
tail (``stats.chi2_sf``). Chosen because:

- the question is "do these two samples come from one categorical distribution", which is
  what the homogeneity test asks, with no order among categories assumed (tool classes have
  none; a rank test such as Mann-Whitney would need one);
- it costs microseconds from the counts alone, so the live gate can judge every window at
  every scrape and the same counts offline give the same answer, with no random draws
  (a permutation test would be exact at any sample size, but costs ~10^3 resamplings per
  window and dimension per scrape, and needs a seed to be reproducible);
- its residuals say which categories moved, which is what a user reads first.

Its chi-square tail is an approximation that holds when expected counts are not small, so
categories are pooled before testing, rarest first, until every bin expects at least
``MIN_EXPECTED`` runs on both sides (Cochran's rule); a dimension that pools down to one
bin is not tested. Each dimension is tested at ``alpha / D`` (Bonferroni over the D
dimensions tested), so the chance that a window of the baseline's own distribution is
called DRIFT on any dimension is at most ``alpha`` (tests/gate/test_drift.py measures
this over seeds); a dimension with one category on both sides (every run error-free, say)
could never reject, and is not counted. INCONCLUSIVE: fewer than ``min_runs`` runs on either side, no baseline
trajectories for the agent, or no dimension testable.

What it assumes: the window's runs and the baseline's are independent draws, under one
mix of tasks. A change in the traffic's task mix moves the shapes too, and is reported as
drift (of the traffic, not the agent). A live window is judged again at every scrape, and
every (agent, version) window is judged: alpha bounds one judgement, not a day of them,
so an alert should ask for DRIFT to hold for a while (deploy/prometheus).
"""
from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from faultgate_stream.gate.stats import chi2_sf
from faultgate_stream.model.errors import InputError
from faultgate_stream.model.profile import DIMENSIONS

PASS, DRIFT, INCONCLUSIVE = "PASS", "DRIFT", "INCONCLUSIVE"
VERDICTS = (PASS, DRIFT, INCONCLUSIVE)
DEFAULT_ALPHA = 0.05
# Fewer runs than this on either side and the test is not asked: a window of 10 runs can
# hold 3 tool classes, and nothing said about their shares is worth an alert.
DEFAULT_MIN_RUNS = 30
MIN_EXPECTED = 5.0        # Cochran's rule for the chi-square approximation
# Categories a band keeps per dimension (tool classes are the sender's, unbounded); the
# rarest past this count together as OTHER.
MAX_CATEGORIES = 200
OTHER = "(other)"
SHOWN_MOVED = 3           # categories reported per dimension, largest change first


class ShapeCounts:
    """Runs per category, per dimension. ``""`` (a value not recorded, say tokens) is not
    counted in its dimension."""

    def __init__(self) -> None:
        self.runs = 0
        self.counts: dict[str, Counter[str]] = {d: Counter() for d in DIMENSIONS}

    def add(self, shape: tuple[str, ...], k: int = 1) -> None:
        self.runs += k
        for d, v in zip(DIMENSIONS, shape):
            if v:
                c = self.counts[d]
                c[v] += k
                if c[v] <= 0:
                    del c[v]

    def remove(self, shape: tuple[str, ...]) -> None:
        self.add(shape, -1)

    def merged(self, other: "ShapeCounts") -> "ShapeCounts":
        out = ShapeCounts()
        out.runs = self.runs + other.runs
        for d in DIMENSIONS:
            out.counts[d] = self.counts[d] + other.counts[d]
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runs": self.runs}
        for d in DIMENSIONS:
            c = self.counts[d]
            kept = c.most_common(MAX_CATEGORIES)
            rest = sum(c.values()) - sum(n for _, n in kept)
            doc = dict(sorted(kept))
            if rest:
                doc[OTHER] = doc.get(OTHER, 0) + rest
            out[d] = doc
        return out

    @classmethod
    def from_json(cls, doc: Any, where: str) -> "ShapeCounts":
        if not isinstance(doc, dict) or not isinstance(doc.get("runs"), int) or doc["runs"] < 0:
            raise InputError(f"{where}: expected an object with runs (a count) and {', '.join(DIMENSIONS)}")
        out = cls()
        out.runs = doc["runs"]
        for d in DIMENSIONS:
            counts = doc.get(d) or {}
            if not isinstance(counts, dict) or not all(
                    isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts.values()):
                raise InputError(f"{where}.{d}: expected an object of category: run count")
            if len(counts) > MAX_CATEGORIES + 1:
                raise InputError(f"{where}.{d}: more than {MAX_CATEGORIES} categories")
            out.counts[d] = Counter({str(k): n for k, n in counts.items() if n})
        return out


@dataclass(frozen=True)
class Moved:
    category: str
    baseline_share: float
    window_share: float

    @property
    def change(self) -> float:
        return self.window_share - self.baseline_share


@dataclass(frozen=True)
class DimensionDrift:
    dimension: str
    baseline_runs: int            # runs counted in this dimension on each side
    window_runs: int
    p_value: float | None         # None: not tested (too few runs, or too sparse once pooled)
    statistic: float | None = None
    df: int = 0
    distance: float | None = None  # total variation distance between the two sides' shares
    moved: tuple[Moved, ...] = ()


@dataclass(frozen=True)
class DriftResult:
    verdict: str
    window_runs: int
    baseline_runs: int
    alpha: float
    dimensions: tuple[DimensionDrift, ...] = ()
    why: str = ""                  # what made it INCONCLUSIVE

    @property
    def tested(self) -> tuple[DimensionDrift, ...]:
        return tuple(d for d in self.dimensions if d.p_value is not None)

    @property
    def threshold(self) -> float:
        """The per-dimension significance level: Bonferroni over the dimensions that could
        reject (one category on both sides has nothing to test and never counts)."""
        return self.alpha / max(1, sum(d.df > 0 for d in self.tested))

    @property
    def drifted(self) -> tuple[DimensionDrift, ...]:
        t = self.threshold
        return tuple(d for d in self.tested if d.p_value < t)

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "window_runs": self.window_runs, "baseline_runs": self.baseline_runs,
                "alpha": self.alpha, "threshold": self.threshold, "why": self.why,
                "dimensions": [{"dimension": d.dimension, "p_value": d.p_value, "statistic": d.statistic,
                                "df": d.df, "distance": d.distance, "baseline_runs": d.baseline_runs,
                                "window_runs": d.window_runs,
                                "moved": [{"category": m.category, "baseline_share": m.baseline_share,
                                           "window_share": m.window_share} for m in d.moved]}
                               for d in self.dimensions]}


def _bins(base: Counter[str], window: Counter[str]) -> list[tuple[int, int]]:
    """The categories as (baseline, window) counts, the rarest pooled until each bin
    expects MIN_EXPECTED runs on the smaller side."""
    n_a, n_b = sum(base.values()), sum(window.values())
    need = MIN_EXPECTED * (n_a + n_b) / min(n_a, n_b)  # a bin's total at which both expect enough
    cats = sorted(set(base) | set(window), key=lambda c: (base[c] + window[c], c))
    bins = [(base[c], window[c]) for c in cats]
    pooled = (0, 0)
    while bins and sum(bins[0]) < need:  # every category short of the need goes in one pool
        a, b = bins.pop(0)
        pooled = (pooled[0] + a, pooled[1] + b)
    if sum(pooled):
        if sum(pooled) < need and bins:  # the pool itself still short: it joins the smallest bin left
            a, b = bins.pop(0)
            pooled = (pooled[0] + a, pooled[1] + b)
        bins.append(pooled)
    return bins


def _pearson(bins: list[tuple[int, int]]) -> float:
    n_a = sum(a for a, _ in bins)
    n_b = sum(b for _, b in bins)
    n = n_a + n_b
    stat = 0.0
    for a, b in bins:
        t = a + b
        ea, eb = n_a * t / n, n_b * t / n
        stat += (a - ea) ** 2 / ea + (b - eb) ** 2 / eb
    return stat


def compare_dimension(dimension: str, base: Counter[str], window: Counter[str], min_runs: int) -> DimensionDrift:
    n_a, n_b = sum(base.values()), sum(window.values())
    if n_a < min_runs or n_b < min_runs:
        return DimensionDrift(dimension, n_a, n_b, None)
    shares = [(c, base[c] / n_a, window[c] / n_b) for c in set(base) | set(window)]
    distance = sum(abs(w - b) for _, b, w in shares) / 2
    moved = tuple(Moved(c, b, w) for c, b, w in sorted(shares, key=lambda s: (-abs(s[2] - s[1]), s[0]))
                  if w != b)[:SHOWN_MOVED]
    if len(shares) == 1:  # one category on both sides: the same distribution, nothing to test
        return DimensionDrift(dimension, n_a, n_b, 1.0, 0.0, 0, 0.0, ())
    bins = _bins(base, window)
    if len(bins) < 2:
        return DimensionDrift(dimension, n_a, n_b, None, None, 0, distance, moved)
    stat = _pearson(bins)
    df = len(bins) - 1
    return DimensionDrift(dimension, n_a, n_b, chi2_sf(stat, df), stat, df, distance, moved)


def compare(baseline: ShapeCounts | None, window: ShapeCounts, alpha: float = DEFAULT_ALPHA,
            min_runs: int = DEFAULT_MIN_RUNS) -> DriftResult:
    if baseline is None or baseline.runs == 0:
        return DriftResult(INCONCLUSIVE, window.runs, 0, alpha, why="the band holds no trajectories for this agent")
    if window.runs < min_runs:
        return DriftResult(INCONCLUSIVE, window.runs, baseline.runs, alpha,
                           why=f"{window.runs} run(s) in the window, fewer than min_runs {min_runs}")
    if baseline.runs < min_runs:
        return DriftResult(INCONCLUSIVE, window.runs, baseline.runs, alpha,
                           why=f"{baseline.runs} baseline run(s), fewer than min_runs {min_runs}")
    dims = tuple(compare_dimension(d, baseline.counts[d], window.counts[d], min_runs) for d in DIMENSIONS)
    result = DriftResult(PASS, window.runs, baseline.runs, alpha, dims)
    if not result.tested:
        return DriftResult(INCONCLUSIVE, window.runs, baseline.runs, alpha, dims,
                           why="no dimension had enough runs in enough categories to test")
    if result.drifted:
        return DriftResult(DRIFT, window.runs, baseline.runs, alpha, dims)
    return result


def describe_moved(result: DriftResult) -> list[str]:
    """'tools search>fetch 20% -> 55%' for the categories that moved most in each drifted
    dimension (every tested one when none drifted)."""
    dims = result.drifted or result.tested
    return [f"{d.dimension} {m.category} {m.baseline_share:.0%} -> {m.window_share:.0%}" for d in dims for m in d.moved]


class ShapeWindow:
    """The last ``size`` runs' shapes of one (agent, version), by run key, as running counts:
    an amended verdict replaces its run's shape in place."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.shapes: OrderedDict[object, tuple[str, ...]] = OrderedDict()
        self.counts = ShapeCounts()

    def add(self, key: object, shape: tuple[str, ...]) -> None:
        old = self.shapes.pop(key, None)
        if old is not None:
            self.counts.remove(old)
        elif len(self.shapes) >= self.size:
            _, gone = self.shapes.popitem(last=False)
            self.counts.remove(gone)
        self.shapes[key] = shape
        self.counts.add(shape)

    def amend(self, key: object, shape: tuple[str, ...]) -> bool:
        old = self.shapes.get(key)
        if old is None:
            return False
        self.counts.remove(old)
        self.shapes[key] = shape  # keeps its place in the order
        self.counts.add(shape)
        return True


@dataclass
class Trajectories:
    """A band's baseline shapes per agent and version (``band.json`` ``trajectories``)."""

    by_agent: dict[str, dict[str, ShapeCounts]] = field(default_factory=dict)

    def add(self, agent: str, version: str, shape: tuple[str, ...]) -> None:
        self.by_agent.setdefault(agent, {}).setdefault(version, ShapeCounts()).add(shape)

    def __bool__(self) -> bool:
        return bool(self.by_agent)

    def baseline_for(self, agent: str, version: str) -> ShapeCounts | None:
        """The same agent and version's baseline; else the agent's versions together; else
        every agent's of the band together (the band is the baseline of the agents its glob
        names); None when the band has none."""
        versions = self.by_agent.get(agent)
        if versions is not None:
            if version in versions:
                return versions[version]
            return _pool(versions.values())
        if not self.by_agent:
            return None
        return _pool(c for vs in self.by_agent.values() for c in vs.values())

    def to_json(self) -> dict[str, Any]:
        return {a: {v: c.to_json() for v, c in sorted(vs.items())} for a, vs in sorted(self.by_agent.items())}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> "Trajectories":
        if not isinstance(doc, dict):
            raise InputError(f"{where}: expected an object of agent: {{version: counts}}")
        out = cls()
        for agent, versions in doc.items():
            if not isinstance(versions, dict):
                raise InputError(f"{where}.{agent}: expected an object of version: counts")
            out.by_agent[str(agent)] = {str(v): ShapeCounts.from_json(c, f"{where}.{agent}.{v}")
                                        for v, c in versions.items()}
        return out


def _pool(counts) -> ShapeCounts:
    out = ShapeCounts()
    for c in counts:
        out = out.merged(c)
    return out


def compare_verdicts(trajectories: Trajectories | None, profiled: list[tuple[str, str, tuple[str, ...]]],
                     alpha: float = DEFAULT_ALPHA, min_runs: int = DEFAULT_MIN_RUNS
                     ) -> list[tuple[str, str, DriftResult]]:
    """Offline (``check --band``): the candidate's runs, as (agent, version, shape), per
    (agent, version) against the band's baseline for it, in order of first appearance."""
    windows: dict[tuple[str, str], ShapeCounts] = {}
    for agent, version, shape in profiled:
        windows.setdefault((agent, version), ShapeCounts()).add(shape)
    return [(agent, version, compare(trajectories.baseline_for(agent, version) if trajectories else None,
                                     counts, alpha, min_runs))
            for (agent, version), counts in windows.items()]
