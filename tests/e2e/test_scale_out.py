"""Scale-out as DESIGN.md describes it, with real collectors from deploy/collector/:
agent collector -> gateway collector (load_balancing exporter, routing_key traceID, static
resolver) -> 2 or 3 ``faultgate-stream serve`` processes -> downstream collector.

The figures these tests print (``-s``) are the ones docs/scale-out.md quotes."""
from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from faultgate_stream.cli.replay import load_request, shift_to
from faultgate_stream.config import load
from faultgate_stream.pipeline import assemble_runs
from faultgate_stream.read.files import read_file
from tests.e2e.downstream import read_spans
from tests.e2e.scale import (
    accounting, agent, cluster, downstream, replica_config, run_parts, series, span_count, spans_in, summed, wait_until,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_FILES = [EXAMPLES / "traces" / "traces.json", EXAMPLES / "traces" / "retail_gaps.json"]
COUNTERS = ("faultgate_runs_total", "faultgate_check_fired_total", "faultgate_receiver_accepted_spans_total")


def _span_keys(requests) -> set[tuple[str, str]]:
    return {(s.trace_id.hex(), s.span_id.hex()) for r in requests for rs in r.resource_spans
            for ss in rs.scope_spans for s in ss.spans}


def _send_all(endpoint: str, requests) -> None:
    channel = grpc.insecure_channel(endpoint)
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    for r in requests:
        stub.Export(r, timeout=30)
    channel.close()


def _drained(c, total_spans: int):
    """Every span accepted, decided and exported by some replica (the terms, or None)."""
    terms = [accounting(r) for r in c.replicas]
    if sum(t["accepted"] for t in terms) < total_spans or any(t["queued"] or t["sent"] < t["accepted"] for t in terms):
        return None
    return terms


@pytest.mark.parametrize("replicas", [2, 3])
def test_replicas_behind_the_gateway_decide_each_run_once_and_sum_to_what_one_replica_decides(
        replicas, tmp_path, live_service):
    now = time.time_ns()
    requests = []
    for i in range(150):
        requests += run_parts(i, now)
    for f in EXAMPLE_FILES:
        r = load_request(f)
        shift_to(r, now)
        requests.append(r)
    total_spans = sum(span_count(r) for r in requests)
    expected_runs = 150 + sum(len(assemble_runs(read_file(str(f))[1])) for f in EXAMPLE_FILES)

    with downstream(tmp_path) as (down, out):
        config_path = replica_config(tmp_path, down)
        # the single replica to compare with: the same config, fed the same requests directly
        single = load(config_path, {"FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": "127.0.0.1:0",
                                    "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": '""',
                                    "FAULTGATE_STREAM__METRICS__ENDPOINT": "127.0.0.1:0",
                                    "FAULTGATE_STREAM__EXPORT__ENDPOINT": '""',
                                    "FAULTGATE_STREAM__LOG__VERDICTS": "false"})
        one = live_service(single)
        _send_all(one.grpc, requests)
        baseline = one.sink.wait_for(expected_runs, timeout=60)

        with cluster(tmp_path, replicas, config_path) as c, agent(tmp_path, c.listen) as agent_endpoint:
            _send_all(agent_endpoint, requests)
            terms = wait_until(lambda: _drained(c, total_spans), 120, "every span decided and exported")
            decided = wait_until(lambda: (v := _first_verdicts(c)) and len(v) >= expected_runs and v, 60,
                                 "every verdict logged")
            together = summed(c.replicas, *COUNTERS)
            gateway_metrics = _get_text(f"http://127.0.0.1:{c.gateway_metrics_port}/metrics")
        # every span reached the downstream collector, and its tail-sampled pipeline kept
        # exactly the traces whose run failed
        keys = wait_until(lambda: (k := {(s["traceId"], s["spanId"]) for s in read_spans(out)}) >= _span_keys(requests)
                          and k, 60, "every span downstream")
        failed_traces = {d["trace_id"] for _, d in decided if d["verdict"] == "failed"}
        kept = wait_until(lambda: (k := {s["traceId"] for s in spans_in(out / "failed.jsonl")}) >= failed_traces
                          and k, 60, "failed traces tail-sampled")

    assert keys >= _span_keys(requests)
    assert failed_traces and kept == failed_traces
    # each run decided once, by one replica, and no trace's spans reached two replicas
    per_run = Counter(d["run_id"] for _, d in decided)
    assert max(per_run.values()) == 1 and set(per_run) == {str(v.key) for v in baseline}
    owners = defaultdict(set)
    for index, d in decided:
        owners[d["trace_id"]].add(index)
    assert all(len(o) == 1 for o in owners.values())
    assert {d["completion"] for _, d in decided} == {v.completion.value for v in baseline}
    # the replicas' counters add up to the single replica's, series by series
    assert together == series(one.metrics(), *COUNTERS)
    # nothing refused or lost anywhere, and the equation holds on each replica
    for t in terms:
        assert t["accepted"] == t["sent"] + t["failed"] + t["filtered"] + t["queued"]
        assert t["failed"] == t["refused"] == t["rejected"] == t["queued"] == 0
    assert "otelcol_exporter_send_failed_spans" not in gateway_metrics or _total(
        gateway_metrics, "otelcol_exporter_send_failed_spans") == 0
    per_replica = Counter(index for index, _ in decided)
    assert len(per_replica) == replicas and min(per_replica.values()) > 0
    print(f"\nscale-out {replicas} replicas: runs per replica {dict(sorted(per_replica.items()))}, "
          f"{expected_runs} runs, {total_spans} spans, split runs 0")


def test_adding_a_replica_mid_replay_splits_runs_in_flight_and_counts_every_fragment(tmp_path):
    """A ring change (static resolver: rewrite the list, SIGHUP the gateway) while runs are
    in flight: each run's tool spans go first, its root 1 s later, so the runs whose traces
    move to the new replica in that second are split. Every fragment is decided and counted
    (the one without the root as an orphan), every span goes downstream."""
    runs, per_s, lag = 400, 40, 40          # 10 s of traffic, roots sent 1 s after the tools
    now = time.time_ns()
    parts = [run_parts(i, now) for i in range(runs)]
    total_spans = sum(span_count(t) + span_count(r) for t, r in parts)
    with downstream(tmp_path) as (down, out):
        # a root reaches its replica up to seconds late while the gateway reloads and the
        # agent collector retries (more on a loaded machine): the fragment before it must not
        # be closed as an orphan meanwhile, or the root would count as late, not as the run
        config_path = replica_config(tmp_path, down, idle_timeout="15s")
        with cluster(tmp_path, 2, config_path) as c, agent(tmp_path, c.listen) as agent_endpoint:
            errors: list[BaseException] = []

            def traffic() -> None:
                try:
                    channel = grpc.insecure_channel(agent_endpoint)
                    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
                    started = time.monotonic()
                    for i in range(runs + lag):
                        if i < runs:
                            stub.Export(parts[i][0], timeout=30)
                        if i >= lag:
                            stub.Export(parts[i - lag][1], timeout=30)
                        time.sleep(max(0.0, started + (i + 1) / per_s - time.monotonic()))
                    channel.close()
                except BaseException as e:  # re-raised in the test's thread below
                    errors.append(e)

            th = threading.Thread(target=traffic)
            started = time.monotonic()
            th.start()
            time.sleep(3)
            added, reload_s = c.add_replica()   # the new replica's start takes seconds here
            changed_at = time.monotonic() - started
            th.join()
            assert errors == []
            terms = wait_until(lambda: _drained(c, total_spans), 120, "every span decided and exported")
            decided = wait_until(
                lambda: (v := _first_verdicts(c))
                and sum(d["spans"] for _, d in v) + sum(t["late"] + t["duplicates"] for t in terms) >= total_spans
                and v, 60, "every span in a verdict")
            terms = [accounting(r) for r in c.replicas]
        keys = wait_until(lambda: (k := {(s["traceId"], s["spanId"]) for s in read_spans(out)})
                          >= _span_keys([p for pair in parts for p in pair]) and k, 60, "every span downstream")

    assert keys >= _span_keys([p for pair in parts for p in pair])
    fragments = defaultdict(list)
    for index, d in decided:
        fragments[d["trace_id"]].append((index, d))
    assert len(fragments) == runs
    split = {t: f for t, f in fragments.items() if len({i for i, _ in f}) > 1}
    for t, f in fragments.items():
        # the root is decided exactly once; any other fragment is an orphan, on another replica
        rooted = [d for _, d in f if d["completion"] != "orphan"]
        assert len(rooted) == 1, (t, f)
        assert all(d["completion"] == "orphan" for _, d in f if d is not rooted[0])
    orphans = [d for f in fragments.values() for _, d in f if d["completion"] == "orphan"]
    assert all(d["trace_id"] in split for d in orphans)
    # no span unaccounted: in a verdict, or counted late or duplicate
    in_verdicts = sum(d["spans"] for _, d in decided)
    late = sum(t["late"] for t in terms)
    dup = sum(t["duplicates"] for t in terms)
    assert in_verdicts + late + dup == total_spans
    for t in terms:
        assert t["accepted"] == t["sent"] + t["failed"] + t["filtered"] + t["queued"]
        assert t["failed"] == t["queued"] == 0
    new_runs = sum(1 for i, d in decided if i == added.index and d["completion"] != "orphan")
    assert new_runs > 0
    per_replica = Counter(i for i, d in decided if d["completion"] != "orphan")
    orphan_spans = sum(d["spans"] for d in orphans)
    print(f"\nrebalance 2->3 at t={changed_at:.1f}s of {runs / per_s:g}s, {lag} runs in flight: gateway reload {reload_s:.2f}s; runs per replica (by root) "
          f"{dict(sorted(per_replica.items()))}; split runs {len(split)} of {runs} "
          f"({len(orphans)} orphan fragments, {orphan_spans} spans); late {late:g}, duplicates {dup:g}; "
          f"refused by replicas {sum(t['refused'] for t in terms):g}")


def _get_text(url: str) -> str:
    import urllib.request

    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=5) as r:
        return r.read().decode()


def _total(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and not line.startswith("#"))


def _first_verdicts(c) -> list[tuple[int, dict]]:
    """(replica, verdict line) of each run's first verdict: an amendment (a late span changed
    a check's result; ``revision`` >= 1) restates its run and is left out of these counts."""
    return [(r.index, d) for r in c.replicas for d in r.verdicts() if not d.get("revision")]
