"""Windowed budgets against a reference model, on generated sessions: shuffled and
re-batched spans give the same verdicts, and the verdicts are the model's.

The model counts forward over every call of a session in time order: a call is over
budget when more than ``max`` calls of its session started in the ``within`` up to and
including it. The check instead looks back from each call over the store's events of
earlier runs plus its own run's steps. Runs of a session here follow one another (as one
file of a session in time order, or a live session, has them), where the two must agree.

Deterministic (``derandomize``) and bounded, so the suite stays fast and repeatable.
"""
from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from faultgate_stream.checks.policy import Policy, PolicyCheck
from faultgate_stream.pipeline import check_spans
from faultgate_stream.testing import agent, batches, tool, trace_id

WITHIN_S = 300
MAX = 3
POLICY = Policy.from_mapping({"max_calls": {"max": MAX, "within": f"{WITHIN_S}s", "per": "session"}})
SETTINGS = settings(derandomize=True, max_examples=150, deadline=None)

# a run: its session, the gap since the previous run, the gaps between its calls (seconds)
runs_of_sessions = st.lists(st.tuples(st.sampled_from(("S-1", "S-2")), st.integers(0, 400),
                                      st.lists(st.integers(1, 200), max_size=4)), min_size=1, max_size=6)


def _build(plan: list[tuple[str, int, list[int]]]) -> tuple[list[list], list[bool]]:
    """(each run's spans, whether the model says each run goes over budget)."""
    runs, calls_by_session, t = [], {}, 0.0
    for session, gap, call_gaps in plan:
        t += gap + 1
        tid = trace_id()
        times, c = [], t
        for g in call_gaps:
            c += g
            times.append(c)
        root = agent(tid, name="a", start_s=t, end_s=c + 1, session__id=session)
        runs.append((session, times, [root] + [tool(tid, root.span_id, "lookup", {"i": i}, "{}", start_s=x)
                                              for i, x in enumerate(times)]))
        calls_by_session.setdefault(session, []).extend(times)
        t = c + 1
    over = []
    for session, times, _ in runs:
        every = calls_by_session[session]
        over.append(any(sum(1 for y in every if x - WITHIN_S < y <= x) > MAX for x in times))
    return [spans for _, _, spans in runs], over


def _fired(runs: list[list], rng: random.Random | None) -> list[bool]:
    spans_in = []
    for spans in runs:
        spans = list(spans)
        if rng is not None:
            rng.shuffle(spans)
        spans_in.append(spans)
    if rng is not None:
        rng.shuffle(spans_in)  # the file's order of runs too: runs complete by start time
    flat = [s for r in spans_in for s in r]
    sizes = iter(lambda: rng.randint(1, 4), None) if rng is not None else iter(lambda: 1, None)
    verdicts = check_spans(batches(flat, sizes), [PolicyCheck(POLICY)])
    by_trace = {v.key.trace_id: v.results[0].fired for v in verdicts}
    return [by_trace[r[0].trace_id] for r in runs]


@SETTINGS
@given(runs_of_sessions, st.integers(0, 2**32 - 1))
def test_shuffled_and_rebatched_sessions_get_the_models_verdicts(plan: Any, seed: int):
    runs, over = _build(plan)
    assert _fired(runs, None) == over
    assert _fired(runs, random.Random(seed)) == over
