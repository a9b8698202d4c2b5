"""The export's cache of recent verdicts keeps them out of the collector's lists: what a late
span gets back equals the verdict put in, the collector does not track what is kept, and the
bound evicts the oldest run and counts it."""
from __future__ import annotations

import gc

from faultgate_stream.export.spans.cache import VerdictCache
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, Completion, EarlyFinding, RunVerdict, Severity
from faultgate_stream.testing import span_id, trace_id


def _verdict(**changes) -> RunVerdict:
    t, root = trace_id(), span_id()
    v = RunVerdict(
        key=RunKey(t, root), scenario="refund", agent="support", agent_version="2", completion=Completion.GRACE,
        results=(CheckResult("policy", True, 1.0, "step 2 called refund", Severity.HARD, "policy"),
                 CheckResult("loop", False, 0.0, "undecided: no content", Severity.WARN, "rule", agent="sub",
                             undecided=True, measures=(("steps", 3.0),))),
        steps=2, spans=3, first_start_ns=5, last_end_ns=9, root_arrival_ns=11, decided_ns=12, root_span_id=root,
        released_span_ids=frozenset({root, span_id()}), early=(EarlyFinding(t, root, "policy", "refund", "support"),),
        measures={"tokens": 12.0, "cost_usd": None}, rule_digests=("abc", "def"),
        shadow=(CheckResult("budget", True, 0.5, "over", Severity.SOFT, "policy"),))
    return v._replace(**changes)


def test_a_cached_verdict_comes_back_equal_and_is_not_tracked_by_the_collector():
    cache = VerdictCache(size=10)
    v = _verdict()
    cache.put(v)
    amended = v._replace(revision=1, previous="failed", amended_checks=("loop",), amended_by="x",
                         released_span_ids=frozenset())
    got = cache.get(RunKey(*v.key))
    assert got == v
    # the records compare as tuples: the types must come back too, not only the values
    assert type(got) is RunVerdict and type(got.key) is RunKey and type(got.completion) is Completion
    assert [type(r) for r in got.results + got.shadow] == [CheckResult] * 3
    assert type(got.early[0]) is EarlyFinding and type(got.results[0].severity) is Severity
    assert type(got.released_span_ids) is frozenset and type(got.measures) is dict
    cache.put(amended)
    assert cache.get(v.key) == amended and len(cache._items) == 1  # noqa: SLF001
    gc.collect()
    gc.collect()
    ((key, item),) = cache._items.items()  # noqa: SLF001 (what is kept is what this test is about)
    assert not gc.is_tracked(key) and not gc.is_tracked(item)


def test_the_cache_is_bounded_and_counts_evictions():
    cache = VerdictCache(size=2)
    vs = [_verdict() for _ in range(3)]
    for v in vs:
        cache.put(v)
    assert cache.get(vs[0].key) is None and cache.get(vs[2].key) == vs[2]
    assert cache.evictions == 1
