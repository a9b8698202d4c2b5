"""Evaluation records name their evaluator and the exact rules behind them, and are stamped
within their run: what a downstream store of evaluations needs to tell two policies apart."""
from __future__ import annotations

import dataclasses
import json
import shutil

from faultgate_stream import __version__
from faultgate_stream.checks.config import BindingConfig, ChecksConfig
from faultgate_stream.cli.replay import GrpcSender, replay
from tests.e2e.downstream import attrs, downstream_config
from tests.e2e.test_downstream import _export_config
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector
from tests.conftest import ROOT

RETAIL = ROOT / "examples" / "traces" / "retail_gaps.json"
POLICY = ROOT / "examples" / "policies" / "retail.json"


def _read(out, kind: str) -> list[tuple[dict, dict]]:
    """(scope, item) pairs from the file exporter's output."""
    path = out / f"{kind}.jsonl"
    pairs = []
    for line in path.read_text().splitlines() if path.exists() else ():
        doc = json.loads(line)
        for outer in doc.get("resourceSpans" if kind == "traces" else "resourceLogs", []):
            for scoped in outer.get("scopeSpans" if kind == "traces" else "scopeLogs", []):
                for item in scoped.get("spans" if kind == "traces" else "logRecords", []):
                    pairs.append((scoped.get("scope", {}), item))
    return pairs


def test_evaluations_carry_evaluator_rule_and_policy_digest_and_a_time_within_their_run(live_service, tmp_path):
    policy = tmp_path / "retail.json"
    shutil.copy(POLICY, policy)
    checks = ChecksConfig(bindings=(BindingConfig(agents=("retail",), policy=str(policy)),))
    port, out = free_port(), tmp_path / "out"
    out.mkdir()
    with running_collector(downstream_config(port, out), tmp_path):
        live = live_service(dataclasses.replace(make_config(), checks=checks, export=_export_config(port)))
        sender = GrpcSender(live.grpc)
        try:
            tally = replay([str(RETAIL)], sender)
        finally:
            sender.close()
        verdicts = live.sink.wait_for(13)
        bound_checks = live.service.ruleset.bindings[0].checks
        results = sum(len(v.results) for v in verdicts)
        spans = eventually(lambda: (s := _read(out, "traces")) and len(s) >= tally.spans and s, timeout=30,
                           what="every span downstream")
        logs = eventually(lambda: (r := _read(out, "logs")) and len(r) >= results and r, timeout=30,
                          what="every evaluation log record")
        # the same policy, edited and reloaded: its evaluations must say they are other rules
        policy.write_text(json.dumps({**json.loads(POLICY.read_text()), "max_calls": 99}))
        assert live.service.reload()

    by_trace: dict[str, list[dict]] = {}
    for _, s in spans:
        by_trace.setdefault(s["traceId"], []).append(s)
    digests: dict[str, set[str]] = {}
    for v in verdicts:
        root = next(s for s in by_trace[v.key.trace_id] if s["spanId"] == v.key.root_span_id)
        events = [e for e in root.get("events", []) if e["name"] == "gen_ai.evaluation.result"]
        assert len(events) == len(v.results)
        for e in events:
            a = attrs(e)
            assert a["faultgate.evaluator.name"] == "faultgate-stream"
            assert a["faultgate.evaluator.version"] == __version__
            assert a["faultgate.rule.id"] == a["gen_ai.evaluation.name"]
            assert len(a["faultgate.rule.digest"]) == 16
            digests.setdefault(a["gen_ai.evaluation.name"], set()).add(a["faultgate.rule.digest"])
            # within the root span: a span event outside its span is dropped or misdrawn by viewers
            assert int(root["startTimeUnixNano"]) <= int(e["timeUnixNano"]) <= int(root["endTimeUnixNano"])
    # the bound policy's evaluations name other rules than the every-run checks, and all
    # runs of one check under one ruleset name the same ones
    assert all(len(d) == 1 for d in digests.values()), digests
    bound = {c.name for c in bound_checks}
    assert "policy" in bound and "search_loop" not in bound
    assert len({next(iter(digests[n])) for n in bound}) == 1
    assert len({next(iter(d)) for name, d in digests.items() if name not in bound}) == 1
    assert digests["policy"] != digests["search_loop"]

    for scope, rec in logs:
        assert scope == {"name": "faultgate-stream", "version": __version__}
        run = by_trace[rec["traceId"]]
        first = min(int(s["startTimeUnixNano"]) for s in run)
        last = max(int(s["endTimeUnixNano"]) for s in run)
        assert first <= int(rec["timeUnixNano"]) <= last
        assert attrs(rec)["faultgate.rule.digest"] in digests[attrs(rec)["gen_ai.evaluation.name"]]

    reloaded = live.service.ruleset
    assert reloaded.digest_of("policy", "retail") not in digests["policy"]
    assert reloaded.digest_of("search_loop", "retail") in digests["search_loop"]
