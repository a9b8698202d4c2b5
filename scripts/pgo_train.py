"""The workload the compiled module's profile-guided build learns from (scripts/native_profile.sh).

An instrumented build of ``faultgate_stream._native`` counts which branches and calls this
takes; the release build is then laid out for them. It runs both of the module's users on
the repository's own examples, never on the files the benches time (faultgate's gate
files, ``bench/live.py``'s generated requests), so the benches measure the build on input
it was not trained on:

- offline: ``check``'s engine (read, checks, report with masking) over every bundled trace
  file, with the golden answers and with a policy;
- live: the service's span path with export on (the gRPC handler called with request
  bytes, assembly, every check, span export encoded for a downstream that answers success),
  fed the OTLP examples as 64-span requests with fresh trace ids.

    PYTHONPATH=<package with the instrumented module> python scripts/pgo_train.py [--rounds N]
"""
from __future__ import annotations

import argparse
import copy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
OFFLINE_FILES = sorted((EXAMPLES / "traces").glob("*.json")) + sorted((EXAMPLES / "formats").glob("*.json"))
OTLP_FILES = [EXAMPLES / "traces" / "traces.json", EXAMPLES / "traces" / "retail_gaps.json",
              EXAMPLES / "formats" / "openinference.json"]
GOLDEN = EXAMPLES / "traces" / "golden.json"
POLICY = EXAMPLES / "policies" / "retail.json"
REQUEST_SPANS = 64


def offline(rounds: int) -> int:
    from faultgate_stream.checks.expectations import Golden
    from faultgate_stream.checks.policy import load_policy
    from faultgate_stream.checks.registry import select
    from faultgate_stream.model.errors import InputError
    from faultgate_stream.pipeline import check_spans
    from faultgate_stream.read.files import read_file
    from faultgate_stream.verdict.redact import get_redactor
    from faultgate_stream.verdict.report import Report

    redactor = get_redactor("builtin")
    golden, policy = Golden.load(GOLDEN), load_policy(POLICY)
    runs = 0
    for _ in range(rounds):
        for path in OFFLINE_FILES:
            if path == GOLDEN:
                continue
            try:
                _, spans = read_file(str(path))
            except InputError:
                continue
            for checks in (select(golden=golden), select(policy=policy)):
                verdicts = check_spans([spans], checks)
                Report([c.name for c in checks], verdicts, redactor.name).to_dict(redactor)
                runs += len(verdicts)
    return runs


class _Downstream:
    """Export's sender, answering success without a network."""

    def __init__(self) -> None:
        self.batches = 0

    def send(self, kind: str, payload: bytes):
        from faultgate_stream.export.spans.sender import Answer

        self.batches += 1
        return Answer(0, "")


def live(rounds: int) -> tuple[int, int]:
    from faultgate_stream import config as service_config
    from faultgate_stream.cli.replay import batches, load_request, shift_to
    from faultgate_stream.model.clock import ManualClock
    from faultgate_stream.receive.grpc_server import TraceExport
    from faultgate_stream.service import Service

    env = {"FAULTGATE_STREAM__LOG__VERDICTS": "false", "FAULTGATE_STREAM__ASSEMBLE__ROOT_GRACE": "0.5s",
           "FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__METRICS__ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__EXPORT__ENDPOINT": "127.0.0.1:9"}  # never dialled: the sender is replaced
    clock = ManualClock(1_700_000_000 * 10**9)
    service = Service(service_config.load(None, env), clock=clock)
    downstream = service.exporter._senders["traces"] = _Downstream()
    handler = TraceExport(service.ingest, service.telemetry, service.reader)
    export = service.config.export
    requests = [load_request(p) for p in OTLP_FILES]
    spans = 0
    for r in range(rounds):
        for template in requests:
            request = copy.deepcopy(template)
            for rs in request.resource_spans:
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        s.trace_id = r.to_bytes(4, "big") + s.trace_id[4:]  # a new trace each round
                        spans += 1
            shift_to(request, clock.now_ns())
            for part in batches(request, REQUEST_SPANS):
                handler(part.SerializeToString(), None)
                clock.advance(0.01)
        clock.advance(service.config.assemble.root_grace + 0.1)
        service.assembler._scan()
        while items := service.queue.take(export.max_batch_spans, export.max_batch_bytes, timeout=0):
            service.exporter._send(items)
    return spans, downstream.batches


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args()
    runs = offline(args.rounds)
    spans, exported = live(args.rounds * 10)
    print(f"pgo_train: {runs} runs checked offline, {spans} spans through the live path, {exported} export batches")


if __name__ == "__main__":
    main()
