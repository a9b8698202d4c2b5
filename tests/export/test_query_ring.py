"""The verdict API's ring: one record per run as it now stands, bounded by count and bytes,
each eviction counted, nothing raw served, and no verdict masked before a reader asks."""
from __future__ import annotations

from faultgate_stream.export.query.config import QueryConfig
from faultgate_stream.export.query.ring import VerdictRing
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, Completion, EarlyFinding, RunVerdict
from faultgate_stream.verdict.redact import builtin


def _verdict(n: int, *, fired: bool = False, reason: str = "ok", revision: int = 0) -> RunVerdict:
    return RunVerdict(key=RunKey(f"{n:032x}", f"{n:016x}"), scenario="s", agent="shop", agent_version="1",
                      completion=Completion.GRACE, results=(CheckResult("policy", fired, 1.0, reason),),
                      steps=2, spans=3, decided_ns=n * 10**9, revision=revision,
                      previous="clean" if revision else "",
                      early=(EarlyFinding(f"{n:032x}", "00000000000000aa", "policy", reason),) if fired else ())


def _all(ring: VerdictRing) -> list[dict]:
    return ring.newest(lambda r: True, 10_000)[0]


def test_an_amended_verdict_replaces_its_runs_record_and_becomes_the_newest():
    ring = VerdictRing(QueryConfig(), builtin())
    ring.verdict(_verdict(1))
    ring.verdict(_verdict(2))
    ring.verdict(_verdict(1, fired=True, reason="step 2: denied", revision=1))
    records = _all(ring)
    assert [r["run_id"] for r in records] == [f"{1:032x}/{1:016x}", f"{2:032x}/{2:016x}"]
    assert records[0]["verdict"] == "failed" and records[0]["revision"]["previous"] == "clean"
    assert records[0]["fired"][0]["span_ids"] == ["00000000000000aa"] and records[0]["fired"][0]["steps"] == [2]
    assert len(ring) == 2 and len(ring.runs_of(f"{1:032x}")) == 1


def test_past_the_count_the_oldest_go_first_and_are_counted():
    ring = VerdictRing(QueryConfig(max_verdicts=3), builtin())
    for n in range(1, 6):
        ring.verdict(_verdict(n))
    assert [r["decided_time_unix_nano"] for r in _all(ring)] == [5 * 10**9, 4 * 10**9, 3 * 10**9]
    assert ring.evicted == {"max_verdicts": 2, "max_bytes": 0}
    assert ring.runs_of(f"{1:032x}") == [] and len(ring.runs_of(f"{5:032x}")) == 1


def test_past_the_bytes_the_oldest_go_first_and_the_estimate_follows_what_is_kept():
    ring = VerdictRing(QueryConfig(max_bytes=20_000), builtin())
    for n in range(1, 6):
        ring.verdict(_verdict(n, fired=True, reason="x" * 5_000))
    assert 0 < ring.bytes <= 20_000 and ring.evicted["max_bytes"] == 5 - len(ring) > 0
    ring2 = VerdictRing(QueryConfig(), builtin())
    for n in range(1, 6):
        ring2.verdict(_verdict(n, fired=True, reason="x" * 5_000))
    assert ring2.bytes == ring.bytes * 5 // len(ring)


def test_what_is_kept_is_masked():
    ring = VerdictRing(QueryConfig(), builtin())
    ring.verdict(_verdict(1, fired=True, reason="step 1: mailed jane.doe@example.com"))
    (r,) = _all(ring)
    assert "jane.doe" not in repr(r) and r["fired"][0]["reason"] == "step 1: mailed <EMAIL>"


def test_a_verdict_is_masked_when_first_read_and_once():
    masked: list[str] = []
    mask = builtin()

    def counting(text: str) -> str:
        masked.append(text)
        return mask(text)

    ring = VerdictRing(QueryConfig(), counting)
    for n in range(1, 4):
        ring.verdict(_verdict(n, fired=True, reason=f"step 1: mailed jane{n}@example.com"))
    assert masked == []  # deciding a run pays nothing for the API
    first = ring.runs_of(f"{2:032x}")
    assert first[0]["fired"][0]["reason"] == "step 1: mailed <EMAIL>" and "step 1: mailed jane2@example.com" in masked
    calls = len(masked)
    assert ring.runs_of(f"{2:032x}") == first and _all(ring)[1] is first[0]
    assert len(masked) == 3 * calls  # each record built once: the two not read before, just now
