"""Plug-ins in the live service: hostile plug-ins leave the service ingesting, answering probes and scrapes, and deciding every
run, with every misdeed counted (their parity with the offline command: test_stream_parity.py)."""
from __future__ import annotations

import dataclasses
import threading
import time
import urllib.request

from faultgate_stream.checks.config import ChecksConfig, IsolationConfig
from faultgate_stream.checks.registry import select
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.verdict.ruleset import own_checks
from tests.conftest import ROOT
from tests.live_service import make_config

RETAIL = ROOT / "examples" / "traces" / "retail_gaps.json"
RULES = ROOT / "examples" / "plugins" / "rules.yaml"
H = "tests.checks.hostile_plugins:"
HOSTILE = [H + n for n in ("Raises", "Sleeps", "Spins", "Allocates", "Garbage", "Mutates")]


def _key(verdicts, names):
    return {(str(v.key), r.check): (r.fired, r.undecided, r.reason) for v in verdicts for r in v.results
            if r.check in names}


def _get(url: str) -> tuple[int, float]:
    t0 = time.monotonic()
    with urllib.request.urlopen(url, timeout=10) as r:
        r.read()
        return r.status, time.monotonic() - t0


def test_hostile_plugins_leave_the_service_ingesting_and_deciding_every_run_with_counts_right(live_service):
    _, spans = read_file(RETAIL)
    good = [H + "StepCount"]
    offline = check_spans([spans], select() + own_checks(good, str(RULES)))
    runs = len(offline)
    checks = ChecksConfig(plugins=tuple(good + HOSTILE), rules=str(RULES),
                          isolation=IsolationConfig(cpu_budget=0.02, deadline=0.5, max_overruns=3))
    live = live_service(dataclasses.replace(make_config(root_grace=0.3), checks=checks))
    ports = live.service.ports
    # probes and scrapes answered while plug-ins sleep and spin: polled from the start
    answered: list[tuple[str, int, float]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            for path in ("readyz", "metrics"):
                try:
                    status, took = _get(f"http://127.0.0.1:{ports['metrics']}/{path}")
                except OSError as e:
                    status, took = -1, float("inf")
                    answered.append((f"{path}: {e}", status, took))
                    continue
                answered.append((path, status, took))
            time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    sender = GrpcSender(live.grpc)
    t0 = time.monotonic()
    try:
        tally = replay([str(RETAIL)], sender, batch=20)
    finally:
        sender.close()
    sent_in = time.monotonic() - t0
    try:
        streamed = live.sink.wait_for(runs, timeout=60)
    finally:
        stop.set()
        poller.join(15)
    assert tally.rejected == 0
    assert live.sample("faultgate_receiver_accepted_spans_total") == tally.spans
    assert sent_in < 5, f"ingesting {tally.spans} spans took {sent_in:.1f}s"
    assert len(streamed) == runs
    # the well-behaved checks, built-in, plug-in and rules alike, judged as offline
    names = {c.name for c in select()} | {"step_count"} | {c.name for c in own_checks((), str(RULES))}
    assert _key(streamed, names) == _key(offline, names)
    # every hostile plug-in's result undecided on every run, never fired or passed
    by = {name: [r for v in streamed for r in v.results if r.check == name]
          for name in ("raises", "sleeps", "spins", "allocates", "garbage", "mutates")}
    for name in ("raises", "sleeps", "spins", "allocates", "garbage"):
        assert all(r.undecided for r in by[name]) and len(by[name]) == runs, name
    assert all(not r.fired and r.reason == "every view refused to change" for r in by["mutates"])
    assert live.sample("faultgate_check_errors_total", check="raises") == runs
    assert live.sample("faultgate_check_errors_total", check="garbage") == runs
    # a loop's call ends over its CPU budget, or past the deadline where a loaded host gave it
    # too little of a core to spend the budget in time: an overrun either way, never a stall
    for name, limits in (("sleeps", ("deadline",)), ("spins", ("cpu", "deadline")), ("allocates", ("cpu", "deadline"))):
        counts = {limit: live.sample("faultgate_check_overruns_total", check=name, limit=limit)
                  for limit in ("cpu", "deadline", "gil")}
        assert sum(counts[limit] for limit in limits) == 3 and sum(counts.values()) == 3, (name, counts)
        assert live.sample("faultgate_check_switched_off_total", check=name) == 1, name
        assert live.sample("faultgate_checks_off", check=name) == 1, name
        assert sum("switched off after 3 overruns" in r.reason for r in by[name]) == runs - 3, name
    assert live.sample("faultgate_checks_off", check="step_count") == 0
    # probes and scrapes kept answering, in time, all along
    assert answered and all(status == 200 for _, status, _ in answered), answered[:5]
    slowest = max(took for _, _, took in answered)
    assert slowest < 2.0, f"a probe or scrape waited {slowest:.2f}s"
    assert live.service.ready


def test_sighup_rereads_the_rules_file_and_builds_the_plugins_again(live_service, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text('- {name: first_rule, when: "span.tool == \'x\'"}\n')
    checks = ChecksConfig(plugins=(H + "Spins",), rules=str(rules),
                          isolation=IsolationConfig(cpu_budget=0.01, max_overruns=1))
    live = live_service(dataclasses.replace(make_config(root_grace=0.3), checks=checks))
    sender = GrpcSender(live.grpc)
    try:
        replay([str(RETAIL)], sender, batch=50)
    finally:
        sender.close()
    live.sink.wait_for(13)
    assert live.sample("faultgate_checks_off", check="spins") == 1
    rules.write_text('- {name: second_rule, level: run, when: "run.steps.size() > 100"}\n')
    assert live.service.reload()
    names = live.service.ruleset.names
    assert "second_rule" in names and "first_rule" not in names and "spins" in names
    # the plug-in was built again: switched on, until it overruns again
    assert live.sample("faultgate_checks_off", check="spins") == 0
