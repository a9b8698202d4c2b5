"""``_native.untrack_acyclic``: what the live service keeps for minutes (a decided run's
verdict, in the export's cache and the amendment store) is taken out of the cyclic
collector's lists, and only what is safe to take out is: tuples, records, frozensets and
dicts, never an object that may hold anything (a class instance, an enum member)."""
from __future__ import annotations

import gc

from faultgate_stream._native import untrack_acyclic
from faultgate_stream.model.reason import quoted, reason
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, Completion, EarlyFinding, RunVerdict, Severity


def _verdict() -> RunVerdict:
    t, root = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    return RunVerdict(
        key=RunKey(t, root), scenario="refund", agent="support", agent_version="2", completion=Completion.GRACE,
        results=(CheckResult("policy", True, 1.0, reason("args ", quoted("x" * 60, 10)), Severity.HARD, "policy"),
                 CheckResult("loop", False, 0.0, "ok", Severity.WARN, measures=(("steps", 3.0),))),
        steps=2, spans=3, released_span_ids=frozenset({root, "00f067aa0ba902b7"}),
        early=(EarlyFinding(t, root, "policy", "refund", "support"),), measures={"tokens": 12.0, "cost_usd": None},
        rule_digests=("abc", "def"))


def test_a_verdict_and_everything_it_is_built_of_leave_the_collector_and_stay_equal():
    v = _verdict()
    before = tuple(v)
    assert gc.is_tracked(v) and gc.is_tracked(v.results[0]) and gc.is_tracked(v.released_span_ids)
    assert untrack_acyclic(v) is v
    kept = [v, v.key, v.results, *v.results, v.results[1].measures, v.released_span_ids, v.early, v.early[0],
            v.measures, v.rule_digests]
    assert [type(x).__name__ for x in kept if gc.is_tracked(x)] == []
    assert tuple(v) == before
    # what may refer to anything stays as it was: an enum member, a str subclass with attributes
    assert gc.is_tracked(Severity.HARD) and gc.is_tracked(v.results[0].reason)
    gc.collect()
    assert v == _verdict()


def test_a_dict_put_a_container_in_later_is_tracked_again_by_python_itself():
    v = _verdict()
    untrack_acyclic(v)
    v.measures["late"] = []
    assert gc.is_tracked(v.measures)


def test_an_object_with_attributes_is_neither_untracked_nor_walked():
    class Box(tuple):  # a tuple subclass with a __dict__: it could hold anything
        pass

    inner = ([1],)  # a tuple holding a list, reachable only through the box
    box = Box((inner,))
    box.anything = box  # a cycle through the box: untracking it would leak
    assert untrack_acyclic((box,))
    assert gc.is_tracked(box) and gc.is_tracked(inner)
    assert untrack_acyclic(None) is None and untrack_acyclic("text") == "text"


def test_nesting_past_the_bound_is_left_tracked_and_nothing_fails():
    deep: tuple = ()
    layers = []
    for _ in range(40):
        deep = (deep, {"k": deep})
        layers.append(deep)
    assert untrack_acyclic(deep) is deep
    assert not gc.is_tracked(layers[-1]) and gc.is_tracked(layers[5])
