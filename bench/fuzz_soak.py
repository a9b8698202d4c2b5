"""The fuzz soak: the targets of tests/fuzz for as many inputs as you give it.

    .venv/bin/python bench/fuzz_soak.py --inputs 1000000 [--seconds N]

Each input goes through one target in turn (OTLP/JSON request, OTLP protobuf request,
every offline reader; every 50th also through ``check`` on a file). An internal error
stops the soak with its input written to tests/fuzz/corpus/found-<n>.json, to keep as a
regression once fixed. Prints inputs tried, by target, and errors found.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import structlog  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from faultgate_stream.model.errors import InputError  # noqa: E402
from faultgate_stream.read.otlp_json import to_request  # noqa: E402
from tests.fuzz import strategies, targets  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: no limit)")
    args = ap.parse_args()
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())  # the engine's own logs, silenced
    counts = {"json": 0, "proto": 0, "offline": 0, "check": 0}
    started = time.monotonic()
    engine = [targets.Engine()]
    n = [0]

    @settings(max_examples=args.inputs, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategies.any_document())
    def one(doc):
        if args.seconds and time.monotonic() - started > args.seconds:
            return
        i = n[0] = n[0] + 1
        if i % 5000 == 0:
            engine[0] = targets.Engine()  # a fresh engine now and then: memory stays flat
            print(f"{i} inputs, {time.monotonic() - started:.0f}s, {counts}", flush=True)
        try:
            body = strategies.dumps(doc)
            if i % 3 == 0:
                counts["json"] += 1
                engine[0].receive(body, "http", json=True)
            elif i % 3 == 1:
                try:
                    request, _, _ = to_request(json.loads(body))
                except (InputError, RecursionError):
                    request = None
                counts["proto"] += 1
                engine[0].receive(request.SerializeToString() if request is not None else body, "grpc")
            else:
                counts["offline"] += 1
                targets.offline(doc)
            if i % 50 == 0:
                counts["check"] += 1
                targets.check_file(body)
        except targets.InternalError:
            out = ROOT / "tests" / "fuzz" / "corpus" / f"found-{i}.json"
            out.write_bytes(strategies.dumps(doc))
            print(f"internal error on input {i}, written to {out}", flush=True)
            raise

    try:
        one()
    except targets.InternalError as e:
        print(f"FAILED after {n[0]} inputs: {e}")
        return 1
    print(f"{n[0]} inputs in {time.monotonic() - started:.0f}s, {counts}, 0 internal errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
