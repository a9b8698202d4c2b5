"""Plug-ins for the tests: one that behaves, and hostile ones (issue 33's list), each doing
one bad thing on every run. Imported as ``tests.checks.hostile_plugins:Class``."""
from __future__ import annotations

import time

from faultgate_stream.checks import api


class StepCount(api.Check):
    """Behaves: fires on runs of more than three steps, early on a ``search`` span."""

    name = "step_count"
    version = "2.1"
    description = "more than three steps"

    def observe(self, state, span):
        if span.tool == "search":
            return api.fired(f"a search at {span.span_id}", span_ids=[span.span_id])
        return None

    def finish(self, state, run):
        n = len(run.steps)
        if n > 3:
            return api.fired(f"{n} steps > 3", measures={"steps": n}, span_ids=[s.span_id for s in run.steps[:2]])
        return api.passed(f"{n} steps", measures={"steps": n})


class Noop(api.Check):
    """Reads nothing: the cheapest plug-in (bench/live.py measures it)."""

    name = "noop"

    def finish(self, state, run):
        return api.passed()


class Raises(api.Check):
    name = "raises"

    def finish(self, state, run):
        raise KeyError("no such thing")


class Sleeps(api.Check):
    name = "sleeps"
    SECONDS = 10.0

    def finish(self, state, run):
        time.sleep(self.SECONDS)
        return api.passed()


class Spins(api.Check):
    """A tight loop that never ends, swallowing what it can."""

    name = "spins"

    def finish(self, state, run):
        x = 0
        while True:
            x += 1


class Allocates(api.Check):
    """Allocates a lot, in a loop of Python code: ~8 MB a millisecond until stopped."""

    name = "allocates"

    def finish(self, state, run):
        held = []
        while True:
            held.append(bytearray(1 << 20))


class HoldsTheGil(api.Check):
    """One call into C that holds the GIL for a good while: no thread can interrupt it."""

    name = "holds_the_gil"

    def finish(self, state, run):
        return api.passed(str(sum(range(30_000_000))))


class SpinsAWhile(api.Check):
    """A loop of Python code that returns by itself once its thread has computed ``SECONDS``:
    it lets every waiting thread in, however long it runs."""

    name = "spins_a_while"
    SECONDS = 0.3

    def finish(self, state, run):
        end = time.thread_time() + self.SECONDS
        while time.thread_time() < end:
            pass
        return api.passed()


class Garbage(api.Check):
    name = "garbage"

    def finish(self, state, run):
        return {"fired": True, "reason": "not a result"}


class Mutates(api.Check):
    """Tries to change what it was given: each attempt raises, so the first one ends it."""

    name = "mutates"

    def finish(self, state, run):
        for attempt in (lambda: run.steps[0].args.__setitem__("amount", 0) if run.steps else None,
                        lambda: setattr(run, "agent", "someone else"),
                        lambda: run.spans[0].attributes.__setitem__("gen_ai.agent.name", "x"),
                        lambda: run.calls.clear()):
            try:
                attempt()
            except (TypeError, AttributeError):
                continue
            return api.fired("a view could be changed")
        return api.passed("every view refused to change")


HOSTILE = ("Raises", "Sleeps", "Spins", "Allocates", "Garbage")


class AnswerMentionsPolicy(api.Check):
    """Reads only the answer, and fires on evidence it saw: API 1.1's ``reads`` and
    ``fires_on_evidence``."""

    name = "answer_mentions_policy"
    reads = ("answer",)
    fires_on_evidence = True

    def finish(self, state, run):
        if "policy" in run.answer:
            return api.fired("the answer quotes a policy")
        return api.passed("no policy quoted")
