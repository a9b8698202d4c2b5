"""The loop check: each shape with the look-alike that must stay clean, the waste it
reports, the early finding, and order independence."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from faultgate_stream.checks import loop as loop_mod
from faultgate_stream.checks.loop import Loop, call_key
from faultgate_stream.checks.registry import select
from faultgate_stream.pipeline import check_spans
from faultgate_stream.testing import agent, batches, simple_run, span, tool, trace_id


def _verdict(spans):
    (verdict,) = check_spans([spans], [Loop()])
    (r,) = verdict.results
    return r, verdict


# --------------------------------------------------------------------------- repeat

def test_equivalent_arguments_are_one_call_whatever_their_spelling():
    a = call_key("search", '{"city": "Paris", "limit": 5}')
    assert a == call_key("search", '{ "limit": 5.0,  "city": "PARIS" }')
    assert a == call_key("search", '{"limit":5e0,"city":"  paris "}')
    assert a != call_key("search", '{"city": "Paris", "limit": 6}')
    assert a != call_key("lookup", '{"city": "Paris", "limit": 5}')


def test_repeat_fires_on_equivalent_arguments_with_overlapping_results_where_repeated_call_does_not():
    spans = simple_run([("search", {"city": "Paris", "limit": 5}, "Hotel Lutetia, 4 stars, 210 EUR"),
                        ("search", '{"limit": 5.0, "city": "PARIS"}', "Hotel Lutetia, 4 stars, 210 EUR."),
                        ("search", '{"city":"paris","limit":5}', "hotel lutetia 4 stars 210 eur (cached)")])
    r, _ = _verdict(spans)
    assert r.fired and r.reason.startswith("Tool 'search' called 3 times with equivalent arguments")
    assert "(steps 1, 2, 3)" in r.reason
    (rc,) = check_spans([spans], select(["repeated_call"]))[0].results
    assert not rc.fired  # faultgate's rule wants the same text: the reason this check exists


def test_polling_whose_results_change_is_not_a_loop():
    spans = simple_run([("job_status", {"id": 7}, '{"state": "queued", "progress": 0}'),
                        ("job_status", {"id": 7}, '{"state": "running", "progress": 40}'),
                        ("job_status", {"id": 7}, '{"state": "running", "progress": 85}'),
                        ("job_status", {"id": 7}, '{"state": "done", "url": "s3://out/7.csv"}')])
    r, _ = _verdict(spans)
    assert not r.fired, r.reason


def test_a_retry_after_an_error_is_not_a_loop():
    spans = simple_run([("pay", {"order": 1}, "Error: gateway timeout"),
                        ("pay", {"order": 1}, "Error: gateway timeout"),
                        ("pay", {"order": 1}, '{"paid": true, "ref": "x1"}')])
    assert not _verdict(spans)[0].fired


def test_failed_calls_by_span_status_never_join_a_loop():
    t = trace_id()
    root = agent(t, prompt="q", answer="a")
    spans = [root] + [tool(t, root.span_id, "fetch", {"u": 1}, "timeout", start_s=1 + i, status=2) for i in range(4)]
    assert not _verdict(spans)[0].fired


# --------------------------------------------------------------------------- ping-pong

def test_ping_pong_between_two_calls_fires():
    spans = simple_run([("get_weather", {"city": "Oslo"}, "rain 4C"), ("get_clothing", {"temp": 4}, "coat, umbrella"),
                        ("get_weather", {"city": "oslo"}, "rain 4C"), ("get_clothing", {"temp": 4.0}, "coat, umbrella")])
    r, _ = _verdict(spans)
    assert r.fired and r.reason.startswith("Ping-pong between 'get_weather' and 'get_clothing'"), r.reason
    assert "(steps 1, 2, 3, 4)" in r.reason and "wasted inside the loop: 2 steps" in r.reason


def test_alternating_tools_with_new_arguments_is_not_ping_pong():
    spans = simple_run([("get_weather", {"city": "Oslo"}, "rain 4C"), ("get_clothing", {"temp": 4}, "coat"),
                        ("get_weather", {"city": "Rome"}, "sun 24C"), ("get_clothing", {"temp": 24}, "t-shirt")])
    assert not _verdict(spans)[0].fired


# --------------------------------------------------------------------------- no progress

def test_calls_that_ask_and_learn_nothing_new_fire_as_no_progress():
    spans = simple_run([("search_docs", {"q": "refund policy receipt days"}, "Refunds within 30 days with receipt."),
                        ("search_docs", {"q": "policy refund"}, "refunds within 30 days, with receipt"),
                        ("search_docs", {"q": "refund days"}, "Refunds: within 30 days."),
                        ("search_docs", {"q": "receipt refund"}, "with receipt"),
                        ("search_docs", {"q": "days policy"}, "30 days")])
    r, _ = _verdict(spans)
    assert r.fired and "4 consecutive calls that asked and learned nothing new (steps 2, 3, 4, 5)" in r.reason, r.reason


def test_new_queries_that_find_nothing_are_searching_not_looping():
    spans = simple_run([("search", {"query": q}, '{"n_candidates": 0, "candidates": []}')
                        for q in ("Ember Collective", "Ferro-4854 affiliation", "Drift-4853", "Xebec Labs", "4769")])
    assert not _verdict(spans)[0].fired


def test_a_tool_error_followed_by_a_different_tool_that_makes_progress_is_clean():
    spans = simple_run([("lookup_order", {"id": 9}, "Error: not found"), ("search_orders", {"email": "a@b"},
                        '{"orders": [{"id": 19, "status": "shipped"}]}'), ("track", {"id": 19}, "in transit, Lyon")])
    assert not _verdict(spans)[0].fired


def test_an_empty_looking_but_real_answer_is_progress():
    spans = simple_run([("count_open_tickets", {"team": "a"}, "0"), ("count_open_tickets", {"team": "b"}, "3"),
                        ("count_open_tickets", {"team": "c"}, "12")])
    assert not _verdict(spans)[0].fired


# --------------------------------------------------------------------------- waste

def test_the_reason_carries_steps_seconds_tokens_and_cost_inside_the_loop():
    t = trace_id()
    root = agent(t, prompt="q", answer="a", end_s=20)
    spans = [root]
    for i in range(3):
        spans.append(span(t, "chat gpt-4o", parent=root.span_id, start_s=1 + 4 * i, end_s=1.5 + 4 * i,
                          gen_ai__operation__name="chat", gen_ai__usage__input_tokens=1000,
                          gen_ai__usage__output_tokens=50, faultgate__cost_usd=0.01))
        spans.append(tool(t, root.span_id, "search", {"q": "x"}, "same result", start_s=2 + 4 * i))
    r, _ = _verdict(spans)
    assert r.fired
    # wasted: the 2nd and 3rd calls (start 6 s, end 10.1 s) and the chat span between them
    assert r.reason.endswith("wasted inside the loop: 2 steps, 4.10 s, 1,050 tokens, $0.0100"), r.reason


def test_waste_says_what_was_not_recorded():
    r, _ = _verdict(simple_run([("s", {"q": 1}, "r")] * 3))
    assert r.fired and "tokens not recorded" in r.reason and "cost not recorded" in r.reason


# --------------------------------------------------------------------------- early, order, bounds

def test_a_repeat_fires_early_when_its_third_call_arrives():
    spans = simple_run([("search", {"q": "x"}, "r1 r2"), ("other", {}, "z"), ("search", {"q": "X"}, "r1 r2"),
                        ("search", {"q": " x"}, "r1  r2")])
    (v,) = check_spans([spans], [Loop()])
    assert [e.check for e in v.early] == ["loop"]
    assert v.early[0].span_id == spans[4].span_id


def test_no_early_finding_for_ping_pong_which_a_later_span_could_break():
    spans = simple_run([("a", {}, "1"), ("b", {}, "2"), ("a", {}, "1"), ("b", {}, "2")])
    (v,) = check_spans([spans], [Loop()])
    assert v.results[0].fired and not v.early


def test_work_per_call_is_bounded_by_the_group_cap():
    # 2,000 calls of one tool with equivalent arguments and pairwise-distinct results: the
    # clique search looks at no more than MAX_PER_KEY earlier members for each
    seen: list[int] = []
    real = loop_mod.repeat_in

    def counting(members, new):
        seen.append(len(members))
        return real(members, new)

    loop_mod.repeat_in = counting
    try:
        spans = simple_run([("s", {"q": 1}, f"result number {i} unique{i}") for i in range(2000)])
        _verdict(spans)
    finally:
        loop_mod.repeat_in = real
    # once as each span arrives (observe), once over the run's steps (finish)
    assert len(seen) == 2 * 2000 and max(seen) == loop_mod.MAX_PER_KEY


CASES = [
    [("search", {"q": "x"}, "same"), ("x", {}, "y"), ("search", {"q": "X "}, "same"), ("search", {"q": "x"}, "same")],
    [("a", {"k": 1}, "1"), ("b", {"k": 2}, "2"), ("a", {"k": 1.0}, "1"), ("b", {"k": 2}, "2"), ("c", {}, "3")],
    [("d", {"q": i}, "one two three") for i in range(6)],
    [("poll", {"id": 1}, f"state {i}") for i in range(5)],
]


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(range(len(CASES))), seed=st.integers(0, 2**32 - 1))
def test_same_verdict_whatever_the_arrival_order_and_batching(case, seed):
    spans = simple_run(CASES[case])
    want = _verdict(spans)[0]
    rng = random.Random(seed)
    shuffled = spans[:]
    rng.shuffle(shuffled)
    sizes = iter(lambda: rng.randint(1, 4), None)
    (v,) = check_spans(batches(shuffled, sizes), [Loop()])
    assert (v.results[0].fired, v.results[0].reason) == (want.fired, want.reason)


def test_model_spans_that_recorded_no_output_and_no_tool_spans_leave_loop_and_repeated_call_undecided():
    """Content off on a framework without tool spans: the calls the model made are nowhere,
    so "too few calls for a loop" would be a pass on input never seen."""
    t = trace_id()
    root = agent(t, answer="done.")
    chats = [span(t, "chat m", parent=root.span_id, start_s=1.0 + i, gen_ai__operation__name="chat",
                  gen_ai__response__finish_reasons=["tool_calls"]) for i in range(4)]
    assert all(c.missing for c in chats)  # the reader flags what a model span should carry
    r, _ = _verdict([root, *chats])
    assert r.undecided and "tool calls not captured" in r.reason, r.reason
    (rc,) = check_spans([[root, *chats]], select(["repeated_call"]))[0].results
    assert rc.undecided, rc.reason
    # the same run with its calls' tool spans recorded: one call, seen, is too few for a loop
    seen = [root, chats[0], tool(t, root.span_id, "search", {"q": "x"}, "found x", start_s=1.5)]
    assert not _verdict(seen)[0].undecided
