"""Parity with faultgate 0.4.1 over every reference report made with --policy.

For each (trace, check) faultgate reported, our ``detected`` must equal its (a ``--band``
in the flags only adds the gate, which is not compared here). For the ``policy`` column
the reason must equal faultgate's too, once masked as faultgate masks its reports: the
reasons are kept word for word so that the two tools' reports diff cleanly. Deviations we
are sure of live in PARITY_DEVIATIONS.md with a test pinning our behaviour; none touch
these reports, so the table below is empty and every cell must match.

The checks are built in-process: the default list, with the ``policy`` check built from
the report's policy file.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from faultgate_stream.checks.expectations import Golden
from faultgate_stream.checks.policy import PolicyCheck, load_policy
from faultgate_stream.checks.registry import select
from faultgate_stream.checks.unrecovered_tool_error import UnrecoveredToolError
from faultgate_stream.pipeline import assemble_runs, check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.verdict.redact import get_redactor

README_ROW = re.compile(r"^\| `(?P<report>[^`]+)` \| `(?P<input>[^`]+)` \| `(?P<flags>[^`]*)` \| (?P<exit>\d) \|")
REPORTS = 16
# (report, trace id, check) -> our detected, where we knowingly differ from faultgate.
# ok-failed-auth-then-retry: the failed email lookup is made good by the name-and-zip lookup
# the retail policies declare interchangeable, so it is not unrecovered (see the decision
# record below); faultgate fires it.
OK_RETRY = "0000000000000000000000000000000c"
DEVIATIONS: dict[tuple[str, str, str], bool] = {
    (f"faultgate-0.4.1__tests__fixtures__retail_gaps__{p}.faultgate.json", OK_RETRY, "unrecovered_tool_error"): False
    for p in ("policy_retail", "policy_retail_v031", "policy_retail_gap_test", "policy_retail_v031_no_allow")
}
RETAIL = "faultgate-0.4.1/tests/fixtures/retail_gaps.json"
GAP_TEST_POLICY = "reference/derived_policies/policy_retail_gap_test.json"


def policy_rows(corpus: Path) -> list[dict[str, str]]:
    rows = [m.groupdict() for line in (corpus / "README.md").read_text().splitlines()
            if (m := README_ROW.match(line))]
    return [r for r in rows if "--policy" in r["flags"]]


def _file(corpus: Path, name: str) -> Path:
    """A flag's file: faultgate's examples first, else the corpus (derived policies)."""
    shipped = corpus / "faultgate-0.4.1" / name
    return shipped if shipped.exists() else corpus / name


def _checks(corpus: Path, flags: str) -> list:
    toks = flags.split()
    given = dict(zip(toks[::2], toks[1::2]))
    golden = Golden.load(_file(corpus, given["--golden"])) if "--golden" in given else None
    return select(None, golden=golden, policy=load_policy(_file(corpus, given["--policy"])))


def test_the_reference_table_lists_every_policy_report(corpus):
    rows = policy_rows(corpus)
    assert len(rows) == REPORTS
    assert all((corpus / "reference" / r["report"]).is_file() for r in rows)
    assert {r["flags"].split("--policy ")[1].split()[0] for r in rows} == {
        "examples/gate/policy.json", "examples/policy_support.json", "examples/policy_retail.json",
        "examples/policy_retail_v031.json", GAP_TEST_POLICY,
        "reference/derived_policies/policy_retail_v031_no_allow.json"}


@pytest.mark.parametrize("row", range(REPORTS))
def test_our_detected_equals_faultgates_for_every_trace_and_check_under_a_policy(corpus, row):
    r = policy_rows(corpus)[row]
    theirs = json.loads((corpus / "reference" / r["report"]).read_text())
    checks = _checks(corpus, r["flags"])
    assert [c.name for c in checks] == theirs["checks"]
    _, spans = read_file(corpus / "faultgate-0.4.1" / r["input"])
    verdicts = check_spans([spans], checks)
    ours = {(v.key.trace_id, x.check): (v, x) for v in verdicts for x in v.results}
    assert set(ours) == {(x["trace_id"], x["check"]) for x in theirs["results"]}
    mask = get_redactor(theirs["redaction"])
    for x in theirs["results"]:
        key = (x["trace_id"], x["check"])
        verdict, mine = ours[key]
        assert mine.fired == DEVIATIONS.get((r["report"], *key), x["detected"]), (key, mine.reason, x["reason"])
        assert verdict.scenario == x["scenario"]
        if x["check"] == "policy":
            assert mask(mine.reason) == x["reason"], key
    fired = {c: sum(1 for v in verdicts for x in v.results if x.check == c and x.fired) for c in theirs["checks"]}
    expected = dict(theirs["fired"])
    for (report, _, check), detected in DEVIATIONS.items():
        if report == r["report"]:
            expected[check] += 1 if detected else -1
    assert fired == expected


def _retail(corpus: Path) -> list:
    _, spans = read_file(corpus / RETAIL)
    return spans


def test_the_stateful_retail_policy_flags_the_six_gaps_and_none_of_the_seven_look_alikes(corpus):
    checks = [PolicyCheck(load_policy(corpus / GAP_TEST_POLICY))]
    verdicts = {v.scenario: v.results[0] for v in check_spans([_retail(corpus)], checks)}
    assert len(verdicts) == 13
    assert sorted(s for s, r in verdicts.items() if r.fired) == sorted(s for s in verdicts if s.startswith("gap-"))
    assert len([s for s in verdicts if s.startswith("gap-")]) == 6
    assert verdicts["gap-G3-stale-state"].reason == (
        "step 6: modify_pending_order_items before a successful get_order_details with status == 'pending' for "
        "the same order_id '#W1' (get_order_details at step 2 voided by cancel_pending_order at step 4)")


def test_without_a_policy_unrecovered_tool_error_reads_only_later_calls_of_the_same_tool(corpus):
    """As faultgate: with nothing to say which tools stand in for each other, a failed
    email lookup is made good only by a later successful email lookup."""
    runs = {run.scenario: run for run in assemble_runs(_retail(corpus))}
    r = UnrecoveredToolError().finish(None, runs["ok-failed-auth-then-retry"])
    assert r.fired and r.reason.startswith("Tool 'find_user_id_by_email' failed at step 1")


def test_unrecovered_tool_error_does_not_fire_when_a_declared_alternative_made_the_failed_call_good(corpus):
    """Decision: on ``ok-failed-auth-then-retry`` ``unrecovered_tool_error`` should NOT fire
    (faultgate fires it; its author labels the run valid, and we agree with the author).

    The trace: step 1 ``find_user_id_by_email`` returns "Error: User not found" (the
    user gave a wrong email); step 2 ``find_user_id_by_name_zip`` finds the user; the
    agent looks the order up, has it confirmed, cancels it, answers "Done." and stops with
    ``user_stop``. Every later call succeeded. The failed call's purpose, finding the
    user, was achieved by the other lookup, which is exactly what the policy declares:
    ``"after": ["find_user_id_by_email", "find_user_id_by_name_zip"]`` means any one of
    them authenticates. Calling this run's error unrecovered fails a gate on the most
    common legitimate recovery in tau2 retail. By contrast ``gap-G1-failed-auth`` (the
    email lookup fails and no lookup ever succeeds) must keep firing, and so must
    ``gap-G2-error-text`` (the failed order lookup is never retried at all).

    The rule (unrecovered_tool_error.py): a failed step is
    recovered by a later successful call to the same tool *or to one of its declared
    alternatives*. ``UnrecoveredToolError(alternatives: Mapping[str, frozenset[str]] = {})``
    with ``last_ok`` tracked per tool and a failure at step i recovered when any tool in
    ``{tool} | alternatives.get(tool, ())`` has a successful step after i; the wiring
    passes ``Policy.alternatives`` (tools named together in one ``requires[].after``
    list) when a policy is given. Without a policy there are no alternatives, so every
    report made without ``--policy`` keeps faultgate's verdicts; with the four retail
    policies, ``ok-failed-auth-then-retry`` becomes a listed deviation in DEVIATIONS above.
    """
    runs = {run.scenario: run for run in assemble_runs(_retail(corpus))}
    alternatives = load_policy(corpus / GAP_TEST_POLICY).alternatives
    check = UnrecoveredToolError(alternatives=alternatives)
    assert not check.finish(None, runs["ok-failed-auth-then-retry"]).fired
    assert check.finish(None, runs["gap-G1-failed-auth"]).fired
    assert check.finish(None, runs["gap-G2-error-text"]).fired
