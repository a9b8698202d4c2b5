"""A run's verdict holds what it held before its building was made cheap (issue 12): every
field equal to the straightforward formula's, on the conformance corpus, on runs with
nested agents, early findings, spans above the run and setup-only traces, with and
without per-agent bindings."""
from __future__ import annotations

import json

import pytest

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.checks.registry import select
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.records import CREATE_AGENT
from faultgate_stream.model.verdict import Completion, RunVerdict
from faultgate_stream.pipeline import OFFLINE_LIMITS, VerdictList
from faultgate_stream.read.files import read_files
from faultgate_stream.verdict.evaluate import Evaluator
from faultgate_stream.verdict.ruleset import Binding, Ruleset
from tests.conformance import score


def _formula(st, run, results) -> RunVerdict:
    """The verdict as ``Evaluator._verdict`` wrote it, field by field, before issue 12."""
    setup_only = bool(run.spans) and all(s.operation == CREATE_AGENT for s in run.spans)
    members = {s.span_id for s in run.spans}
    return RunVerdict(
        key=run.key, scenario=run.scenario, agent=run.agent, agent_version=run.agent_version,
        completion=run.completion, results=results, steps=len(run.steps), spans=len(run.spans),
        first_start_ns=min((s.start_ns for s in run.spans), default=0),
        last_end_ns=max((s.end_ns for s in run.spans), default=0),
        root_arrival_ns=run.root_arrival_ns, decided_ns=run.closed_ns,
        root_span_id=run.root.span_id if run.root is not None else "",
        released_span_ids=frozenset(members) | run.outside_span_ids,
        early=tuple(f for f in st.early if f.span_id in members),
        measures={"tokens": run.usage_tokens, "latency_ms": run.latency_ms, "cost_usd": run.cost_usd},
        rule_digests=tuple(st.ruleset.digest_of(r.check, r.agent or run.agent) for r in results),
        shadow=(), setup_only=setup_only)


class _Checked(Evaluator):
    """An evaluator that holds each verdict it builds to the formula."""

    compared = 0

    def _verdict(self, st, run, judged=()):
        got: list = []
        results = self._results
        self._results = lambda st_, run_: got.append(results(st_, run_)) or got[-1]
        try:
            v = super()._verdict(st, run, judged)
        finally:
            del self._results
        expected = _formula(st, run, got[0] + judged if got else ())
        assert type(v) is RunVerdict and v._asdict() == expected._asdict()
        assert type(v.released_span_ids) is frozenset
        _Checked.compared += 1
        return v


def _verdicts(batches, ruleset) -> list[RunVerdict]:
    sink = VerdictList()
    asm = Assembler(_Checked(ruleset, sink), ManualClock(), OFFLINE_LIMITS)
    for batch in batches:
        asm.add(batch)
    asm.close_all(Completion.COMPLETE, remember=False)
    return sink.verdicts


def _rulesets():
    checks = tuple(select(score.BUILT_IN.split(",") + ["loop"]))
    yield Ruleset(checks, digest="every-run")
    # a binding for every agent, holding some of the checks: digests by binding
    yield Ruleset(checks, bindings=(Binding(("*",), checks[:2], digest="bound"),), digest="every-run")


@pytest.mark.parametrize("family", score.families(), ids=lambda p: p.name)
def test_the_verdicts_of_the_conformance_corpus_are_the_formulas(family):
    found = read_files([str(p) for p in score.input_files(family)])
    for ruleset in _rulesets():
        before = _Checked.compared
        _verdicts([f.spans for f in found], ruleset)
        assert _Checked.compared > before


def test_nested_agents_early_findings_outside_spans_and_setup_only_traces_are_the_formulas():
    from faultgate_stream.testing import agent, span, span_id, tool, trace_id

    t, top, mid, above = trace_id(), span_id(), span_id(), span_id()
    spans = [span(t, "workflow", sid=above, start_s=0.0, end_s=20),
             agent(t, name="shop", sid=top, parent=above, start_s=0.5),
             agent(t, name="sub", sid=mid, parent=top, start_s=0.7, end_s=9),
             # the same call three times: the loop check fires early, as the third arrives
             *(tool(t, mid, "lookup", {"q": 1}, "no match", start_s=1.0 + i) for i in range(3))]
    setup = trace_id()
    setup_spans = [span(setup, "create_agent a", gen_ai__operation__name=CREATE_AGENT)]
    seen = set()
    for ruleset in _rulesets():
        vs = _verdicts([spans, setup_spans], ruleset)
        seen |= {(v.setup_only, bool(v.early), len(v.released_span_ids) > v.spans) for v in vs}
    assert (True, False, False) in seen and (False, True, True) in seen


def test_a_prompt_with_a_lone_surrogate_gets_a_verdict_keyed_by_its_surrogatepass_hash():
    """A JSON ``\\ud800`` escape in the prompt's messages reads as a lone surrogate, which
    plain UTF-8 cannot encode: the scenario key hashed it and raised, and the run got no
    verdict (PARITY_DEVIATIONS.md). Any other prompt keeps faultgate's key."""
    import hashlib

    from faultgate_stream.pipeline import check_spans
    from faultgate_stream.testing import agent, trace_id
    from faultgate_stream.verdict.redact import get_redactor, safe_key

    def run(text: str):
        messages = [{"role": "user", "parts": [{"type": "text", "content": text}]}]
        root = agent(trace_id(), answer="done", **{"gen_ai.input.messages": json.dumps(messages)})
        (v,) = check_spans([[root]], list(select()))
        return root, v

    root, v = run("\ud800 hi")
    assert root.prompt == "\ud800 hi" and v.results
    assert v.scenario == "p-" + hashlib.sha256(b"\xed\xa0\x80 hi").hexdigest()[:12]
    _, plain = run("hi")
    assert plain.scenario == "p-" + hashlib.sha256(b"hi").hexdigest()[:12]
    key = "\ud800 mail a@b.example"
    assert safe_key(key, get_redactor("builtin")).endswith(
        "#" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8])
