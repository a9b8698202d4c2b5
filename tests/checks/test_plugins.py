"""Plug-ins: the public check API, loading, and what a plug-in can and cannot do to a run's
verdict (checks/api.py, checks/plugins/)."""
from __future__ import annotations

import copy
import threading
import time

import pytest

from faultgate_stream.checks import api
from faultgate_stream.checks.config import IsolationConfig
from faultgate_stream.checks.plugins import adapt, isolate
from faultgate_stream.checks.plugins.load import build, load, load_all
from faultgate_stream.checks.plugins.check import Origin
from faultgate_stream.checks.registry import NAMES, select
from faultgate_stream.model.errors import InputError
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.pipeline import VerdictList, assemble_runs, check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.testing import agent, tool, trace_id
from faultgate_stream.verdict.evaluate import Evaluator
from faultgate_stream.verdict.ruleset import Ruleset
from tests.conftest import CORPUS

HOSTILE = "tests.checks.hostile_plugins:"
RETAIL = CORPUS / "faultgate-0.4.1" / "tests" / "fixtures" / "retail_gaps.json"


def _spans():
    t = trace_id()
    a = agent(t, name="shop", prompt="q", answer="done")
    spans = [a] + [tool(t, a.span_id, "search" if i == 2 else "lookup", {"id": i, "amount": 10 * i}, "ok",
                        start_s=1 + i) for i in range(5)]
    return spans


def _results(verdicts, name):
    return [r for v in verdicts for r in v.results if r.check == name]


def test_a_plugin_judges_runs_beside_the_built_ins_and_names_itself_and_its_spans():
    checks = select() + load_all([HOSTILE + "StepCount"])
    [v] = check_spans([_spans()], checks)
    r = _results([v], "step_count")[0]
    assert r.fired and r.reason == "5 steps > 3" and r.kind == "plugin"
    assert r.evaluator == "tests.checks.hostile_plugins:StepCount 2.1"
    assert r.span_ids == v.results[0].span_ids or len(r.span_ids) == 2
    assert dict(r.measures) == {"steps": 5.0}
    assert [x.check for x in v.results][:len(NAMES) - 4] == [c.name for c in select()][:len(NAMES) - 4]
    # its early finding is the verdict's, like a built-in's
    assert [f.check for f in v.early] == ["step_count"]


def test_offline_the_plugins_result_does_not_depend_on_observing_spans():
    checks = load_all([HOSTILE + "StepCount"])
    spans = _spans()
    assert [r[:4] for v in check_spans([spans], checks, early=False) for r in v.results] == \
           [r[:4] for v in check_spans([spans], checks, early=True) for r in v.results]


def test_views_refuse_every_change_and_the_next_check_sees_the_run_as_it_was():
    checks = load_all([HOSTILE + "Mutates", HOSTILE + "StepCount"])
    [v] = check_spans([_spans()], checks)
    mutates, steps = v.results
    assert not mutates.fired and mutates.reason == "every view refused to change"
    assert steps.reason == "5 steps > 3"


def test_a_view_holds_the_runs_facts():
    spans = _spans()
    [run] = assemble_runs(spans)
    view = adapt.Views().run(run)
    assert view.agent == "shop" and view.prompt == "q" and view.answer == "done"
    assert [s.tool for s in view.steps] == ["lookup", "lookup", "search", "lookup", "lookup"]
    assert view.steps[2].args["amount"] == 20 and view.steps[2].status == "ok"
    assert dict(view.calls) == {"lookup": 4, "search": 1}
    assert [s.span_id for s in view.spans] == [s.span_id for s in sorted(spans, key=lambda s: (s.start_ns, s.span_id))]
    assert view.completion == "complete" and view.run_id == str(run.key)
    with pytest.raises(AttributeError):
        view.agent = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        view.steps[0].args["id"] = 3  # type: ignore[index]


def _evaluate(checks, spans, **limits):
    """Verdicts of ``spans`` under ``checks`` in process, with a fresh registry's counts."""
    telemetry = Telemetry()
    sink = VerdictList()
    limits = IsolationConfig(**{"cpu_budget": 0.05, "deadline": 0.5, **limits})
    ev = Evaluator(Ruleset(tuple(checks)), sink, telemetry=telemetry, isolation=limits)
    for run in assemble_runs(spans):
        ev.run_completed(run)
    ev.isolation.drain(30)
    return sink.verdicts, telemetry, ev.isolation


@pytest.mark.parametrize("hostile, reason", [
    ("Raises", "the plug-in failed on this run (KeyError: 'no such thing')"),
    ("Garbage", "the plug-in failed on this run: it returned dict, not a Result"),
])
def test_a_plugin_that_raises_or_returns_garbage_is_undecided_and_counted(hostile, reason):
    checks = load_all([HOSTILE + hostile, HOSTILE + "StepCount"])
    verdicts, telemetry, _ = _evaluate(checks, _spans())
    [v] = verdicts
    bad, good = v.results
    assert bad.undecided and not bad.fired and bad.reason.startswith(f"undecided: {reason}")
    assert good.fired  # the other plug-in was not affected
    assert telemetry["faultgate_check_errors"].labels(checks[0].name)._value.get() == 1


class _CountsItsRuns(api.Check):
    """Starts each run afresh (``start``, no ``observe``): its state must be that run's alone."""

    name = "counts_its_runs"

    def start(self):
        return {"finished": 0, "id": None}

    def finish(self, state, run):
        state["finished"] += 1
        first = state["id"] is None
        state["id"] = run.run_id
        return api.passed(f"{state['finished']} {first}")


def test_a_plugin_that_does_not_observe_starts_every_run_afresh_beside_one_that_observes():
    checks = [build(_CountsItsRuns, "t", Origin("t", "", "", "tests:_CountsItsRuns"))] + \
        load_all([HOSTILE + "StepCount"])
    spans = [s for _ in range(4) for s in _spans()]  # four traces
    verdicts, _, stage = _evaluate(checks, spans)
    assert len(verdicts) == 4
    for v in verdicts:
        counted, steps = v.results
        assert counted.check == "counts_its_runs" and counted.reason == "1 True" and not counted.undecided
        assert steps.reason == "5 steps > 3"
    assert stage.drain(0)


def test_a_run_whose_placeholder_could_not_be_made_is_still_decided_with_the_other_plugins_results():
    # the evaluator hands the stage the plug-ins' places in the verdict; where one holds the
    # evaluator's own undecided result instead of a placeholder, the stage leaves it as it is
    checks = load_all([HOSTILE + "StepCount", HOSTILE + "Raises"])

    def fails(state, run):
        raise MemoryError

    checks[1].finish = fails  # the engine's side of the plug-in (its placeholder), not the plug-in
    verdicts, _, stage = _evaluate(checks, _spans())
    [v] = verdicts
    good, failed = v.results
    assert good.fired and good.reason == "5 steps > 3"
    assert failed.undecided and "the check failed on this run (MemoryError" in failed.reason
    assert stage.drain(0)  # nothing left in hand


@pytest.mark.parametrize("hostile", ["Spins", "Allocates"])
def test_a_plugin_past_its_cpu_budget_is_stopped_and_undecided(hostile):
    checks = load_all([HOSTILE + hostile, HOSTILE + "StepCount"])
    t0 = time.monotonic()
    verdicts, _, stage = _evaluate(checks, _spans(), cpu_budget=0.02, deadline=30.0)
    assert time.monotonic() - t0 < 10, "the watchdog stops a runaway loop near its budget, not at the deadline"
    bad, good = verdicts[0].results
    assert bad.undecided and "over its CPU budget" in bad.reason and good.fired
    assert stage.overruns[(checks[0].name, "cpu")] == 1


def test_a_sleeping_plugin_is_given_up_at_the_deadline_and_the_run_still_decided():
    checks = load_all([HOSTILE + "Sleeps", HOSTILE + "StepCount"])
    t0 = time.monotonic()
    verdicts, _, stage = _evaluate(checks, _spans(), deadline=0.3)
    assert time.monotonic() - t0 < 5  # not the plug-in's ten seconds
    bad, good = verdicts[0].results
    assert bad.undecided and "did not return within 0.3s" in bad.reason
    assert good.fired  # the work went on past the stuck call, on a new thread
    assert stage.overruns[("sleeps", "deadline")] == 1


def test_a_plugin_that_keeps_overrunning_is_switched_off_logged_and_counted(capsys):
    checks = load_all([HOSTILE + "Spins", HOSTILE + "StepCount"])
    runs = [_spans() for _ in range(4)]
    verdicts, _, stage = _evaluate(checks, [s for r in runs for s in r], cpu_budget=0.005, max_overruns=2)
    reasons = [v.results[0].reason for v in verdicts]
    assert sum(r.startswith("undecided: the plug-in was over its CPU budget") for r in reasons) == 2
    assert sum(r.startswith("undecided: switched off after 2 overruns in a row (last: over its CPU budget")
               for r in reasons) == 2
    assert stage.off == {"spins": True, "step_count": False} and stage.switched_off["spins"] == 1
    assert all(v.results[1].fired for v in verdicts)
    assert "plugin_switched_off" in capsys.readouterr().out


def test_a_plugin_that_holds_the_gil_in_one_call_is_switched_off_after_the_first():
    """No thread can interrupt it, so every thread waits once; the second run never calls it."""
    checks = load_all([HOSTILE + "HoldsTheGil", HOSTILE + "StepCount"])
    runs = [_spans() for _ in range(3)]
    verdicts, _, stage = _evaluate(checks, [s for r in runs for s in r], cpu_budget=0.005, deadline=30.0)
    reasons = [v.results[0].reason for v in verdicts]
    assert reasons[0].startswith("undecided: the plug-in held the GIL in one call for")
    assert all(r.startswith("undecided: switched off after 1 overrun in a row (last: held the GIL") for r in reasons[1:])
    assert stage.overruns[("holds_the_gil", "gil")] == 1 and stage.off["holds_the_gil"]
    assert all(v.results[1].fired for v in verdicts)


def test_a_loop_of_python_the_watchdog_looks_at_late_is_over_its_budget_not_holding_the_gil(monkeypatch):
    """On a loaded host the watchdog may not run for a while; a loop of Python meanwhile runs
    on past its budget. That is a CPU overrun, not a stall of every thread: the GIL was free
    to take (here the watchdog looks once, then not again until after the loop ended)."""
    monkeypatch.setattr(isolate, "WATCH_INTERVAL_MS", 2_000)
    checks = load_all([HOSTILE + "SpinsAWhile"])
    verdicts, _, stage = _evaluate(checks, _spans(), cpu_budget=0.005, deadline=30.0)
    [reason] = [v.results[0].reason for v in verdicts]
    assert reason.startswith("undecided: the plug-in was over its CPU budget"), reason
    assert stage.overruns[("spins_a_while", "cpu")] == 1 and stage.overruns[("spins_a_while", "gil")] == 0
    assert not stage.off["spins_a_while"]


def test_a_full_plugin_queue_sends_the_verdict_on_with_the_plugins_undecided():
    checks = load_all([HOSTILE + "Sleeps"])
    sink = VerdictList()
    ev = Evaluator(Ruleset(tuple(checks)), sink, isolation=IsolationConfig(deadline=5.0, max_queue=1))
    runs = assemble_runs([s for _ in range(3) for s in _spans()])
    ev.run_completed(runs[0])
    deadline = time.monotonic() + 5
    while ev.isolation._current is None:  # the first is in the plug-in's call on its thread
        assert time.monotonic() < deadline
        time.sleep(0.01)
    ev.run_completed(runs[1])  # waits
    ev.run_completed(runs[2])  # does not fit
    assert [v.results[0].reason for v in sink.verdicts] == [
        "undecided: the plug-in queue was full (checks.isolation.max_queue)"]
    assert ev.isolation.queue_full["verdict"] == 1
    assert ev.close(0.1) >= 1  # at shutdown, what still waits goes out undecided: every run gets a verdict
    assert len(sink.verdicts) == 3


def test_ingestion_never_waits_for_a_plugin():
    """The evaluator's thread (the assembler's lock held) only hands plug-in work over."""
    checks = load_all([HOSTILE + "Sleeps"])
    sink = VerdictList()
    ev = Evaluator(Ruleset(tuple(checks)), sink, isolation=IsolationConfig(deadline=2.0))
    runs = assemble_runs([s for _ in range(20) for s in _spans()])
    t0 = time.perf_counter()
    for run in runs:
        ev.spans_arrived(list(run.spans))
        ev.run_completed(run)
    handed = time.perf_counter() - t0
    assert handed < 0.5, f"deciding 20 runs took {handed:.2f}s on the ingest side"
    ev.close(0.1)
    assert len(sink.verdicts) == 20


@pytest.mark.parametrize("spec, message", [
    ("tests.checks.hostile_plugins:HOSTILE", "is not a check"),
    ("tests.checks.no_such_module:X", "cannot import tests.checks.no_such_module"),
    ("tests.checks.hostile_plugins:Nope", "has no Nope"),
    ("not_installed_anywhere", "no installed package declares it"),
])
def test_a_plugin_that_cannot_load_says_why(spec, message):
    with pytest.raises(InputError, match=message):
        load(spec, {})


def test_a_plugin_is_refused_a_built_in_name_a_bad_name_or_a_newer_api():
    origin = Origin("test", "", "", "test:X")

    class Taken(api.Check):
        name = "policy"

        def finish(self, state, run):
            return api.passed()

    class BadName(Taken):
        name = "Has Spaces"

    class Newer(Taken):
        name = "newer"
        api_version = "1.99"

    class OtherMajor(Taken):
        name = "other"
        api_version = "2.0"

    with pytest.raises(InputError, match="is a built-in check's"):
        build(Taken, "t", origin)
    with pytest.raises(InputError, match="name must be lower-case"):
        build(BadName, "t", origin)
    with pytest.raises(InputError, match="written for check API 1.99; this faultgate-stream has 1.1"):
        build(Newer, "t", origin)
    with pytest.raises(InputError, match="written for check API 2.0"):
        build(OtherMajor, "t", origin)
    with pytest.raises(InputError, match="named 'step_count', as"):
        load_all([HOSTILE + "StepCount", HOSTILE + "StepCount"])


def test_the_built_in_checks_keep_the_api_contract_driven_through_views():
    """Every built-in rule check, driven through the API (start / observe over span views /
    finish over a run view), gives the engine's results on faultgate's retail gaps."""
    _, spans = read_file(RETAIL)
    engine = check_spans([spans], select(), early=False)
    views = adapt.Views()
    for run, v in zip(assemble_runs(spans), engine):
        assert str(run.key) == str(v.key)
        view = views.run(run)
        for name, want in zip(select(), v.results):
            c = adapt.builtin(name.name)
            state = c.start()
            for s in view.spans:
                c.observe(state, s)
            got = c.finish(c.start(), view)
            assert got.outcome == ("fired" if want.fired else "undecided" if want.undecided else "passed")
            assert got.reason == want.reason


def test_results_are_checked_when_made():
    with pytest.raises(ValueError, match="severity"):
        api.fired("x", severity="fatal")
    with pytest.raises(TypeError, match="measures"):
        api.passed(measures={"n": "3"})
    with pytest.raises(ValueError, match="confidence"):
        api.fired("x", confidence=2)
    assert api.undecided("no input").confidence == 0.0


def test_the_passed_result_every_check_shares_cannot_be_changed_by_one_of_them():
    shared = api.passed()
    assert shared is api.passed()  # one result, given to every check that passed without a word
    for change in (lambda: setattr(shared, "outcome", "fired"),
                   lambda: object.__setattr__(shared, "outcome", "fired"),
                   lambda: object.__setattr__(shared, "reason", "changed")):
        with pytest.raises((AttributeError, TypeError)):
            change()
    assert (shared.outcome, shared.reason, shared.severity, dict(shared.measures), shared.span_ids,
            shared.confidence) == ("passed", "", None, {}, (), 1.0)
    # a result equals a result of the same fields, never a bare tuple that looks like one
    assert api.fired("x", span_ids=["a"]) == api.fired("x", span_ids=("a",))
    assert api.passed() != ("passed", "", None, api.EMPTY, (), 1.0)
    fired = api.fired("x", severity="soft", measures={"n": 2}, span_ids=["a"])
    assert copy.copy(fired) == fired and copy.copy(fired) is not fired  # made again from its fields


def test_the_plugin_thread_publishes_early_findings_as_they_are_found():
    checks = load_all([HOSTILE + "StepCount"])
    sink = VerdictList()
    ev = Evaluator(Ruleset(tuple(checks)), sink)
    spans = _spans()
    ev.spans_arrived(spans)
    ev.isolation.drain(5)
    assert [(f.check, f.span_id) for f in sink.findings] == [("step_count", spans[3].span_id)]
    assert threading.active_count() >= 2  # the plug-ins' thread and its watchdog
    ev.close()


def test_the_plugin_in_docs_writing_checks_runs_as_written(tmp_path, monkeypatch):
    from tests.conftest import ROOT

    text = (ROOT / "docs" / "writing-checks.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "doc_refunds.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    [c] = load_all(["doc_refunds:RefundOverTotal"])
    t = trace_id()
    a = agent(t, name="shop", prompt="refund", answer="done")
    spans = [a, tool(t, a.span_id, "lookup_order", {"order_id": "A"}, '{"total": 40}', start_s=1),
             tool(t, a.span_id, "issue_refund", {"order_id": "A", "amount": 90}, "ok", start_s=2)]
    [v] = check_spans([spans], [c])
    assert v.results[0].fired and v.results[0].reason == "step 2: refund 90 > order total 40"
    assert v.results[0].span_ids == (spans[2].span_id,)


def test_a_plugin_bound_to_an_agent_and_one_in_shadow_judge_that_agents_runs(tmp_path):
    from faultgate_stream.checks.config import BindingConfig, ChecksConfig, ShadowConfig
    from faultgate_stream.verdict import ruleset

    config = ChecksConfig(bindings=(BindingConfig(agents=("shop",), plugins=(HOSTILE + "StepCount",),
                                                  shadow=ShadowConfig(plugins=(HOSTILE + "Noop",))),))
    rs = ruleset.build(config)
    sink = VerdictList()
    ev = Evaluator(rs, sink)
    other = _spans()
    other[0] = other[0]._replace(attrs={**other[0].attrs, "gen_ai.agent.name": "other"})
    for run in assemble_runs(_spans() + other):
        ev.run_completed(run)
    ev.close()
    shop, rest = sorted(sink.verdicts, key=lambda v: v.agent != "shop")
    assert [r.check for r in shop.results][-1] == "step_count" and shop.results[-1].fired
    assert [r.check for r in shop.shadow] == ["noop"] and not shop.shadow[0].undecided
    assert "step_count" not in [r.check for r in rest.results] and rest.shadow == ()
    # the result names the plug-in's own digest, not the binding's files
    assert shop.rule_digests[-1] == rs.bindings[0].checks[0].digest


def _unread_tool_calls(answer: str, calls: int = 12):
    """A read agent span with its answer, its tool calls in a vocabulary no convention reads
    (on tests/model/test_unread.py's pattern)."""
    from faultgate_stream.testing import span
    t = trace_id()
    a = agent(t, name="shop", prompt="Find our refund policy", answer=answer, end_s=calls + 2)
    return [a] + [span(t, "acme.toolCall", parent=a.span_id, start_s=1 + i, attributes={
        "acme.toolCall.name": "search_docs", "acme.toolCall.args": '{"query": "refunds"}',
        "acme.toolCall.result": "[]"}) for i in range(calls)]


def test_a_plugin_is_held_to_the_runs_unread_work_as_the_built_ins_are():
    # a plug-in that counts steps passed such a run at 0 steps; it is undecided, naming them
    checks = load_all([HOSTILE + "StepCount", HOSTILE + "AnswerMentionsPolicy"])
    [v] = check_spans([_unread_tool_calls("It is 30 days.")], checks)
    r = _results([v], "step_count")[0]
    assert r.undecided and "12 spans named acme.toolCall not read as tool calls" in r.reason, r.reason
    # one that says it reads only the answer, which was read, passes on it
    r = _results([v], "answer_mentions_policy")[0]
    assert not r.undecided and not r.fired, r.reason
    [v] = check_spans([_unread_tool_calls("Our policy: 30 days.")], checks)
    assert _results([v], "answer_mentions_policy")[0].fired
    # the same plug-in without the declaration is held to every input, as the API says
    class Unsaid(api.Check):
        name = "unsaid"

        def finish(self, state, run):
            return api.passed("no policy quoted")

    unsaid = build(Unsaid, "x:Unsaid", Origin("x:Unsaid", "", "", "x:Unsaid"))
    [v] = check_spans([_unread_tool_calls("It is 30 days.")], [unsaid])
    assert _results([v], "unsaid")[0].undecided


def test_a_plugin_that_reads_what_no_run_has_is_refused():
    class Odd(api.Check):
        name = "odd"
        reads = ("steps", "mood")

        def finish(self, state, run):
            return api.passed("ok")

    with pytest.raises(InputError, match="reads must be a tuple of steps, answer, finish_reasons"):
        build(Odd, "x:Odd", Origin("x:Odd", "", "", "x:Odd"))
