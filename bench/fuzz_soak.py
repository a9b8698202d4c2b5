"""The fuzz soak: the targets of tests/fuzz for as many inputs as you give it.

    .venv/bin/python bench/fuzz_soak.py --inputs 1000000 [--seconds N]

Hypothesis builds documents; each seeds ``--mutants`` cheap mutants (``tests/fuzz/mutate.py``),
because building is most of the cost. Each input goes through one target in turn (OTLP/JSON
request, OTLP protobuf request, the same protobuf with bytes mutated, every offline reader;
every 200th also through ``check`` on a file). Beside each document, hypothesis draws one
request of issue 42's classes (``tests/fuzz/hostile.py``: deep, wide, wrong_shape,
proto_names, malformed_copy), sent in OTLP/JSON and in protobuf, traces or logs; a
retryable answer to it is an error too. An internal error stops the soak with its input
written to tests/fuzz/corpus/found-<n>.json (or .bin), to keep as a regression once fixed.
Prints inputs tried, by target, the hostile requests by class and answer, and errors found.
"""
from __future__ import annotations

import argparse
import json
import random
from collections import Counter
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import structlog  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from faultgate_stream.model.errors import InputError  # noqa: E402
from faultgate_stream.read.otlp_json import to_request  # noqa: E402
from tests.fuzz import hostile, mutate, strategies, targets  # noqa: E402


class _Stop(BaseException):
    """Ends the soak at once: hypothesis lets BaseException through, so it neither shrinks
    (the mutants' random state would not replay) nor builds documents no one will use."""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: no limit)")
    ap.add_argument("--mutants", type=int, default=15,
                    help="mutants fed after each document hypothesis builds (0: hypothesis alone)")
    ap.add_argument("--seed", type=int, default=0, help="the mutants' seed; a failure names (seed, input)")
    args = ap.parse_args()
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())  # the engine's own logs, silenced
    counts = {"json": 0, "proto": 0, "proto-bytes": 0, "offline": 0, "check": 0, "hostile": 0}
    answers: Counter[tuple[str, str]] = Counter()  # (hostile class, answer) -> requests
    started = time.monotonic()
    engine = [targets.Engine()]
    n = [0]
    rng = random.Random(args.seed)
    found: list[targets.InternalError] = []

    docs = [0]  # documents fed: their targets take turns by it, whatever else is fed between

    def step() -> int:
        i = n[0] = n[0] + 1
        if i % 5000 == 0:
            engine[0] = targets.Engine()  # a fresh engine now and then: memory stays flat
            print(f"{i} inputs, {time.monotonic() - started:.0f}s, {counts}", flush=True)
        return i

    def feed(doc, body: bytes) -> None:
        i = step()
        d = docs[0] = docs[0] + 1
        wire = None
        try:
            if d % 4 == 0:
                counts["json"] += 1
                engine[0].receive(body, "http", json=True)
            elif d % 4 in (1, 3):
                try:
                    request, _, _ = to_request(json.loads(body))
                except (InputError, RecursionError, ValueError):
                    request = None
                wire = request.SerializeToString() if request is not None else body
                if d % 4 == 3:
                    counts["proto-bytes"] += 1
                    wire = mutate.byte_mutant(wire, rng)
                else:
                    counts["proto"] += 1
                engine[0].receive(wire, "grpc")
            else:
                counts["offline"] += 1
                targets.offline(doc)
            if d % 200 == 0:
                counts["check"] += 1
                targets.check_file(body)
        except targets.InternalError as e:
            # what the failing target was fed: protobuf bytes for the gRPC targets
            out = ROOT / "tests" / "fuzz" / "corpus" / f"found-{i}.{'bin' if wire is not None else 'json'}"
            out.write_bytes(wire if wire is not None else body)
            print(f"internal error on input {i} (seed {args.seed}), written to {out}", flush=True)
            found.append(e)
            raise _Stop from e

    def attack(h: hostile.Hostile) -> None:
        i = step()
        counts["hostile"] += 1
        try:
            for answer in engine[0].hostile(h):
                answers[(h.cls, answer)] += 1
        except targets.InternalError as e:
            out = ROOT / "tests" / "fuzz" / "corpus" / f"found-{i}.{'json' if h.json is not None else 'bin'}"
            out.write_bytes(h.json if h.json is not None else h.proto)
            print(f"internal error on input {i} ({h.cls}, seed {args.seed}): {e}; written to {out}", flush=True)
            found.append(e)
            raise _Stop from e

    @settings(max_examples=args.inputs // (args.mutants + 2) + 1, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategies.any_document(), hostile.any_hostile)
    def one(doc, h):
        attack(h)
        for k in range(args.mutants + 1):
            if n[0] >= args.inputs or (args.seconds and time.monotonic() - started > args.seconds):
                raise _Stop
            d = doc if k == 0 else mutate.mutant(doc, rng)
            feed(d, strategies.dumps(d))

    try:
        one()
    except _Stop:
        pass
    by_class = Counter(cls for cls, _ in answers.elements())
    for cls in sorted(by_class):
        said = ", ".join(f"{a} {c}" for (k, a), c in sorted(answers.items()) if k == cls)
        print(f"  {cls}: {by_class[cls]} requests sent ({said})")
    if found:
        print(f"FAILED after {n[0]} inputs: {found[0]}")
        return 1
    print(f"{n[0]} inputs in {time.monotonic() - started:.0f}s, {counts}, 0 internal errors, 0 retryable answers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
