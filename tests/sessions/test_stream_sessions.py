"""Session verdicts on the verdict stream and in the verdict log: only subscribers that ask get them (a subscriber
that predates sessions sees no change), filtered like run verdicts, masked like them."""
from __future__ import annotations

from faultgate_stream.export.stream.encode import encode_session
from faultgate_stream.export.stream.gen import verdict_pb2 as pb
from faultgate_stream.export.stream.sink import _Subscriber
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.session import SessionEnd, SessionVerdict
from faultgate_stream.model.verdict import CheckResult, Severity

FAILED = SessionVerdict("S-alice@example.com", "support", SessionEnd.IDLE, (RunKey("ab" * 16, "cd" * 8),),
                        (CheckResult("session.token_budget", True, 1.0, "alice@example.com used 9 > 5",
                                     Severity.SOFT, "session"),), tokens=9.0)
CLEAN = FAILED._replace(results=())


def test_only_subscribers_that_ask_for_sessions_get_them_filtered_like_run_verdicts():
    assert not _Subscriber(pb.SubscribeRequest(), 4).wants_session(FAILED)
    assert _Subscriber(pb.SubscribeRequest(sessions=True), 4).wants_session(CLEAN)
    assert not _Subscriber(pb.SubscribeRequest(sessions=True, only_failed=True), 4).wants_session(CLEAN)
    assert _Subscriber(pb.SubscribeRequest(sessions=True, only_failed=True), 4).wants_session(FAILED)
    assert not _Subscriber(pb.SubscribeRequest(sessions=True, agents=["other"]), 4).wants_session(FAILED)


def test_a_session_verdict_on_the_wire_is_masked_and_leaves_the_run_fields_empty():
    msg = pb.Verdict.FromString(encode_session(FAILED, lambda s: s.replace("alice@example.com", "<email>"))
                                .SerializeToString())
    assert msg.run_id == "" and msg.HasField("session")
    s = msg.session
    assert (s.session_id, s.verdict, s.end, list(s.run_ids)) == (
        "S-<email>", pb.OUTCOME_FAILED, pb.SESSION_END_IDLE, [f"{'ab' * 16}/{'cd' * 8}"])
    assert s.results[0].reason == "<email> used 9 > 5" and s.has_tokens and not s.has_cost


def test_the_verdict_log_writes_a_session_verdict_line_masked():
    import structlog
    from structlog.testing import capture_logs

    from faultgate_stream.export.log.sink import VerdictLog

    with capture_logs() as logs:
        VerdictLog(structlog.get_logger("t"), lambda s: s.replace("alice@example.com", "<email>")).session(FAILED)
    (line,) = logs
    assert line["event"] == "session_verdict" and line["session_id"] == "S-<email>" and line["end"] == "idle"
    assert line["fired"] == {"session.token_budget": {"severity": "soft", "reason": "<email> used 9 > 5"}}
    assert line["runs"] == [f"{'ab' * 16}/{'cd' * 8}"] and line["verdict"] == "failed"
