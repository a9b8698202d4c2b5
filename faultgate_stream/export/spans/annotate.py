"""The verdict written onto spans and log records, and content stripped from spans.

Transforms applied on the export path, in this order: ``strip_content`` (when configured),
then ``write_verdict`` on the run's root. Every reason is masked by the redactor before it
is written; checks saw the raw values.

On the root: ``faultgate.verdict`` (clean/failed/undecided), ``faultgate.checks.fired`` (the
fired checks), ``faultgate.checks.undecided``, ``faultgate.completion``, ``faultgate.run_id``,
``faultgate.scenario``, ``faultgate.reason.<check>`` per fired check; and one
``gen_ai.evaluation.result`` event per check that ran (``gen_ai.evaluation.name``,
``.score.label`` pass/fail, ``.score.value`` 1.0 pass / 0.0 fail, ``.explanation``). A check
that could not see its input has no score: ``error.type`` says why, as the conventions
have an evaluator that failed say it. The same events go out as OTLP log records,
parented to the root's trace and span, when a logs endpoint is configured.

Each evaluation names its evaluator: ``faultgate.evaluator.name`` / ``.version`` (also the
instrumentation scope of the log records; a span event lives in the agent's scope, hence
the attributes): faultgate-stream, or a plug-in's package and its version;
``faultgate.rule.id`` (the check, or the rule's name) and ``faultgate.rule.digest`` (of the
policy, spec or rules file that produced it, or of a plug-in's code identity); and
``faultgate.span_ids``, the spans a plug-in's or rule's result points at. Its timestamp lies within its run: the root's end
(the run's last span end for log records), when the verdict is about; the log record's
observed time is when it was decided.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from operator import attrgetter
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from faultgate_stream import __version__
from faultgate_stream._native import VerdictAnnex
from faultgate_stream.model.verdict import CLEAN, FAILED, UNDECIDED, CheckResult, Completion, RunVerdict
from faultgate_stream.verdict.redact import safe_key

EVENT = "gen_ai.evaluation.result"
EVALUATOR = "faultgate-stream"
VERDICT_KEYS_PREFIX = "faultgate."
# Message and tool content (telemetry-conventions.md): what strip_content removes.
CONTENT_KEYS = frozenset({
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.prompt",
    "gen_ai.completion", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value",
    "traceloop.entity.input", "traceloop.entity.output",
})
CONTENT_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.", "gen_ai.completion.")

Redact = Callable[[str], str]


def _kv(key: str, value: Any) -> KeyValue:
    v = AnyValue()
    if isinstance(value, bool):
        v.bool_value = value
    elif isinstance(value, float):
        v.double_value = value
    elif isinstance(value, int):
        v.int_value = value
    elif isinstance(value, (list, tuple)):
        v.array_value.values.extend(AnyValue(string_value=str(x)) for x in value)
    else:
        v.string_value = str(value)
    return KeyValue(key=key, value=v)


def strip_content(span: Span) -> None:
    keep = [kv for kv in span.attributes if kv.key not in CONTENT_KEYS and not kv.key.startswith(CONTENT_PREFIXES)]
    if len(keep) != len(span.attributes):
        dropped = len(span.attributes) - len(keep)
        del span.attributes[:]
        span.attributes.extend(keep)
        span.dropped_attributes_count += dropped
    for event in span.events:
        keep = [kv for kv in event.attributes if kv.key not in CONTENT_KEYS and not kv.key.startswith(CONTENT_PREFIXES)]
        if len(keep) != len(event.attributes):
            del event.attributes[:]
            event.attributes.extend(keep)


def verdict_attributes(v: RunVerdict, redact: Redact) -> list[KeyValue]:
    attrs = [_kv("faultgate.verdict", v.verdict),
             _kv("faultgate.checks.fired", [r.check for r in v.fired]),
             _kv("faultgate.checks.undecided", [r.check for r in v.undecided]),
             _kv("faultgate.completion", v.completion.value),
             _kv("faultgate.run_id", str(v.key)),
             _kv("faultgate.scenario", safe_key(v.scenario, redact))]
    attrs += [_kv(f"faultgate.reason.{r.check}", redact(r.reason)) for r in v.fired]
    if v.revision:
        attrs += _amendment_attributes(v)
    return attrs


def _amendment_attributes(v: RunVerdict) -> list[KeyValue]:
    """On an amended verdict (a late span carries it; its evaluation records go out again):
    which revision, the verdict it replaces and the checks that changed."""
    return [_kv("faultgate.revision", v.revision), _kv("faultgate.previous_verdict", v.previous),
            _kv("faultgate.amended_checks", list(v.amended_checks))]


# ``error.type`` of an evaluation that could not be made: its input was not captured.
UNDECIDED_ERROR = "input_not_captured"


def evaluator_of(r: CheckResult) -> tuple[str, str]:
    """(name, version) of what made a result: faultgate-stream, or a plug-in's package."""
    if not r.evaluator:
        return EVALUATOR, __version__
    name, _, version = r.evaluator.rpartition(" ")
    return (name, version) if name else (version, "")


# A result's digest as the annex keys its evaluation: the rules' digest, then, for a result
# that names its evaluator or spans, those too (the annex keeps one encoding per key), as
# JSON: a plain join read spans ('',) as () and ('a,b',) as ('a', 'b'), and an evaluation
# was written with another result's span ids.
_KEY_SEP = "\x1f"


def _evaluation_attributes(r: CheckResult, redact: Redact, digest: str) -> list[KeyValue]:
    digest = digest.split(_KEY_SEP, 1)[0]
    if r.undecided:
        judged = [_kv("gen_ai.evaluation.name", r.check),
                  _kv("gen_ai.evaluation.score.label", "undecided"),
                  _kv("error.type", UNDECIDED_ERROR)]
    else:
        judged = [_kv("gen_ai.evaluation.name", r.check),
                  _kv("gen_ai.evaluation.score.label", "fail" if r.fired else "pass"),
                  _kv("gen_ai.evaluation.score.value", 0.0 if r.fired else 1.0)]
    name, version = evaluator_of(r)
    out = judged + [_kv("gen_ai.evaluation.explanation", redact(r.reason)),
                    _kv("faultgate.severity", r.severity.value),
                    _kv("faultgate.evaluator.name", name),
                    _kv("faultgate.evaluator.version", version),
                    _kv("faultgate.rule.id", r.check),
                    _kv("faultgate.rule.digest", digest)]
    if r.span_ids:
        out.append(_kv("faultgate.span_ids", list(r.span_ids)))
    return out


def _evaluation(redact: Redact, r: CheckResult, digest: str) -> bytes:
    """A result's event attributes, encoded: the bytes after an event's head."""
    return Span.Event(attributes=_evaluation_attributes(r, redact, digest)).SerializeToString()


def evaluator_scope() -> InstrumentationScope:
    """The instrumentation scope evaluation log records are emitted under."""
    return InstrumentationScope(name=EVALUATOR, version=__version__)


_EVALUATOR, _SPAN_IDS = attrgetter("evaluator"), attrgetter("span_ids")
# The keys of verdicts whose results name an evaluator and no span ids, by their digests and
# evaluators: the same few run after run (a plug-in's or a rules file's result names its
# evaluator on every run: building them, twice a run, was ~1,200 instructions a span of
# bench/hot_path.py --checks plugin). Cleared when full: a ruleset gives one entry.
MAX_CACHED_DIGESTS = 256


class EvaluationKeys:
    """The kept keys above, at most ``limit``; ``evicted`` counts the keys forgotten when the
    table was cleared (``faultgate_exporter_evaluation_key_cache_evictions``): a count that
    keeps rising means more kinds of verdict than the table holds, each built afresh."""

    __slots__ = ("kept", "limit", "evicted")

    def __init__(self, limit: int = MAX_CACHED_DIGESTS) -> None:
        self.kept: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, ...]] = {}
        self.limit = limit
        self.evicted = 0


def _named_keys(digests: tuple[str, ...], evaluators: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(d + _KEY_SEP + json.dumps([e, ()]) if e else d for e, d in zip(evaluators, digests))


def _digests(v: RunVerdict, keys: EvaluationKeys | None) -> tuple[str, ...]:
    """The annex's key of each result of ``v``; ``keys``: where those of verdicts whose
    results name an evaluator are kept (None: made each time)."""
    results = v.results
    digests = v.rule_digests if len(v.rule_digests) == len(results) else ("",) * len(results)
    # C-level scans first (``map``): most results name neither, and a generator over them
    # was ~90 bytecodes a run (bench/hot_path.py)
    named = any(map(_EVALUATOR, results))
    if any(map(_SPAN_IDS, results)):  # a run's own span ids: nothing to share with other runs
        return tuple(d + _KEY_SEP + json.dumps([r.evaluator, r.span_ids]) if r.evaluator or r.span_ids
                     else d for r, d in zip(results, digests))
    if not named:
        return digests
    evaluators = tuple(map(_EVALUATOR, results))
    if keys is None:
        return _named_keys(digests, evaluators)
    kept = keys.kept
    key = (digests, evaluators)
    out = kept.get(key)
    if out is None:
        if len(kept) >= keys.limit:
            keys.evicted += len(kept)
            kept.clear()
        out = kept[key] = _named_keys(digests, evaluators)
    return out


def write_verdict(span: Span, v: RunVerdict, redact: Redact, keys: EvaluationKeys | None = None) -> None:
    """Annotate the run's root. Attributes a root already carries under ``faultgate.`` (a
    retry of an annotated span, say) are replaced, never doubled. ``keys``: the export's kept
    evaluation keys (``EvaluationKeys``), else they are made for this call."""
    keep = [kv for kv in span.attributes if not kv.key.startswith(VERDICT_KEYS_PREFIX)
            or kv.key in ("faultgate.scenario", "faultgate.termination", "faultgate.outcome", "faultgate.confirmed")]
    del span.attributes[:]
    span.attributes.extend(keep)
    span.attributes.extend(a for a in verdict_attributes(v, redact) if a.key != "faultgate.scenario"
                           or not any(k.key == "faultgate.scenario" for k in keep))
    when = span.end_time_unix_nano or v.last_end_ns or v.decided_ns
    for r, digest in zip(v.results, _digests(v, keys)):
        span.events.add(time_unix_nano=when, name=EVENT).attributes.extend(_evaluation_attributes(r, redact, digest))


def log_records(v: RunVerdict, redact: Redact, trace_id: bytes, span_id: bytes,
                keys: EvaluationKeys | None = None) -> list[LogRecord]:
    when = v.last_end_ns or v.decided_ns
    out = []
    amended = _amendment_attributes(v) if v.revision else []
    for r, digest in zip(v.results, _digests(v, keys)):
        rec = LogRecord(time_unix_nano=when, observed_time_unix_nano=v.decided_ns or when, event_name=EVENT,
                        trace_id=trace_id, span_id=span_id, severity_text="INFO", severity_number=9)
        rec.body.string_value = redact(r.reason)
        rec.attributes.extend(_evaluation_attributes(r, redact, digest))
        rec.attributes.extend(amended)
        out.append(rec)
    return out


# Distinct pieces kept encoded: the evaluations of results, and the verdict attributes runs
# share (verdict, fired and undecided checks, completion; a scenario; a fired check's
# reason). Most repeat from run to run (a check that passed says the same thing each time);
# a fired check's reason names steps and values, so the table is cleared when full rather
# than grown (the bench workload needs a few dozen entries); what a clear forgets is
# counted (``VerdictBytes.evicted``, faultgate_exporter_annex_cache_evictions).
MAX_CACHED_EVALUATIONS = 4096

# what the annex keys a result on, by position in the record
_RESULT_FIELDS = tuple(CheckResult._fields.index(f) for f in ("check", "fired", "reason", "severity", "undecided"))


def _attributes(*kvs: KeyValue) -> bytes:
    """The ``Span.attributes`` fields of ``kvs``, as upb writes them."""
    return Span(attributes=kvs).SerializeToString()


def _summary(fired: tuple[str, ...], undecided: tuple[str, ...], completion: Completion) -> bytes:
    verdict = FAILED if fired else (UNDECIDED if undecided else CLEAN)
    return _attributes(_kv("faultgate.verdict", verdict), _kv("faultgate.checks.fired", fired),
                       _kv("faultgate.checks.undecided", undecided), _kv("faultgate.completion", completion.value))


def _scenario(redact: Redact, scenario: str) -> bytes:
    return _attributes(_kv("faultgate.scenario", safe_key(scenario, redact)))


def _reason(redact: Redact, check: str, reason: str) -> bytes:
    return _attributes(_kv(f"faultgate.reason.{check}", redact(reason)))


def _head(when: int) -> bytes:
    """An event's head for a time the annex does not write itself: protobuf refuses it."""
    return Span.Event(time_unix_nano=when, name=EVENT).SerializeToString()


class VerdictBytes:
    """The verdict as bytes to append to a root's own encoding: ``write_verdict``'s result
    for a root that carries no ``faultgate.*`` attribute yet (nothing to replace), without
    decoding the root. A repeated field's elements are encoded one after another, so the
    attributes and events are written piece by piece (``_native.VerdictAnnex``,
    native/py/src/export/annex.rs): each piece that repeats across runs is encoded by protobuf
    once, by the functions above, and kept; the run id and the events' time are framed
    there. Built as messages, a root's ~60 ``KeyValue``s cost more than the checks of its
    run (bench/README.md). Masking happens once per kept piece: a reason that quotes a
    value cut short (``Reason``) is never kept, since two of them equal as text may mask
    differently (the value beyond the cut)."""

    def __init__(self, redact: Redact, keys: EvaluationKeys | None = None) -> None:
        self.keys = keys if keys is not None else EvaluationKeys()
        # functions of the redactor, not bound methods: the compiled table does not show the
        # collector what it holds, so a cycle through it would never be freed
        self._annex = VerdictAnnex(_summary, partial(_scenario, redact), partial(_reason, redact),
                                   partial(_evaluation, redact), _head, MAX_CACHED_EVALUATIONS, _RESULT_FIELDS)

    @property
    def evicted(self) -> int:
        """The pieces the full table forgot when it was cleared, since it was made."""
        return self._annex.evicted

    @staticmethod
    def applies_to(span: bytes) -> bool:
        """True when ``span`` (an encoded root) holds no ``faultgate.`` text at all, so no
        attribute of ours is on it yet. Content that merely mentions the prefix takes the
        decoding path (``write_verdict``), which gives the same result."""
        return _PREFIX_BYTES not in span

    def __call__(self, v: RunVerdict, end_ns: int) -> bytes:
        amended = _attributes(*_amendment_attributes(v)) if v.revision else b""
        return self._annex.encode(v.results, _digests(v, self.keys), v.completion, v.scenario, str(v.key), amended,
                                  end_ns or v.last_end_ns or v.decided_ns)


_PREFIX_BYTES = VERDICT_KEYS_PREFIX.encode()
