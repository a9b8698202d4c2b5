"""The one place the public check API meets the engine's own types: views built from runs
and span records, API results turned into check results, and the built-in checks driven
through the API's contract.

Nothing else in the package builds a view or reads an API result. When the engine's
records change (a compiled core that owns its runs builds what it hands Python lazily),
this module is what changes with them; ``checks/api.py`` and every plug-in stay as they are.
"""
from __future__ import annotations

import json
import operator
from collections import Counter
from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

from faultgate_stream.checks import api
from faultgate_stream import _native
from faultgate_stream.model.records import (MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT, MISSING_WHAT, SpanAttributes,
                                            SpanRecord)
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult, Severity

_STATUS = {0: "unset", 1: "ok", 2: "error"}
SESSION_ATTRS = ("session.id", "gen_ai.conversation.id")
_MODEL_ATTRS = ("gen_ai.response.model", "gen_ai.request.model")


class Views:
    """Builds the views one set of checks sees: span attributes are cut to
    ``STANDARD_ATTRIBUTES`` and what those checks declared, offline as live (where the
    reader keeps nothing else), so a check never reads an attribute on one side only."""

    __slots__ = ("allowed", "_select")

    def __init__(self, declared: Iterable[str] = ()) -> None:
        self.allowed = api.STANDARD_ATTRIBUTES | frozenset(declared)
        # the core's attributes of a record, cut without a Python object made (a value is
        # made when the check reads it); a record built in Python holds a dict
        self._select = _native.AttributeSelection(self.allowed)

    def span(self, rec: SpanRecord) -> api.SpanView:
        v = object.__new__(api.SpanView)
        tool = rec.tool
        allowed = self.allowed
        put = object.__setattr__
        put(v, "trace_id", rec.trace_id)
        put(v, "span_id", rec.span_id)
        put(v, "parent_id", rec.parent_id or "")
        put(v, "name", rec.name)
        put(v, "operation", rec.operation or "")
        put(v, "start_ns", rec.start_ns)
        put(v, "end_ns", rec.end_ns)
        put(v, "status", _STATUS.get(rec.status_code, "unset"))
        put(v, "status_message", rec.status_message)
        put(v, "tool", tool.name if tool is not None else "")
        put(v, "arguments", tool.arguments if tool is not None else "")
        put(v, "result", tool.result if tool is not None else "")
        put(v, "call_id", tool.call_id if tool is not None else "")
        put(v, "prompt", rec.prompt)
        put(v, "answer", rec.answer)
        a = rec.attrs
        put(v, "attributes", self._select(a) if type(a) is SpanAttributes
            else MappingProxyType({k: x for k, x in a.items() if k in allowed}))
        put(v, "_args", None)
        put(v, "_src", rec)  # for the built-ins behind the API (``BuiltinCheck``), not part of it
        return v

    def run(self, run: Run) -> api.RunView:
        facts = _new(_Facts)  # what ``_Facts(run, self)`` and ``RunView(facts)`` make, without their frames
        facts._run, facts._views, facts._spans, facts._kept = run, self, None, {}
        view = _new(api.RunView)
        _put(view, "_facts", facts)
        return view

    def facts(self, run: Run) -> _Facts:
        """A run's facts, to share between the views of several checks (``view``)."""
        return _Facts(run, self)

    @staticmethod
    def view(facts: _Facts) -> api.RunView:
        """A view of its own for each check over shared facts: setting an attribute of one
        view the hard way (``object.__setattr__``) changes no other check's."""
        return api.RunView(facts)


_new = object.__new__
_put = object.__setattr__


class _Facts:
    """What a ``RunView`` asks for, one method per fact, each worked out once per run and
    kept: every check's view of a run reads the same, immutable, values."""

    __slots__ = ("_run", "_views", "_spans", "_kept")

    def __init__(self, run: Run, views: Views) -> None:
        self._run = run
        self._views = views
        self._spans: tuple[api.SpanView, ...] | None = None
        self._kept: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        kept = self._kept
        if name not in kept:
            kept[name] = getattr(self, name)()
        return kept[name]

    def trace_id(self) -> str:
        return self._run.key.trace_id

    def run_id(self) -> str:
        return str(self._run.key)

    def root_span_id(self) -> str:
        return self._run.key.root_span_id

    def agent(self) -> str:
        return self._run.agent

    def agent_version(self) -> str:
        return self._run.agent_version

    def scenario(self) -> str:
        return self._run.scenario

    def prompt(self) -> str:
        return self._run.prompt

    def answer(self) -> str:
        return self._run.answer

    def completion(self) -> str:
        return self._run.completion.value

    def tokens(self) -> float | None:
        return self._run.usage_tokens

    def latency_ms(self) -> float | None:
        return self._run.latency_ms

    def cost_usd(self) -> float | None:
        return self._run.cost_usd

    def session(self) -> str:
        """``session.id``, else ``gen_ai.conversation.id``, on the root, else on the first
        span (in start order) that carries one; "" when none does (as windowed budgets read it)."""
        run = self._run
        spans = ((run.root,) if run.root is not None else ()) + run.spans
        for name in SESSION_ATTRS:
            for s in spans:
                v = s.attrs.get(name)
                if v is not None and str(v).strip():
                    return str(v).strip()
        return ""

    def spans(self) -> tuple[api.SpanView, ...]:
        if self._spans is None:
            span = self._views.span
            self._spans = tuple(span(s) for s in self._run.spans)
        return self._spans

    def calls(self) -> MappingProxyType:
        counts: dict[str, int] = {}
        for s in self._run.steps:
            counts[s.tool] = counts.get(s.tool, 0) + 1
        return MappingProxyType(counts)

    def not_captured(self) -> frozenset[str]:
        missing = self._run.missing
        return frozenset(what for flag, what in MISSING_WHAT if missing & flag)

    def steps(self) -> tuple[api.StepView, ...]:
        run = self._run
        by_id = {s.span_id: s for s in run.spans}
        # the model a call came from: its span's, else the last model span started before it
        models = [(s.start_ns, m) for s in run.spans if (m := _model(s))]
        out = []
        put = object.__setattr__
        for st in run.steps:
            span = by_id.get(st.span_id)
            model = _model(span) if span is not None else ""
            if not model:
                model = next((m for start, m in reversed(models) if start <= st.start_ns), "")
            v = object.__new__(api.StepView)
            for name, value in (("index", st.index), ("tool", st.tool), ("arguments", st.arguments),
                                ("result", st.result), ("ok", st.ok), ("span_id", st.span_id),
                                ("call_id", st.call_id), ("start_ns", st.start_ns),
                                ("end_ns", span.end_ns if span is not None and span.is_tool else 0),
                                ("model", model),
                                ("input_tokens", _tokens(span, "gen_ai.usage.input_tokens")),
                                ("output_tokens", _tokens(span, "gen_ai.usage.output_tokens")),
                                ("arguments_captured", not st.missing & MISSING_TOOL_ARGUMENTS),
                                ("result_captured", not st.missing & MISSING_TOOL_RESULT), ("_args", None)):
                put(v, name, value)
            out.append(v)
        return tuple(out)


def _model(span: SpanRecord) -> str:
    a = span.attrs
    return str(a.get(_MODEL_ATTRS[0]) or a.get(_MODEL_ATTRS[1]) or "")


def _tokens(span: SpanRecord | None, key: str) -> int | None:
    if span is None or not span.is_tool:
        return None
    return api._count(span.attrs.get(key))


# ------------------------------------------------------------------ results, both ways

KIND = "plugin"


class GarbageResult(TypeError):
    """A check returned something that is not an ``api.Result``."""


def check_result(name: str, severity: Severity, kind: str, res: Any, evaluator: str = "") -> CheckResult:
    """An API result as the engine records it. Anything but an ``api.Result`` raises
    ``GarbageResult`` naming what came back."""
    if type(res) is not api.Result:
        raise GarbageResult(f"returned {type(res).__name__}, not a Result (use api.fired, api.passed or "
                            f"api.undecided)")
    outcome, reason, sev, m, span_ids, confidence = res  # a Result is a tuple of its fields
    measures = tuple(m.items()) if m else ()
    # built as the tuple it is (every field given, in order): no NamedTuple ``__new__`` frame
    if outcome == "passed":
        return _new_tuple(CheckResult, (name, False, confidence, reason, severity, kind, "", False, measures,
                                        evaluator, span_ids))
    if outcome == "fired":
        return _new_tuple(CheckResult, (name, True, confidence, reason, sev or severity, kind, "", False, measures,
                                        evaluator, span_ids))
    return _new_tuple(CheckResult, (name, False, 0.0, reason, severity, kind, "", True, measures, evaluator,
                                    span_ids))


_new_tuple = tuple.__new__
assert len(CheckResult._fields) == 11, "check_result gives every field of CheckResult"


def api_result(r: CheckResult) -> api.Result:
    """A check result as the API gives it."""
    measures = dict(r.measures)
    if r.undecided:
        return api.undecided(r.reason, measures=measures, span_ids=r.span_ids)
    if r.fired:
        return api.fired(r.reason, severity=r.severity, measures=measures, span_ids=r.span_ids,
                         confidence=r.confidence)
    return api.passed(r.reason, measures=measures, span_ids=r.span_ids, confidence=r.confidence)


class BuiltinCheck(api.Check):
    """A built-in check behind the API's contract: the same start / observe / finish over
    views, the same results. What a plug-in author can compare with, and the proof that
    the built-ins keep the contract plug-ins are held to."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.description = inner.description  # type: ignore[misc]
        self.severity = inner.severity  # type: ignore[misc]
        self.attributes = inner.attributes  # type: ignore[misc]
        from faultgate_stream import __version__
        self.version = __version__  # type: ignore[misc]

    def start(self) -> Any:
        return self._inner.start()

    def observe(self, state: Any, span: api.SpanView) -> api.Result | None:
        reason = self._inner.observe(state, _record_of(span))
        return api.fired(reason) if reason else None

    def finish(self, state: Any, run: api.RunView) -> api.Result:
        return api_result(self._inner.finish(state, run._facts._run))


def _record_of(span: api.SpanView) -> SpanRecord:
    return span._src


def builtin(name: str, *args: Any, **kwargs: Any) -> BuiltinCheck:
    """The built-in check ``name`` (``faultgate-stream checks`` lists them) as an API check."""
    from faultgate_stream.checks.registry import check_class

    return BuiltinCheck(check_class(name)(*args, **kwargs))


# ------------------------------------------------------------------ plain values, for rules
# Rules (checks/rules) read the same facts as a view's, as plain maps CEL takes: only the
# fields an expression names are built.

_INT64 = 2**63


def plain(value: Any) -> Any:
    """``value`` as CEL takes it: mappings as dicts, sequences as lists, integers past
    64 bits as floats."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else float(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, MappingProxyType):
        return {str(k): plain(v) for k, v in value.items()}
    return str(value)


def _json_int(text: str) -> int | float:
    v = int(text)
    return v if -_INT64 <= v < _INT64 else float(v)


# JSON's values are CEL's already but for integers past 64 bits: turned as they are read,
# rather than by walking the document again (``plain``)
_ARGS_JSON = json.JSONDecoder(parse_int=_json_int)


def plain_args(text: str) -> dict:
    """A tool call's arguments as a map: the JSON object's, else empty. (The rules'
    evaluator reads them in Rust, and asks this for the texts serde_json refuses.)"""
    if not text:
        return {}
    try:
        doc = _ARGS_JSON.decode(text)
    except (ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _duration(start: int, end: int) -> float | None:
    return (end - start) / 1e6 if end and start else None


SPAN_FIELDS: dict[str, Any] = {
    "trace_id": lambda s: s.trace_id,
    "span_id": lambda s: s.span_id,
    "parent_id": lambda s: s.parent_id or "",
    "name": lambda s: s.name,
    "operation": lambda s: s.operation or "",
    "start_ns": lambda s: s.start_ns,
    "end_ns": lambda s: s.end_ns,
    "duration_ms": lambda s: _duration(s.start_ns, s.end_ns),
    "status": lambda s: _STATUS.get(s.status_code, "unset"),
    "status_message": lambda s: s.status_message,
    "tool": lambda s: s.tool.name if s.tool is not None else "",
    "arguments": lambda s: s.tool.arguments if s.tool is not None else "",
    "args": lambda s: plain_args(s.tool.arguments) if s.tool is not None else {},
    "result": lambda s: s.tool.result if s.tool is not None else "",
    "call_id": lambda s: s.tool.call_id if s.tool is not None else "",
    "prompt": lambda s: s.prompt,
    "answer": lambda s: s.answer,
    "error_type": lambda s: str(s.attrs.get("error.type") or ""),
    "model": _model,
    "input_tokens": lambda s: api._count(s.attrs.get("gen_ai.usage.input_tokens")),
    "output_tokens": lambda s: api._count(s.attrs.get("gen_ai.usage.output_tokens")),
    "is_tool": lambda s: s.tool is not None,
    "is_agent": lambda s: s.operation == "invoke_agent",
}
STEP_FIELDS = ("index", "tool", "arguments", "args", "result", "ok", "status", "span_id", "call_id", "start_ns",
               "end_ns", "duration_ms", "model", "input_tokens", "output_tokens", "arguments_captured",
               "result_captured")
RUN_FIELDS = ("trace_id", "run_id", "root_span_id", "agent", "agent_version", "session", "scenario", "prompt",
              "answer", "completion", "steps", "spans", "calls", "tokens", "latency_ms", "cost_usd", "not_captured")


class PlainSpans:
    """Span maps with the fields ``fields`` and the attributes ``attributes`` (an empty
    ``fields`` means all)."""

    __slots__ = ("getters", "attributes")

    def __init__(self, fields: frozenset[str], attributes: frozenset[str]) -> None:
        names = [f for f in SPAN_FIELDS if not fields or f in fields]
        self.getters = tuple((n, SPAN_FIELDS[n]) for n in names)
        self.attributes = attributes if (not fields or "attributes" in fields) else frozenset()

    def __call__(self, rec: SpanRecord) -> dict[str, Any]:
        d = {}
        for n, get in self.getters:
            d[n] = get(rec)
        if self.attributes:
            attrs = rec.attrs
            d["attributes"] = {k: plain(attrs[k]) for k in self.attributes if k in attrs}
        return d


# A step's fields read straight off the engine's step (``Step``), with no view built (the
# rules' evaluator builds these in Rust: native/py/src/checks/rules.rs).
STEP_PLAIN: dict[str, Any] = {
    "index": lambda st: st.index,
    "tool": lambda st: st.tool,
    "arguments": lambda st: st.arguments,
    "args": lambda st: plain_args(st.arguments),
    "result": lambda st: st.result,
    "ok": lambda st: st.ok,
    "status": lambda st: "ok" if st.ok else "error",
    "span_id": lambda st: st.span_id,
    "call_id": lambda st: st.call_id,
    "start_ns": lambda st: st.start_ns,
    "arguments_captured": lambda st: not st.missing & MISSING_TOOL_ARGUMENTS,
    "result_captured": lambda st: not st.missing & MISSING_TOOL_RESULT,
}


def plain_run(run: Run, fields: frozenset[str], spans: PlainSpans) -> dict[str, Any]:
    """The run as a map with the fields ``fields`` (those of ``RunView``; empty: all);
    its steps with the fields of ``StepView`` that ``fields`` names too, its spans what
    ``spans`` builds. The same values as the views', built only where named."""
    return PlainRun(fields, spans)(run)


_STEP_ATTRIBUTES = ("index", "tool", "arguments", "result", "ok", "span_id", "call_id", "start_ns")
_tool_of = operator.attrgetter("tool")


class PlainRun:
    """``plain_run`` with what to build worked out once (a rules file's run rules ask the
    same fields of every run): per run, one call per field named."""

    __slots__ = ("parts",)

    def __init__(self, fields: frozenset[str], spans: PlainSpans) -> None:
        parts: list[tuple[str, Any]] = []
        for name in RUN_FIELDS:
            if fields and name not in fields:
                continue
            if name == "steps":
                parts.append((name, _steps_builder([f for f in STEP_FIELDS if not fields or f in fields])))
            elif name == "spans":
                parts.append((name, lambda run, _spans=spans: [_spans(s) for s in run.spans]))
            elif name == "calls":
                parts.append((name, lambda run: dict(Counter(map(_tool_of, run.steps)))))
            elif name == "not_captured":
                parts.append((name, lambda run: sorted(_Facts(run, _VIEWS).not_captured())))
            else:
                parts.append((name, lambda run, _name=name: plain(getattr(_Facts(run, _VIEWS), _name)())))
        self.parts = tuple(parts)

    def __call__(self, run: Run) -> dict[str, Any]:
        return {name: build(run) for name, build in self.parts}


def _steps_builder(wanted: list[str]) -> Any:
    if not wanted:  # ``run.steps.size()``: the steps are counted, none of their fields read
        return lambda run: [{} for _ in run.steps]
    if all(f in _STEP_ATTRIBUTES for f in wanted):  # read straight off the engine's steps
        if len(wanted) == 1:
            only, get = wanted[0], operator.attrgetter(wanted[0])
            return lambda run: [{only: v} for v in map(get, run.steps)]
        names, get = tuple(wanted), operator.attrgetter(*wanted)
        return lambda run: [dict(zip(names, v)) for v in map(get, run.steps)]
    if all(f in STEP_PLAIN for f in wanted):
        getters = [(f, STEP_PLAIN[f]) for f in wanted]
        return lambda run: [{f: get(st) for f, get in getters} for st in run.steps]
    # end, model, tokens: the view's, which looks at the spans
    return lambda run: [{f: plain(getattr(s, f)) for f in wanted} for s in _Facts(run, _VIEWS).steps()]


_VIEWS = Views()
