"""The assembler hands its consumer each batch's accepted spans at once (``spans_arrived``),
and the evaluator observes them exactly as it observed them one at a time: every span, in
arrival order, into its own trace's state, with early findings at the same spans."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.checks.base import Check
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.verdict import CheckResult
from faultgate_stream.pipeline import VerdictList
from faultgate_stream.testing import agent, span, tool, trace_id
from faultgate_stream.verdict.evaluate import Evaluator
from faultgate_stream.verdict.ruleset import Binding, Ruleset


class Watching(Check):
    """Writes down every span it observes, per run state, and fires early on a tool named
    ``boom``."""

    name = "watching"

    def __init__(self) -> None:
        self.seen: list[tuple[int, str, str]] = []
        self.states = 0

    def start(self):
        self.states += 1
        return {"id": self.states, "n": 0}

    def observe(self, state, span):
        state["n"] += 1
        self.seen.append((state["id"], span.trace_id, span.span_id))
        return "boom seen" if span.tool is not None and span.tool.name == "boom" else None

    def finish(self, state, run):
        return CheckResult(self.name, False, 1.0, f"{state['n'] if state else 0} observed", self.severity, self.kind)


def _traces(n: int) -> list:
    out = []
    for i in range(n):
        t = trace_id()
        root = agent(t, name=f"a{i % 2}")
        out += [root] + [tool(t, root.span_id, "boom" if j == 2 else "x", start_s=j) for j in range(4)]
    return out


@settings(max_examples=60, deadline=None)
@given(rnd=st.randoms(use_true_random=False), cut=st.integers(1, 9), bound=st.booleans())
def test_a_batch_is_observed_as_its_spans_were_one_at_a_time(rnd, cut, bound):
    spans = _traces(3)
    rnd.shuffle(spans)
    batches = [spans[i:i + cut] for i in range(0, len(spans), cut)]

    def run(batched: bool):
        check = Watching()
        bound_check = Watching()
        # a name of its own: both fire at the same span (`boom`), so the findings show the
        # order at one span too (every-run checks first), not only the first of one name
        bound_check.name = "watching_bound"
        rules = Ruleset((check,), (Binding(("a1",), (bound_check,), "t"),) if bound else ())
        sink = VerdictList()
        ev = Evaluator(rules, sink)
        if batched:
            asm = Assembler(ev, ManualClock(10**18), AssembleConfig())
            for b in batches:
                asm.add(b)  # nothing completes: what is compared is what the span path saw
        else:
            for s in spans:
                ev.span_arrived(s)
        seen = [(t, s) for _, t, s in check.seen]
        per_state = {}
        for state, t, s in check.seen:
            per_state.setdefault(state, set()).add(t)
        return seen, [(f.trace_id, f.span_id, f.check) for f in sink.findings], len(bound_check.seen), per_state

    batched, one_by_one = run(True), run(False)
    assert batched[:3] == one_by_one[:3]
    assert all(len(traces) == 1 for traces in batched[3].values())  # each state saw one trace only


def test_at_one_span_the_every_run_checks_findings_come_before_the_bound_checks():
    t = trace_id()
    root = agent(t, name="a1")
    spans = [root] + [tool(t, root.span_id, name, start_s=j) for j, name in enumerate(("x", "boom", "x"))]
    boom = spans[2].span_id
    for batch in (spans, spans[:2], spans[:1]):  # the boom span in the batch, or after it in its own
        bound_check = Watching()
        bound_check.name = "watching_bound"
        sink = VerdictList()
        asm = Assembler(Evaluator(Ruleset((Watching(),), (Binding(("a1",), (bound_check,), "t"),)), sink),
                        ManualClock(10**18), AssembleConfig())
        asm.add(batch)
        if len(batch) < len(spans):
            asm.add(spans[len(batch):])
        assert [(f.span_id, f.check, f.agent) for f in sink.findings] == [
            (boom, "watching", ""), (boom, "watching_bound", "a1")]


def test_the_agent_index_is_built_only_for_a_ruleset_that_binds_checks_to_agents():
    t = trace_id()
    plain = Evaluator(Ruleset((Watching(),)), VerdictList())
    plain.spans_arrived([agent(t)])
    assert plain._traces[t].agents is None  # noqa: SLF001
    binding = Evaluator(Ruleset((), (Binding(("agent",), (Watching(),), "t"),)), VerdictList())
    binding.spans_arrived([agent(t)])
    assert binding._traces[t].agents is not None  # noqa: SLF001


def test_without_early_findings_no_span_is_observed_and_every_result_is_the_same():
    """``check_spans(..., early=False)``, as the ``check`` command runs: the checks' states
    are never shown a span, the verdicts carry no early findings, and every result is what
    the observed pass gives (``finish`` decides alone), on the gate files with their golden
    answers and on runs where a check fires early."""
    from faultgate_stream.checks.expectations import Golden
    from faultgate_stream.checks.registry import select
    from faultgate_stream.pipeline import check_spans
    from faultgate_stream.read.files import read_file
    from tests.conftest import CORPUS

    gate = CORPUS / "faultgate-0.4.1" / "examples" / "gate"
    inputs = [read_file(str(f))[1] for f in sorted(gate.glob("*_*.json"))] + [_traces(3)]
    assert len(inputs) >= 5
    fired_early = 0
    for spans in inputs:
        watched, unwatched = Watching(), Watching()
        golden = Golden.load(str(gate / "golden.json"))
        seen = check_spans([spans], [*select(golden=golden), watched])
        unseen = check_spans([spans], [*select(golden=golden), unwatched], early=False)
        assert watched.seen and not unwatched.seen
        assert [v.key for v in seen] == [v.key for v in unseen]
        for a, b in zip(seen, unseen):
            assert a.results[:-1] == b.results[:-1]  # the last is Watching's, which counts what it saw
            assert b.early == ()
            fired_early += bool(a.early)
    assert fired_early >= 3  # _traces' runs: Watching fires on their `boom` call


def _firing_traces(n: int) -> list:
    """Runs where the default checks that observe spans fire early: a denied argument
    (policy), a provider's context-limit error (context_overflow), both on one span, or
    each on its own span in either order."""
    out = []
    denied, overflow = {"path": "../../etc/passwd"}, "This model's maximum context length is 8192 tokens"
    for i in range(n):
        t = trace_id()
        root = agent(t, answer="done")
        shape = i % 4
        out += [root, tool(t, root.span_id, "read_file", denied if shape in (0, 1) else {}, "", start_s=1)]
        if shape in (1, 2):
            out.append(span(t, "chat", parent=root.span_id, start_s=2, status=2, message=overflow))
        if shape == 2:
            out.append(tool(t, root.span_id, "read_file", denied, "", start_s=3))
        if shape == 3:
            out.append(tool(t, root.span_id, "read_file", denied, "", start_s=2, status=2)._replace(
                status_message=overflow))
    return out


@settings(max_examples=40, deadline=None)
@given(rnd=st.randoms(use_true_random=False), cut=st.integers(1, 12))
def test_the_default_checks_find_early_what_observing_each_span_finds(rnd, cut):
    """The default checks observe a batch a trace's stretch at a time, each with one compiled
    call (``observe_spans``): the findings, their reasons and their order are what calling
    each check's ``observe`` on every span in arrival order finds, first finding per trace
    and check."""
    from faultgate_stream.checks.registry import select

    spans = _firing_traces(8)
    rnd.shuffle(spans)
    checks = tuple(select())
    watching = [c for c in checks if type(c).observe is not Check.observe]
    assert {c.name for c in watching} >= {"policy", "context_overflow"}
    want, states = [], {}
    for s in spans:
        for c in watching:
            state = states.setdefault((s.trace_id, c.name), c.start())
            reason = c.observe(state, s)
            if reason and not any(w[0] == s.trace_id and w[2] == c.name for w in want):
                want.append((s.trace_id, s.span_id, c.name, reason))
    assert {w[2] for w in want} == {"policy", "context_overflow"}
    sink = VerdictList()
    asm = Assembler(Evaluator(Ruleset(checks), sink), ManualClock(10**18), AssembleConfig())
    for i in range(0, len(spans), cut):
        asm.add(spans[i:i + cut])
    assert [(f.trace_id, f.span_id, f.check, f.reason) for f in sink.findings] == want
