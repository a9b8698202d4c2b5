"""A completed run: its spans in start order and what checks derive from them.

Everything here is computed once, on first use, from spans sorted by (start time, span
id), so the order spans arrived in cannot change any answer. The facts below are
computed together by the compiled core (native/core/src/run/facts.rs), on the first use of
any of them, from the core's copy of the spans (kept in ``derived``, where the built-in
checks read it too), and kept in the run's ``__dict__``, where every later read finds them
without a call.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Any

from faultgate_stream import _native
from faultgate_stream.model.records import ERROR_TYPE, UNREAD_OUTPUT_KEY, RunKey, SpanRecord, Step
from faultgate_stream.model.unread import UnreadWork, unread_work
from faultgate_stream.model.verdict import Completion

AGENT_NAME = "gen_ai.agent.name"
AGENT_VERSION = "gen_ai.agent.version"
# The resource's ``service.version``, which readers copy onto the spans that can be a run's
# root: the version a deployment carries when the agent does not name its own.
SERVICE_VERSION = "service.version"
# faultgate's scenario key, in order: an explicit scenario, the agent id, else a prompt hash.
SCENARIO_ATTRS = ("faultgate.scenario", "gen_ai.agent.id")
USAGE_IN, USAGE_OUT = "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"
COST = "faultgate.cost_usd"
TERMINATION = "faultgate.termination"
# Every span attribute the run's facts, the record's properties and the verdict read: a
# reader with a projection keeps these and what the checks declare (Check.attributes).
ATTRIBUTES_READ = frozenset({AGENT_NAME, AGENT_VERSION, SERVICE_VERSION, *SCENARIO_ATTRS, USAGE_IN, USAGE_OUT, COST,
                             TERMINATION, ERROR_TYPE, UNREAD_OUTPUT_KEY})


# (start time, span id): the order of a run's spans. C-level, where a key function in
# Python cost a call per span on every run.
span_order = attrgetter("start_ns", "span_id")


class _once:
    """``functools.cached_property`` without its lock: 3.11's takes an ``RLock`` on every
    first read (Python 3.12 dropped it), ~60 bytecodes a run for ``Run.unread`` alone
    (bench/hot_path.py's workload). The value is kept in the instance's ``__dict__``, where
    every later read finds it without a call; two threads reading it first at once both
    compute it, the same value (a run's facts are pure functions of its spans)."""

    def __init__(self, fn: Any, name: str = "") -> None:
        self.fn = fn  # called with the run: a function of it, or a method
        self.name = name or fn.__name__
        self.__doc__ = fn.__doc__

    def __get__(self, run: Any, owner: Any = None) -> Any:
        if run is None:
            return self
        value = run.__dict__[self.name] = self.fn(run)
        return value


class Run:
    """The spans of one run. ``root`` is the top-most ``invoke_agent`` span (or, in a trace
    without one, its parentless span); ``None`` for an orphan fragment."""

    def __init__(self, key: RunKey, spans: list[SpanRecord], root: SpanRecord | None,
                 completion: Completion, *, root_arrival_ns: int = 0, closed_ns: int = 0,
                 ordered: bool = False) -> None:
        self.key = key
        # ``ordered``: the caller sorted them already (the assembler's table does)
        self.spans: tuple[SpanRecord, ...] = tuple(spans) if ordered else tuple(sorted(spans, key=span_order))
        self.root = root
        self.completion = completion
        self.root_arrival_ns = root_arrival_ns  # on the assembler's clock; 0 when no root arrived
        self.closed_ns = closed_ns
        # Spans above every agent that leave the assembler with this run (set by the
        # assembler): not members, but span export releases them with its verdict.
        self.outside_span_ids: frozenset[str] = frozenset()
        # Facts that checks derive from this run and share (which step results are errors,
        # say), keyed by the module that computes them: each is worked out once per run,
        # not once per check that reads it.
        self.derived: dict[str, Any] = {}

    @property
    def trace_id(self) -> str:
        return self.key.trace_id

    # ------------------------------------------------------------------ the facts
    # The user's request: the root's, else the first span's that has one.
    prompt: str = _native.RunFact("prompt")
    # The final answer: the root's, else the last span's that has one, not counting what
    # was said inside an agent that ended in error: a nested ``invoke_agent`` that failed
    # (``Max turns exceeded``) did not answer, whatever its model said last.
    answer: str = _native.RunFact("answer")
    # ``gen_ai.agent.name`` on the root, else on the first span that has one, else the
    # root's name without ``invoke_agent ``, else "agent".
    agent: str = _native.RunFact("agent")
    # ``gen_ai.agent.version`` on the root, else the root's resource ``service.version``.
    agent_version: str = _native.RunFact("agent_version")
    # Stable across runs of the same task, and equal to faultgate's key for the same trace:
    # the root's ``faultgate.scenario``, else its ``gen_ai.agent.id``, else "p-" and 12 hex
    # digits of the prompt's SHA-256. A prompt holding a lone surrogate (a JSON ``\ud800``
    # escape in its messages) is hashed as ``surrogatepass`` encodes it: plain UTF-8 raised,
    # and the run got no verdict (PARITY_DEVIATIONS.md); any other prompt's bytes are its UTF-8.
    scenario: str = _native.RunFact("scenario")
    termination: str = _native.RunFact("termination")  # the root's faultgate.termination
    # Tool calls in start order. A run with tool spans has one step per tool span: a call
    # that a model's output names and no tool span executed was never run (a budget ended
    # the run first, a framework refused it), and a span without ``gen_ai.tool.call.id`` is
    # the same call as the message's, paired by tool name and order (the k-th such span of
    # a tool is the k-th call of that tool the messages name that no span claims by id),
    # not a second one. What a tool span did not record, the model's messages may hold
    # under its call id (util-genai's event_only). A chat-only run (no tool spans) has its
    # calls only in messages, each paired with its result (the last tool_call_response
    # carrying its id) by call id.
    steps: tuple[Step, ...] = _native.RunFact("steps")
    # Input plus output tokens of every span, as recorded; None when no span recorded
    # any. Counts and costs are what senders wrote: inf, NaN, bools and integers past
    # 2**53 are not measures and are skipped (issue 9, defect 1).
    usage_tokens: float | None = _native.RunFact("usage_tokens")
    # The root's duration, else from the first start to the last end; None without times.
    latency_ms: float | None = _native.RunFact("latency_ms")
    cost_usd: float | None = _native.RunFact("cost_usd")  # the sum of faultgate.cost_usd
    has_content: bool = _native.RunFact("has_content")  # a prompt, an answer, or a step's text

    # ------------------------------------------------------------ what was not captured
    # The ``MISSING_*`` flags of every span of the run, together.
    missing: int = _native.RunFact("missing")
    # Why the run's answer cannot be read ("" when it can): no span carries an answer and
    # some model span recorded no output messages, so an answer may exist unseen.
    answer_not_captured: str = _native.RunFact("answer_not_captured")
    # Why some tool calls may be missing from ``steps`` ("" when none can be): the run has
    # no tool spans, so its steps are read from model output messages, and some model
    # span recorded none (instrumentation with content off): the calls it made are unseen.
    calls_not_captured: str = _native.RunFact("calls_not_captured")

    # ------------------------------------------------------------ what the verdict records
    last_end_ns: int = _native.RunFact("last_end_ns")  # the latest end_ns of its spans; 0 without spans
    span_ids: frozenset[str] = _native.RunFact("span_ids")  # its members' span ids

    # Agent work its spans carry that no convention read, and which inputs of the checks
    # (steps, answer, finish reasons) it leaves incomplete (model/unread.py). The function
    # itself, with no method around it: one Python call a run fewer.
    unread: UnreadWork = _once(unread_work, "unread")

    @_once
    def answer_folded(self) -> str:
        """The answer stripped and lower-cased, as the golden checks compare it: worked out
        once for the run, not by each of them (long answers, outside ASCII, were the most
        of their time)."""
        return self.answer.strip().lower()

    @property
    def step_count(self) -> int:
        """``len(self.steps)``, without making the steps Python objects when nothing has:
        the verdict counts them, and only a check written in Python reads them."""
        return _native.step_count(self)

    def steps_not_captured(self, flags: int) -> str:
        """Why some steps' arguments or results (``flags``) cannot be read; "" when all can."""
        return _native.steps_not_captured(self, flags)
