"""Hypothesis strategies for verdicts as the sinks meet them: results that fire, pass or are
undecided, reasons that hold secrets or quote values cut short (``Reason``), amendments,
shadow results, the loop's measures, odd agent names and times."""
from __future__ import annotations

from hypothesis import strategies as st

from faultgate_stream.model.reason import quoted, reason
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, Completion, RunVerdict, Severity

CHECKS = ("search_loop", "abstention", "policy", "loop", "outcome", "repeated_call", "unrecovered_tool_error")
SECRET = "sk-abcdefghijklmnop1234"
TEXTS = ("answered", "no unrecovered tool errors", f"step 2: lookup failed: token {SECRET}", "mail a@b.example",
         "", "ünïcode ✓ 漢字", "faultgate.reason in the text", "x" * 300)


def _reasons() -> st.SearchStrategy[str]:
    # two quoted values that cut to the same text, one hiding a secret past the cut
    cut_alike = st.sampled_from([reason("args ", quoted("x" * 50 + " " + SECRET, 52)),
                                 reason("args ", quoted("x" * 50 + " s!", 52))])
    return st.one_of(st.sampled_from(TEXTS), st.text(max_size=40), cut_alike)


def results() -> st.SearchStrategy[CheckResult]:
    measures = st.lists(st.tuples(st.sampled_from(("steps", "seconds", "tokens", "cost_usd", "other")),
                                  st.floats(-5, 1e6)), max_size=3).map(tuple)
    return st.builds(CheckResult, st.sampled_from(CHECKS), st.booleans(), st.sampled_from((0.0, 0.5, 1.0)),
                     _reasons(), st.sampled_from(list(Severity)), st.sampled_from(("rule", "judge", "policy")),
                     st.sampled_from(("", "sub")), st.booleans(), measures)


@st.composite
def verdicts(draw, trace_ids: st.SearchStrategy[str] | None = None) -> RunVerdict:
    tid = draw(trace_ids if trace_ids is not None else st.sampled_from(["0af7651916cd43dd8448eb211c80319c",
                                                                         "00000000000000000000000000000001"]))
    root = draw(st.sampled_from(["b7ad6b7169203331", "", "00f067aa0ba902b7"]))
    rs = tuple(draw(st.lists(results(), max_size=7)))
    revision = draw(st.sampled_from((0, 0, 0, 1, 2)))
    return RunVerdict(
        key=RunKey(tid, root), scenario=draw(st.sampled_from(("s-1", "p-0123456789ab", f"key {SECRET}", "", "ü"))),
        agent=draw(st.sampled_from(("shop", "support", "", "a" * 200, "mail a@b.example", "other"))),
        agent_version=draw(st.sampled_from(("", "1.2"))), completion=draw(st.sampled_from(list(Completion))),
        results=rs, steps=draw(st.integers(0, 300)), spans=draw(st.integers(0, 50)),
        first_start_ns=draw(st.integers(0, 2**63)), last_end_ns=draw(st.sampled_from((0, 50, 2**63 - 1))),
        root_arrival_ns=draw(st.sampled_from((0, 10**9, 2 * 10**9))),
        decided_ns=draw(st.sampled_from((0, 2 * 10**9 + 5, 9 * 10**9))),
        root_span_id=root,
        measures=draw(st.fixed_dictionaries({}, optional={"latency_ms": st.one_of(st.none(), st.floats(0, 1e7)),
                                                          "tokens": st.none()})),
        rule_digests=tuple(draw(st.sampled_from(("", "d1", "d2"))) for _ in rs) if draw(st.booleans()) else (),
        shadow=tuple(draw(st.lists(results(), max_size=2))),
        revision=revision, previous="clean" if revision else "",
        amended_checks=tuple(draw(st.lists(st.sampled_from(CHECKS), max_size=2))) if revision else (),
        amended_by="b7ad6b7169203331" if revision else "",
        unread=tuple(draw(st.lists(st.tuples(st.sampled_from(("tool", "model", "output")), st.integers(1, 60)),
                                   max_size=3, unique_by=lambda kn: kn[0]))),
    )
