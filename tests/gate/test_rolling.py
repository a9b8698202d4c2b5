"""Windows per (agent, version): bounded, undecided runs counted apart."""
from __future__ import annotations

from types import SimpleNamespace

from faultgate_stream.gate.rolling import OTHER, UNKNOWN, Windows
from faultgate_stream.gate.runs import GateRun, outcome_of

NONE = {"tokens": None, "latency_ms": None, "cost_usd": None}


def run(outcome, i=0, policy=False):
    return GateRun(f"s{i}", f"t{i}", outcome, policy, NONE)


def test_undecided_runs_are_counted_and_never_enter_the_window():
    w = Windows(size=5, max_agents=2, max_versions=2)
    for i in range(3):
        w.add("shop", "1", run("clean", i))
    w.add("shop", "1", run("undecided", 9))
    (view,) = w.views()
    assert (view.active.clean, view.active.decided, view.active.undecided) == (3, 3, 1)


def test_the_window_counts_the_last_n_decided_runs_only():
    w = Windows(size=3, max_agents=1, max_versions=1)
    for i, o in enumerate(["failed", "failed", "clean", "undecided", "clean"]):
        w.add("shop", "1", run(o, i, policy=i == 0))
    c = w.views()[0].active
    assert (c.clean, c.decided, c.policy_violations, c.undecided) == (2, 3, 0, 1)  # the first two rolled out
    w.add("shop", "1", run("failed", 9, policy=True))
    c = w.views()[0].active
    assert (c.clean, c.decided, c.policy_violations) == (2, 3, 1)


def test_agents_and_versions_past_their_bounds_fold_and_are_counted():
    w = Windows(size=3, max_agents=1, max_versions=2)
    for v in ("1", "2", "3", "4"):
        w.add("shop", v, run("clean"))
    w.add("other-agent", "1", run("clean"))
    w.add("shop", "", run("clean"))
    keys = {(x.agent, x.version) for x in w.views()}
    assert keys == {("shop", "1"), ("shop", "2"), ("shop", OTHER)}
    assert w.folded == 4   # versions 3 and 4, the second agent, and the unnamed version
    assert [x for x in w.views() if x.version == OTHER][0].active.decided == 3


def test_a_version_less_run_gets_the_unknown_label():
    w = Windows(size=3, max_agents=1, max_versions=2)
    w.add("shop", "", run("clean"))
    assert w.views()[0].version == UNKNOWN


def test_any_run_verdict_but_clean_or_failed_is_undecided():
    results = ()
    for value, expected in (("clean", "clean"), ("failed", "failed"), ("undecided", "undecided"),
                            ("skipped", "undecided")):
        v = SimpleNamespace(verdict=SimpleNamespace(value=value), clean=value == "clean", results=results)
        assert outcome_of(v) == expected


def test_an_amended_verdict_replaces_its_runs_outcome_instead_of_counting_it_twice():
    w = Windows(size=3, max_agents=1, max_versions=1)
    w.add("shop", "1", run("clean", 0), key="a")
    w.add("shop", "1", run("clean", 1), key="b")
    w.add("shop", "1", run("undecided", 2), key="c")
    assert w.amend("shop", "1", "a", run("failed", 0, policy=True))        # a late span failed it
    assert w.amend("shop", "1", "c", run("clean", 2))                      # a judge decided it
    c = w.views()[0].active
    assert (c.clean, c.decided, c.policy_violations, c.undecided) == (2, 3, 1, 0)
    assert w.amend("shop", "1", "b", run("undecided", 1))                  # now it cannot be judged
    c = w.views()[0].active
    assert (c.clean, c.decided, c.undecided) == (1, 2, 1)
    # "a" keeps its place: two more runs roll it out first, then its amendment finds nothing
    w.add("shop", "1", run("clean", 3), key="d")
    w.add("shop", "1", run("clean", 4), key="e")
    assert not w.amend("shop", "1", "a", run("clean", 0))
    assert w.amend_missed == 1
    c = w.views()[0].active
    assert (c.clean, c.decided, c.policy_violations) == (3, 3, 0)
