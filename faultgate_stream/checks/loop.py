"""loop: the agent went round in circles, in any of three shapes, and what that cost.

``repeated_call`` keeps faultgate's narrow rule (the same text three times in a row with
identical results). Real loops are looser, so this check sees:

- **repeat**: one tool called ``REPEATS`` times with *equivalent* arguments (key order,
  white space, the case of string values and the way a number is written do not matter)
  whose results overlap (``OVERLAP`` Jaccard on their word sets, pairwise);
- **ping-pong**: two different calls alternating, A B A B, each pair's results overlapping;
- **no progress**: ``STALL`` consecutive calls that ask nothing new and learn nothing new:
  neither their arguments nor their results hold a word that earlier calls of the run had
  not already used or brought. (An agent that tries new queries and finds nothing is
  searching, not looping: ``search_loop`` judges that, at the step budget.)

Not loops: a retry after an error (failed calls never join a loop: a span in error status,
or a result that says it is an error), and polling whose results change (they don't
overlap, and they add words).

Order: *repeat* is a property of the set of calls (a subset with three pairwise-overlapping
members stays one whatever else arrives), so it fires early, the moment its third call's
span arrives. Ping-pong and no progress are about adjacency in start order, which a later
span can break by starting in between, so they are decided in ``finish`` only.

The reason names the steps and the waste inside the loop: the calls after the first of
the loop, the seconds from the first wasted call's start to the last one's end, and the
tokens and cost of every span in that window (``gen_ai.usage.*``, ``faultgate.cost_usd``),
where the spans recorded them.

Bounded: at most ``MAX_KEYS`` distinct calls and ``MAX_PER_KEY`` successful calls of each
are kept per run while spans arrive; beyond that a call is not remembered for the early
finding (``finish`` still sees every step). ``observe`` keeps each call's key and result
words (at most ``MAX_SEEN``) so that ``finish`` does not work them out a second time, and
``finish`` reads failures from ``step_errors``, which the other checks share.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.signals import span_error, step_errors, structural_error
from faultgate_stream.model.records import MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT, SpanRecord, Step
from faultgate_stream.model.run import COST, USAGE_IN, USAGE_OUT, Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult
from faultgate_stream.read.payload import loads

REPEATS = 3
_TOOL_CONTENT = MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT
STALL = 4
OVERLAP = 0.8
MAX_KEYS = 256
MAX_PER_KEY = 32
# Calls whose key and words observe keeps for finish; past it finish works the rest out itself.
MAX_SEEN = 4096
MAX_DEPTH = 32  # argument JSON nested deeper is compared as text
_PUNCT = str.maketrans({c: " " for c in "\"'`{}[](),:;.!?<>=|\\/"})


# --------------------------------------------------------------------------- equivalence

def _norm(v: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        return repr(v)
    if isinstance(v, str):
        return " ".join(v.split()).casefold()
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        f = float(v)
        if math.isfinite(f) and f == int(f) and abs(f) < 2 ** 53:
            return int(f)  # 2, 2.0 and 2e0 are one number
        return f if math.isfinite(f) else repr(f)
    if isinstance(v, dict):
        return tuple(sorted(((str(k), _norm(x, depth + 1)) for k, x in v.items()), key=lambda kv: kv[0]))
    if isinstance(v, list):
        return ("[",) + tuple(_norm(x, depth + 1) for x in v)
    return repr(v)


def call_key(tool: str, arguments: str) -> tuple[str, Any]:
    """Equal for two calls of one tool whose arguments mean the same."""
    s = arguments.strip()
    if s[:1] in "{[":
        try:
            return tool, _norm(loads(s))
        except (ValueError, RecursionError):
            pass
    return tool, " ".join(s.split()).casefold()


# The same table for ASCII text as bytes: bytes.translate is a table lookup per byte, where
# str.translate with a dict is a dict lookup per character (a 200-character result: about
# 10 us against 14 us here, on a shared machine).
_PUNCT_BYTES = bytes.maketrans(b"\"'`{}[](),:;.!?<>=|\\/", b" " * 21)


def words(result: str) -> frozenset[str]:
    if result.isascii():  # casefold is lower for ASCII
        return frozenset(result.lower().encode().translate(_PUNCT_BYTES).decode().split())
    return frozenset(result.casefold().translate(_PUNCT).split())


def overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a and not b:
        return True
    return len(a & b) / len(a | b) >= OVERLAP


def failed(ok: bool, result: str) -> bool:
    return not ok or bool(structural_error(result))


# --------------------------------------------------------------------------- the three shapes

class Call(NamedTuple):
    key: tuple[str, Any]
    words: frozenset[str]      # of the result
    span_id: str
    start_ns: int
    index: int = 0             # the step's, in finish; 0 while spans arrive
    asks: frozenset[str] = frozenset()  # words of the tool's name and arguments


def repeat_in(members: list[Call], new: Call) -> list[Call] | None:
    """``REPEATS`` pairwise-overlapping calls among ``members`` + ``new`` that include
    ``new``: a clique, searched among the few members that overlap ``new``."""
    near = [m for m in members if overlap(m.words, new.words)]
    need = REPEATS - 1
    if len(near) < need:
        return None

    def grow(chosen: list[Call], rest: list[Call]) -> list[Call] | None:
        if len(chosen) == need:
            return chosen
        for i, c in enumerate(rest):
            if all(overlap(c.words, o.words) for o in chosen):
                found = grow(chosen + [c], rest[i + 1:])
                if found is not None:
                    return found
        return None

    found = grow([], near)
    return None if found is None else sorted(found + [new], key=lambda c: (c.start_ns, c.span_id))


def find_repeat(calls: list[Call]) -> list[Call] | None:
    """The repeat loop completed earliest in start order, if any."""
    groups: dict[tuple[str, Any], list[Call]] = {}
    for c in calls:
        members = groups.setdefault(c.key, [])
        loop = repeat_in(members, c)
        if loop is not None:
            return loop
        if len(members) < MAX_PER_KEY:  # the clique search stays constant per call
            members.append(c)
    return None


def find_ping_pong(calls: list[Call]) -> list[Call] | None:
    for a, b, c, d in zip(calls, calls[1:], calls[2:], calls[3:]):
        if a.key == c.key and b.key == d.key and a.key != b.key \
                and overlap(a.words, c.words) and overlap(b.words, d.words):
            return [a, b, c, d]
    return None


def find_stall(calls: list[Call]) -> list[Call] | None:
    """``STALL`` consecutive calls after the first whose arguments and results hold only
    words seen before."""
    learned: set[str] = set()
    asked: set[str] = set()
    streak: list[Call] = []
    for i, c in enumerate(calls):
        if i and c.words <= learned and c.asks <= asked:
            streak.append(c)
            if len(streak) >= STALL:
                return streak
        else:
            streak = []
        learned |= c.words
        asked |= c.asks
    return None


# --------------------------------------------------------------------------- waste

class Waste(NamedTuple):
    """What the calls inside a loop cost. ``None``: no span in the loop recorded it."""

    steps: int
    seconds: float | None
    tokens: float | None
    cost_usd: float | None

    def text(self) -> str:
        parts = [f"{self.steps} step{'s' if self.steps != 1 else ''}",
                 f"{self.seconds:.2f} s" if self.seconds is not None else "seconds not recorded",
                 f"{self.tokens:,.0f} tokens" if self.tokens is not None else "tokens not recorded",
                 f"${self.cost_usd:.4f}" if self.cost_usd is not None else "cost not recorded"]
        return "wasted inside the loop: " + ", ".join(parts)

    def measures(self) -> tuple[tuple[str, float], ...]:
        """The recorded figures, for ``CheckResult.measures`` (and so the waste metrics)."""
        return tuple((k, float(v)) for k, v in zip(self._fields, self) if v is not None)


def measure_waste(spans: Iterable[SpanRecord], wasted: list[Call]) -> Waste:
    """Steps, seconds, tokens and cost spent inside the loop: the calls after its first,
    and every span that started in their window (the model calls that chose them)."""
    by_id = {s.span_id: s for s in spans}
    first = by_id.get(wasted[0].span_id)
    last = [by_id[c.span_id] for c in wasted if c.span_id in by_id]
    start = first.start_ns if first is not None else wasted[0].start_ns
    end = max([s.end_ns for s in last] + [start])
    tokens = cost = 0.0
    token_seen = cost_seen = False
    for s in by_id.values():
        if not start <= s.start_ns <= end:
            continue
        for name in (USAGE_IN, USAGE_OUT):
            v = s.attrs.get(name)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                tokens += v
                token_seen = True
        v = s.attrs.get(COST)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            cost += v
            cost_seen = True
    return Waste(len(wasted), (end - start) / 1e9 if end > start else None,
                 tokens if token_seen else None, cost if cost_seen else None)


def _describe(shape: str, loop: list[Call]) -> str:
    tools = list(dict.fromkeys(c.key[0] for c in loop))
    where = ", ".join(str(c.index) if c.index else c.span_id for c in loop)
    label = "steps" if loop[0].index else "spans"
    if shape == "repeat":
        return (f"Tool '{tools[0]}' called {len(loop)} times with equivalent arguments and overlapping results "
                f"({label} {where})")
    if shape == "ping-pong":
        return f"Ping-pong between '{tools[0]}' and '{tools[-1]}' with the same arguments ({label} {where})"
    return f"{len(loop)} consecutive calls that asked and learned nothing new ({label} {where})"


class _Seen:
    """What ``observe`` kept of one trace: the successful calls by equivalence key (for the
    early repeat), and each call's key and result words, which ``finish`` reuses."""

    __slots__ = ("groups", "seen", "fired")

    def __init__(self) -> None:
        self.groups: dict[tuple[str, Any], list[Call]] = {}
        self.seen: dict[str, tuple[str, str, Call]] = {}  # span id -> (arguments, result, call)
        self.fired = False


class Loop(Check):
    name = "loop"
    reads = (STEPS,)
    fires_on_evidence = True
    attributes = frozenset({USAGE_IN, USAGE_OUT, COST})
    description = ("Same call with equivalent arguments and overlapping results, ping-pong between two calls, "
                   "or consecutive calls that add nothing new (not faultgate's: run when named).")

    def start(self) -> _Seen:
        return _Seen()

    def observe(self, state: _Seen, span: SpanRecord) -> str | None:
        tool = span.tool
        # a call whose arguments or result were not recorded reads as blank, and blanks repeat
        if (tool is None or span.missing & _TOOL_CONTENT or state.fired
                or failed(not span_error(span), tool.result)):
            return None
        key = call_key(tool.name, tool.arguments)
        new = Call(key, words(tool.result), span.span_id, span.start_ns)
        if len(state.seen) < MAX_SEEN:  # finish reads these instead of working them out again
            state.seen[span.span_id] = (tool.arguments, tool.result, new)
        members = state.groups.get(key)
        if members is None:
            if len(state.groups) >= MAX_KEYS:
                return None
            members = state.groups[key] = []
        loop = repeat_in(members, new)
        if loop is None:
            if len(members) < MAX_PER_KEY:
                members.append(new)
            return None
        state.fired = True
        return _describe("repeat", loop)

    def finish(self, state: _Seen | None, run: Run) -> CheckResult:
        blind = [st for st in run.steps if st.missing]
        seen = state.seen if state is not None else {}
        errors = step_errors(run)  # shared with the other checks that ask, through run.derived
        calls = []
        for k, st in enumerate(run.steps):
            if st.missing or not st.ok or errors[k]:
                continue
            known = seen.get(st.span_id)
            if known is not None and known[0] == st.arguments and known[1] == st.result:
                key, said = known[2].key, known[2].words
            else:
                key, said = call_key(st.tool, st.arguments), words(st.result)
            calls.append(Call(key, said, st.span_id, st.start_ns, st.index, words(f"{st.tool} {st.arguments}")))
        unseen = run.calls_not_captured  # calls that may exist with no step at all
        if len(calls) < REPEATS:
            if len(blind) + len(calls) >= REPEATS and blind:
                return self.undecided(run.steps_not_captured(_TOOL_CONTENT))
            if unseen:
                return self.undecided(unseen)
            return self.result(False, f"{len(calls)} successful tool calls: too few for a loop")
        shapes = (("repeat", find_repeat), ("ping-pong", find_ping_pong), ("no-progress", find_stall))
        # adjacency shapes need every call: with some unrecorded, only a repeat (a set) is sure
        for shape, find in shapes[:1] if blind or unseen else shapes:
            loop = find(calls)
            if loop is not None:
                wasted = loop[1:] if shape != "ping-pong" else loop[2:]
                cost = measure_waste(run.spans, wasted)
                return self.result(True, f"{_describe(shape, loop)}; {cost.text()}")._replace(
                    measures=cost.measures())
        if blind or unseen:
            # the unrecorded calls may sit inside a loop, or break one that seems to be there
            return self.undecided(run.steps_not_captured(_TOOL_CONTENT) or unseen)
        return self.result(False, "no repeat, ping-pong or stall among the tool calls")
