"""``faultgate-stream baseline RUN... --out band.json``: measure run-to-run noise.

Each file is one baseline run of the same scenarios; every run is checked with the same
checks ``check`` would use for the same flags, and the band (faultgate 0.4.1's
``band.json``) records each run's clean rate, the scenarios clean in every run and the
mean usage. Build the candidate's check with the same flags as the band's."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from faultgate_stream.checks.base import each
from faultgate_stream.cli.check import EXIT_BAD_INPUT, EXIT_CLEAN, add_own_checks, checks_from_args
from faultgate_stream.model.errors import InputError
from faultgate_stream.read.files import FORMATS, read_files


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", metavar="RUN", help="baseline runs, one trace file each (2 or more; 3+ advised)")
    p.add_argument("--out", required=True, help="where to write band.json")
    p.add_argument("--golden", help="golden.json: expected answers (the candidate's check must use it too)")
    p.add_argument("--outcomes", help="outcomes.json: your evaluator's true/false per scenario")
    p.add_argument("--policy", help="policy file (faultgate's keys)")
    p.add_argument("--spec", help="trajectory spec (luckrate's keys)")
    p.add_argument("--check", help="comma-separated subset of checks")
    add_own_checks(p)
    p.add_argument("--format", default="auto", choices=FORMATS, help="trace format (default: detect)")


def run(args: argparse.Namespace) -> int:
    from faultgate_stream.gate.band import STABLE_RUNS, build, run_clean_rate
    from faultgate_stream.gate.drift import Trajectories
    from faultgate_stream.gate.runs import gate_run
    from faultgate_stream.pipeline import check_spans
    from faultgate_stream.verdict.profile import Profiler

    if len(args.traces) < STABLE_RUNS:
        print(f"note: {len(args.traces)} baseline runs measure noise poorly; use {STABLE_RUNS} or more", file=sys.stderr)
    try:
        checks = checks_from_args(args)
        runs = []
        trajectories = Trajectories()  # every file's runs' shapes, per agent and version, for drift
        for path in args.traces:
            t0 = time.perf_counter()
            (found,) = read_files([path], args.format)  # a run's file: spans, and content in logs
            # each baseline file is a run of the suite of its own: checks built afresh, so a
            # windowed budget never counts one file's sessions into another's
            verdicts = check_spans([found.spans], checks_from_args(args), [found.contents], early=False,
                                   profile=Profiler())
            these = [gate_run(v) for v in verdicts]
            for v in verdicts:
                trajectories.add(v.agent, v.agent_version, v.profile.shape)
            rate = run_clean_rate(these)
            print(f"{path}: {len(these)} traces · clean rate "
                  f"{'n/a' if rate is None else f'{rate:.2f}'} · {time.perf_counter() - t0:.1f}s")
            runs.append(these)
        band = build(runs, [c.name for c in each(checks)], trajectories=trajectories)
    except (InputError, ValueError) as e:
        print(f"faultgate-stream: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(band.dump(), encoding="utf-8")
    except OSError as e:
        print(f"faultgate-stream: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"band [{band.min:.2f}, {band.max:.2f}] over {band.n} scenarios × {band.runs} runs · "
          f"{len(band.clean_in_all_runs)} clean in every run · written to {args.out}")
    return EXIT_CLEAN
