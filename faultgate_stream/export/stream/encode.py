"""``RunVerdict`` -> the wire ``faultgate.stream.v1.Verdict``, every reason and the scenario key masked.

Masking happens here, once per verdict, so no code path can put a raw reason into a
message: the stream only ever sends what ``encode`` returned.
"""
from __future__ import annotations

from collections.abc import Callable

from faultgate_stream.export.stream.gen import verdict_pb2 as pb
from faultgate_stream.model.session import SessionEnd, SessionVerdict
from faultgate_stream.model.verdict import VERDICTS, CheckResult, Completion, RunVerdict, Severity
from faultgate_stream.verdict.redact import safe_key

# Mapped by name, so a Completion or Severity added to the model without a proto value
# fails at import (and in the tests), instead of going out as UNSPECIFIED.
_COMPLETION = {c: pb.Completion.Value(f"COMPLETION_{c.name}") for c in Completion}
_SEVERITY = {s: pb.Severity.Value(f"SEVERITY_{s.name}") for s in Severity}
_SESSION_END = {e: pb.SessionEnd.Value(f"SESSION_END_{e.name}") for e in SessionEnd}
_OUTCOME = {name: pb.Outcome.Value(f"OUTCOME_{name.upper()}") for name in VERDICTS}


def encode(v: RunVerdict, redact: Callable[[str], str]) -> pb.Verdict:
    """The verdict as subscribers receive it; ``redact`` masks each reason and the scenario key."""
    msg = pb.Verdict(
        run_id=str(v.key), trace_id=v.key.trace_id, root_span_id=v.root_span_id,
        # an agent names itself: its name is masked like any text from outside
        scenario=safe_key(v.scenario, redact), agent=redact(v.agent), agent_version=redact(v.agent_version),
        verdict=_OUTCOME[v.verdict],
        completion=_COMPLETION[v.completion], steps=v.steps, spans=v.spans,
        decided_time_unix_nano=v.decided_ns, revision=v.revision,
        previous_verdict=_OUTCOME[v.previous] if v.previous else pb.OUTCOME_UNSPECIFIED,
        amended_checks=v.amended_checks, amended_by=v.amended_by,
    )
    msg.results.extend(_results(v.results, redact))
    msg.early.extend(pb.EarlyFinding(check=f.check, span_id=f.span_id, reason=redact(f.reason)) for f in v.early)
    return msg


def _results(results: tuple[CheckResult, ...], redact: Callable[[str], str]) -> list[pb.CheckResult]:
    return [pb.CheckResult(check=r.check, fired=r.fired, confidence=r.confidence, severity=_SEVERITY[r.severity],
                           reason=redact(r.reason), kind=r.kind, undecided=r.undecided, evaluator=r.evaluator,
                           span_ids=r.span_ids) for r in results]


def encode_session(s: SessionVerdict, redact: Callable[[str], str]) -> pb.Verdict:
    """A session's verdict as subscribers that asked for sessions receive it: a ``Verdict``
    whose ``session`` is set and whose run fields are empty."""
    msg = pb.SessionVerdict(
        session_id=redact(s.session_id), agent=redact(s.agent), verdict=_OUTCOME[s.verdict], end=_SESSION_END[s.end],
        run_ids=[str(k) for k in s.runs], tokens=s.tokens or 0.0, has_tokens=s.tokens is not None,
        cost_usd=s.cost_usd or 0.0, has_cost=s.cost_usd is not None, decided_time_unix_nano=s.decided_ns)
    msg.results.extend(_results(s.results, redact))
    return pb.Verdict(session=msg)
