"""The public check API: what a check of your own sees, what it implements and what it
returns. The one module a plug-in imports (``from faultgate_stream.checks import api``);
nothing else in the package is an interface, and nothing here exposes the engine's own
records, runs or compiled core.

Versioned: ``API_VERSION`` is "major.minor". A plug-in names the version it was written
for (``Check.api_version``); it loads on an engine of the same major and an equal or newer
minor, and is refused, with both versions named, otherwise. Minor versions only add.

**The contract** (as the built-in checks keep it; docs/writing-checks.md walks through it):

- A check is built once, with no arguments, and shared by every run: keep no per-run state
  on ``self``. ``start()`` makes a run's state, ``observe(state, span)`` is told of each span
  as it arrives, in arrival order, and may return a *fired* result: an early finding, heard
  before the run completes (only on facts no later span can undo). ``finish(state, run)``
  gives the result on the completed run.
- ``finish`` must decide from ``run`` alone. The offline command observes no span, and a
  re-evaluation (a late span, an agent's view of a run) starts from a fresh state: what
  ``observe`` keeps may save ``finish`` work, never change its answer. Order-dependent
  decisions go over ``run.steps`` / ``run.spans``, sorted by start time.
- Results come from ``fired``, ``passed`` and ``undecided``. Say "undecided", never
  "passed", when the run did not capture what the check needs (``run.not_captured``).
- Views are read-only: attributes cannot be set, mappings are read-only, sequences are
  tuples. Every check gets the same view of a run, so none can change what another sees.
- Isolation: a check that raises gets an undecided result naming the exception type; one
  that spends more than its CPU budget on a run (``checks.isolation.cpu_budget``, a few
  milliseconds) gets an undecided result, and one that keeps doing it is switched off. A
  plug-in runs on a thread of its own, never on the threads that take spans in.
- ``attributes``: span attributes the check reads beyond those the views always carry
  (``STANDARD_ATTRIBUTES``). The live service reads only declared attributes off the wire,
  and the views show only those everywhere, so a check sees the same spans offline and live.
"""
from __future__ import annotations

import json
from operator import itemgetter
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from faultgate_stream.model.verdict import Severity

__all__ = ["API_VERSION", "READS", "Check", "Result", "RunView", "Severity", "SpanView", "StepView", "fired", "passed",
           "undecided", "STANDARD_ATTRIBUTES"]

API_VERSION = "1.1"  # 1.1: Check.reads, Check.fires_on_evidence

# Span attributes every view carries (when the span has them), whatever a check declares:
# the run's own facts' and the model and usage of each span.
STANDARD_ATTRIBUTES = frozenset({
    "gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.agent.version", "gen_ai.agent.id", "service.version",
    "gen_ai.request.model", "gen_ai.response.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
    "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.conversation.id", "session.id", "error.type",
    "faultgate.scenario", "faultgate.cost_usd", "faultgate.termination",
})

# What a check may say it reads of a run (``Check.reads``).
READS = ("steps", "answer", "finish_reasons")
_OUTCOMES = ("fired", "passed", "undecided")
_SEVERITIES = {s.value: s for s in Severity}


class _ReadOnly:
    """Views refuse to be changed: a check that tries gets an error (and an undecided
    result), never a view another check would then see changed."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")


def frozen(value: Any) -> Any:
    """``value`` (parsed JSON) with every dict a read-only mapping and every list a tuple."""
    if isinstance(value, dict):
        return MappingProxyType({k: frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(frozen(v) for v in value)
    return value


EMPTY: Mapping[str, Any] = MappingProxyType({})


def parse_arguments(text: str) -> Mapping[str, Any]:
    """A tool call's arguments as a read-only mapping: the JSON object ``text`` holds, else
    an empty mapping (no arguments, text that is not JSON, JSON that is not an object)."""
    if not text:
        return EMPTY
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return EMPTY
    return frozen(doc) if isinstance(doc, dict) else EMPTY


class SpanView(_ReadOnly):
    """One span of a run, whatever convention it was written in.

    ``tool`` is "" for a span that is not a tool call; ``args`` is its arguments parsed (a
    read-only mapping, empty when they are not a JSON object), ``arguments`` the text.
    ``status`` is "ok", "error" or "unset". ``attributes`` holds ``STANDARD_ATTRIBUTES`` and
    those the check declared, never message content (read ``prompt`` and ``answer``)."""

    __slots__ = ("trace_id", "span_id", "parent_id", "name", "operation", "start_ns", "end_ns", "status",
                 "status_message", "tool", "arguments", "result", "call_id", "prompt", "answer", "attributes",
                 "_args", "_src")

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    operation: str
    start_ns: int
    end_ns: int
    status: str
    status_message: str
    tool: str
    arguments: str
    result: str
    call_id: str
    prompt: str
    answer: str
    attributes: Mapping[str, Any]

    @property
    def args(self) -> Mapping[str, Any]:
        a = self._args
        if a is None:
            a = parse_arguments(self.arguments)
            object.__setattr__(self, "_args", a)
        return a

    @property
    def duration_ms(self) -> float | None:
        return (self.end_ns - self.start_ns) / 1e6 if self.end_ns and self.start_ns else None

    @property
    def is_tool(self) -> bool:
        return bool(self.tool)

    @property
    def is_agent(self) -> bool:
        return self.operation == "invoke_agent"

    @property
    def error_type(self) -> str:
        v = self.attributes.get("error.type")
        return str(v) if v else ""

    @property
    def model(self) -> str:
        a = self.attributes
        return str(a.get("gen_ai.response.model") or a.get("gen_ai.request.model") or "")

    @property
    def input_tokens(self) -> int | None:
        return _count(self.attributes.get("gen_ai.usage.input_tokens"))

    @property
    def output_tokens(self) -> int | None:
        return _count(self.attributes.get("gen_ai.usage.output_tokens"))

    def __repr__(self) -> str:
        return f"SpanView({self.name!r}, span_id={self.span_id!r})"


def _count(v: Any) -> int | None:
    # what senders wrote: a bool or a non-integral float is not a count
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        return None
    return int(v) if float(v).is_integer() else None


class StepView(_ReadOnly):
    """One tool call of a run, in start order; ``index`` is 1-based, as reasons print it.
    ``ok`` is False when its span said it failed (results may also say so in their text).
    ``model`` is the model of the call's span, else of the last model span that started
    before it; ``input_tokens``/``output_tokens`` are its span's own (None when unrecorded)."""

    __slots__ = ("index", "tool", "arguments", "result", "ok", "span_id", "call_id", "start_ns", "end_ns",
                 "model", "input_tokens", "output_tokens", "arguments_captured", "result_captured", "_args")

    index: int
    tool: str
    arguments: str
    result: str
    ok: bool
    span_id: str
    call_id: str
    start_ns: int
    end_ns: int
    model: str
    input_tokens: int | None
    output_tokens: int | None
    arguments_captured: bool
    result_captured: bool

    @property
    def args(self) -> Mapping[str, Any]:
        a = self._args
        if a is None:
            a = parse_arguments(self.arguments)
            object.__setattr__(self, "_args", a)
        return a

    @property
    def status(self) -> str:
        return "ok" if self.ok else "error"

    @property
    def duration_ms(self) -> float | None:
        return (self.end_ns - self.start_ns) / 1e6 if self.end_ns and self.start_ns else None

    def __repr__(self) -> str:
        return f"StepView({self.index}, {self.tool!r})"


class RunView(_ReadOnly):
    """A completed agent run: the subtree under its top-most ``invoke_agent`` span.

    Every fact is worked out on first use and kept: a check that reads only ``agent`` pays
    for nothing else. ``steps`` and ``spans`` are in start order. ``calls`` counts the
    steps by tool name. ``not_captured`` names what the run's spans should have carried and
    did not ("input messages", "output messages", "finish reasons", "tool arguments", "tool
    results"): a check that needs one of them says ``undecided``."""

    __slots__ = ("_facts",)

    def __init__(self, facts: Any) -> None:
        object.__setattr__(self, "_facts", facts)

    def _get(self, name: str) -> Any:
        return self._facts.get(name)

    trace_id = property(lambda self: self._get("trace_id"))
    run_id = property(lambda self: self._get("run_id"))
    root_span_id = property(lambda self: self._get("root_span_id"))
    agent = property(lambda self: self._get("agent"))
    agent_version = property(lambda self: self._get("agent_version"))
    session = property(lambda self: self._get("session"))
    scenario = property(lambda self: self._get("scenario"))
    prompt = property(lambda self: self._get("prompt"))
    answer = property(lambda self: self._get("answer"))
    completion = property(lambda self: self._get("completion"))
    steps = property(lambda self: self._get("steps"))
    spans = property(lambda self: self._get("spans"))
    calls = property(lambda self: self._get("calls"))
    tokens = property(lambda self: self._get("tokens"))
    latency_ms = property(lambda self: self._get("latency_ms"))
    cost_usd = property(lambda self: self._get("cost_usd"))
    not_captured = property(lambda self: self._get("not_captured"))

    def __repr__(self) -> str:
        return f"RunView({self.run_id!r}, agent={self.agent!r})"


class Result(tuple):
    """What a check says about a run: ``outcome`` is "fired", "passed" or "undecided".
    Make one with ``fired``, ``passed`` or ``undecided``.

    A tuple underneath, in the order of its fields: immutable all the way down (no
    ``object.__setattr__`` changes one), so ``passed()`` can give every check the same
    one, and it is made in one C call (six slots set one by one were most of what the
    usual result cost a plug-in's run)."""

    __slots__ = ()

    outcome: str
    reason: str
    severity: Severity | None
    measures: Mapping[str, float]
    span_ids: tuple[str, ...]
    confidence: float

    def __new__(cls, outcome: str, reason: str, severity: Severity | str | None = None,
                measures: Mapping[str, float] | None = None, span_ids: Iterable[str] = (),
                confidence: float = 1.0) -> Result:
        if (severity is None and not measures and span_ids == () and confidence == 1.0 and type(reason) is str
                and outcome in _OUTCOMES):  # what most results give: nothing to check
            return _new(cls, (outcome, reason, None, EMPTY, (), 1.0))
        if outcome not in _OUTCOMES:
            raise ValueError(f"outcome must be one of {', '.join(_OUTCOMES)}, not {outcome!r}")
        if type(reason) is not str and not isinstance(reason, str):
            raise TypeError(f"reason must be a str, not {type(reason).__name__}")
        if severity is not None and type(severity) is not Severity:
            if severity not in _SEVERITIES:
                raise ValueError(f"severity must be one of {', '.join(_SEVERITIES)}, not {severity!r}")
            severity = _SEVERITIES[severity]
        kept: Mapping[str, float] = EMPTY
        if measures:
            out: dict[str, float] = {}
            for k, v in measures.items():
                if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
                    raise TypeError(f"measures must map names to numbers; {k!r}: {v!r} is not")
                out[k] = float(v)
            kept = MappingProxyType(out)
        ids = span_ids if type(span_ids) is tuple else tuple(span_ids)
        if ids and not all(type(s) is str for s in ids):
            raise TypeError("span_ids must be strings")
        if confidence != 1.0 and (isinstance(confidence, bool) or not isinstance(confidence, (int, float))
                                  or not 0 <= confidence <= 1):
            raise ValueError(f"confidence must be a number from 0 to 1, not {confidence!r}")
        return _new(cls, (outcome, str(reason), severity, kept, ids, float(confidence)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Result is read-only")

    def __repr__(self) -> str:
        return f"Result({self.outcome!r}, {self.reason!r})"

    def __getnewargs__(self) -> tuple:  # ``copy.copy`` makes it again from its fields
        return tuple(self)

    def __eq__(self, other: object) -> bool:  # a Result equals only a Result, never a bare tuple
        return type(other) is Result and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]


for _i, _field in enumerate(("outcome", "reason", "severity", "measures", "span_ids", "confidence")):
    setattr(Result, _field, property(itemgetter(_i), doc=f"The result's {_field}."))
del _i, _field

_new = tuple.__new__
# what ``passed()`` gives: one result shared by every check (nothing can change it)
_PASSED = _new(Result, ("passed", "", None, EMPTY, (), 1.0))


def fired(reason: str, *, severity: Severity | str | None = None, measures: Mapping[str, float] | None = None,
          span_ids: Iterable[str] = (), confidence: float = 1.0) -> Result:
    """The check found its failure mode. ``reason`` names steps and values (it is masked
    before it leaves the process); ``severity`` overrides the check's own; ``span_ids``
    are the spans it points at."""
    return Result("fired", reason, severity, measures, span_ids, confidence)


def passed(reason: str = "", *, measures: Mapping[str, float] | None = None, span_ids: Iterable[str] = (),
           confidence: float = 1.0) -> Result:
    """The check looked and found nothing."""
    if measures is None and span_ids == () and confidence == 1.0 and type(reason) is str:
        # what most checks return, with nothing to check: no ``__new__`` frame
        return _new(Result, ("passed", reason, None, EMPTY, (), 1.0)) if reason else _PASSED
    return Result("passed", reason, None, measures, span_ids, confidence)


def undecided(reason: str, *, measures: Mapping[str, float] | None = None, span_ids: Iterable[str] = ()) -> Result:
    """The check could not tell: ``reason`` names what it could not see. Never counted clean."""
    return Result("undecided", reason, None, measures, span_ids, 0.0)


class Check(ABC):
    """Subclass this. ``name`` is required: lower-case letters, digits and ``_.-``, at most
    64 characters, unique among the checks a service runs (a built-in's name is taken).
    ``version`` is the check's own; ``severity`` the default of its fired results."""

    name: ClassVar[str]
    version: ClassVar[str] = "0"
    description: ClassVar[str] = ""
    severity: ClassVar[Severity | str] = Severity.HARD
    attributes: ClassVar[frozenset[str]] = frozenset()
    api_version: ClassVar[str] = API_VERSION
    # What the check reads of a run, of READS. Where a run holds agent work no convention
    # read (a framework's own span names and keys) and it leaves one of these incomplete, a
    # result that passed is made undecided, naming the spans: never clean on what was hidden.
    reads: ClassVar[tuple[str, ...]] = ("steps", "answer", "finish_reasons")
    # True when every fired result rests on evidence the check saw (a denied argument): it
    # stands beside unread work. False: a finding on an absence ("never called the
    # retriever") is undecided there too, as the unread work may hold what is absent.
    fires_on_evidence: ClassVar[bool] = False

    def start(self) -> Any:
        """A run's state; None by default."""
        return None

    def observe(self, state: Any, span: SpanView) -> Result | None:
        """Told of each span as it arrives; a ``fired`` result is an early finding."""
        return None

    @abstractmethod
    def finish(self, state: Any, run: RunView) -> Result:
        """The result on the completed run."""
