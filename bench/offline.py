"""Offline benchmark: faultgate-stream against faultgate 0.4.1, same inputs, same run.

    .venv/bin/python bench/offline.py [--rounds N] [--repeats R] [--instructions] [--corpus DIR] [--keep-venv PATH]

What it measures (see bench/README.md for how to read the output):

1. The engine, in-process: read one trace file and run every rule and golden check on it,
   the way each tool's ``check --golden`` command does. Each tool runs in its own
   interpreter (this same file, started in ``--worker`` mode by that tool's python), so
   neither tool's imports or caches help the other. The two workers are interleaved over
   several rounds so that noise on this shared machine falls on both, and the figures
   printed are ratios of medians measured in this run.
2. The whole command line, once per tool per file in each round: wall time including interpreter start.
3. Agreement: every (trace_id, check) cell in faultgate's JSON report, compared with ours.

The last line is ``RESULT offline_speedup=<x> agreement=<matched>/<total> cli_speedup=<y>``
(``x`` the total engine ratio, ``y`` the total command-line ratio). ``--instructions`` adds
``cli_instructions=<z> engine_instructions=<e>``: the commands' and the engines' instruction
counts (valgrind), ratios that load and the machine's speed do not move. The exit code
is non-zero when agreement is not full (or a tool fails); speed never fails the run, because
a threshold on time would flake on a noisy machine.

The driver uses the standard library only; ``--worker`` mode imports the tool it times.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

FAULTGATE_VERSION = "0.4.1"
FILES = ("baseline_glm_run1.json", "baseline_glm_run2.json", "candidate_gpt.json", "candidate_qwen.json")
GOLDEN = "golden.json"
REPO = Path(__file__).resolve().parent.parent
TOOLS = ("faultgate", "stream")  # worker names; "stream" is ours


# --------------------------------------------------------------------------- worker side
# Runs inside the interpreter of the tool being timed. Imports happen before any clock
# starts: interpreter and import cost is what the command-line timing is for.

def _faultgate_engine():
    from faultgate.checks import Golden, select
    from faultgate.formats import load
    from faultgate.redact import get_redactor
    from faultgate.runner import run

    redactor = get_redactor("builtin")  # `faultgate check` masks reasons with it by default

    def engine(path: str, golden: str) -> dict[tuple[str, str], bool]:
        traces = load(path)
        checks = select(None, golden=Golden.load(golden))
        report = run(traces, checks, None, redactor)
        return {(r.trace_id, r.check): r.verdict.detected for r in report.results}

    return engine


def _stream_engine():
    from faultgate_stream.checks.expectations import Golden
    from faultgate_stream.checks.registry import select
    from faultgate_stream.cli import heap
    from faultgate_stream.pipeline import check_spans
    from faultgate_stream.read.files import read_file
    from faultgate_stream.verdict.redact import get_redactor
    from faultgate_stream.verdict.report import Report

    redactor = get_redactor("builtin")
    # The collector as `faultgate-stream check` sets it before its pass: imports frozen, young
    # collections every 10,000 objects (a pass makes no cycles: tests/cli/test_heap.py).
    # faultgate's command leaves CPython's defaults, and so does its worker.
    heap.one_pass()

    def engine(path: str, golden: str) -> dict[tuple[str, str], bool]:
        _, spans = read_file(path)
        checks = select(golden=Golden.load(golden))
        verdicts = check_spans([spans], checks, early=False)  # as `check` runs it
        # Building the report dict is counted on our side (it is where our reasons are masked);
        # faultgate masks inside run(), so each side pays for redaction once.
        out = Report([c.name for c in checks], verdicts, redactor.name).to_dict(redactor)
        return {(r["trace_id"], r["check"]): r["detected"] for r in out["results"]}

    return engine


def worker(tool: str, files: list[str], golden: str, repeats: int) -> None:
    engine = _faultgate_engine() if tool == "faultgate" else _stream_engine()
    # One untimed pass: lazy imports and regex compiles are one-off costs of the first file,
    # already counted by the command-line timing; the engine timing is the steady state.
    cells = {f: engine(f, golden) for f in files}
    times: dict[str, list[float]] = {f: [] for f in files}
    for _ in range(repeats):
        for f in files:
            t0 = time.perf_counter()
            engine(f, golden)
            times[f].append(time.perf_counter() - t0)
    # The cells let the driver check that the code it timed computed the same verdicts.
    json.dump({"times": times, "cells": {f: [[t, c, d] for (t, c), d in cells[f].items()] for f in files}},
              sys.stdout)


def profile_ours(files: list[str], golden: str, repeats: int) -> None:
    """Where our engine's time goes: stage medians timed without a profiler (cProfile inflates
    Python-level calls far more than C ones such as json.loads, so its shares alone mislead),
    then cProfile's top functions with their share of the profiled total."""
    import cProfile
    import pstats

    from faultgate_stream.checks.expectations import Golden
    from faultgate_stream.checks.registry import select
    from faultgate_stream.pipeline import check_spans
    from faultgate_stream.read.files import read_file
    from faultgate_stream.verdict.redact import get_redactor
    from faultgate_stream.verdict.report import Report

    redactor = get_redactor("builtin")
    stages: dict[str, list[float]] = {"json.loads alone (floor of any reader)": [], "read_file": [],
                                      "Golden.load + select": [], "check_spans": [], "Report.to_dict": []}
    for _ in range(repeats + 1):  # the first pass warms caches, as in worker()
        for f in files:
            t0 = time.perf_counter()
            json.loads(Path(f).read_bytes())
            t1 = time.perf_counter()
            _, spans = read_file(f)
            t2 = time.perf_counter()
            checks = select(golden=Golden.load(golden))
            t3 = time.perf_counter()
            verdicts = check_spans([spans], checks, early=False)
            t4 = time.perf_counter()
            Report([c.name for c in checks], verdicts, redactor.name).to_dict(redactor)
            t5 = time.perf_counter()
            for name, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                stages[name].append(dt)
    print("ours, per file, median ms (no profiler):")
    for name, ts in stages.items():
        print(f"  {name:<40}{statistics.median(ts[len(files):]) * 1e3:8.2f}")

    engine = _stream_engine()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(repeats):
        for f in files:
            engine(f, golden)
    prof.disable()
    stats = pstats.Stats(prof)
    rows = [(func, tt, ct) for func, (_, _, tt, ct, _) in stats.stats.items()]  # type: ignore[attr-defined]
    total = max(ct for _, _, ct in rows)  # the engine's own cumulative time: 100% = one engine call
    for title, key in (("self time", 1), ("cumulative time", 2)):
        print(f"\ncProfile, top 15 by {title} (share of {total:.2f}s profiled):")
        for func, tt, ct in sorted(rows, key=lambda r: r[key], reverse=True)[:15]:
            where = f"{Path(func[0]).name}:{func[1]}({func[2]})" if func[0] != "~" else func[2]
            print(f"  {100 * tt / total:5.1f}% self {100 * ct / total:5.1f}% cum  {where}")


# --------------------------------------------------------------------------- driver side

def fail(msg: str) -> NoReturn:
    print(f"offline bench: {msg}", file=sys.stderr)
    sys.exit(2)


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def has_faultgate(python: Path) -> bool:
    if not python.is_file():
        return False
    probe = ("import importlib.metadata as m, faultgate.runner, faultgate.cli; "
             f"raise SystemExit(m.version('faultgate') != {FAULTGATE_VERSION!r})")
    return subprocess.run([str(python), "-c", probe], capture_output=True).returncode == 0


def ensure_faultgate(venv: Path) -> Path:
    """A venv with faultgate==0.4.1, reused when it is already there. Created with
    ``python -m venv`` and filled by the venv's own pip, so it never touches ours."""
    py = venv_python(venv)
    if has_faultgate(py):
        return py
    print(f"installing faultgate=={FAULTGATE_VERSION} into {venv} ...", file=sys.stderr)
    venv.parent.mkdir(parents=True, exist_ok=True)
    # --clear: a venv left half-built by an interrupted run is rebuilt rather than trusted.
    steps = [[sys.executable, "-m", "venv", "--clear", str(venv)],
             [str(py), "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
              f"faultgate=={FAULTGATE_VERSION}"]]
    for cmd in steps:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            fail(f"cannot run {cmd[0]}: {e}")
        if r.returncode != 0:
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
            fail(f"could not install faultgate=={FAULTGATE_VERSION} into {venv}: "
                 f"`{' '.join(cmd)}` exited {r.returncode}\n{tail}")
    if not has_faultgate(py):
        fail(f"faultgate=={FAULTGATE_VERSION} installed into {venv} but does not import")
    return py


def our_python() -> Path:
    """Ours runs from the repo's venv (installed editable); else from whatever runs this script."""
    repo_py = venv_python(REPO / ".venv")
    py = repo_py if repo_py.is_file() else Path(sys.executable)
    probe = subprocess.run([str(py), "-c", "import faultgate_stream.pipeline"], capture_output=True, text=True)
    if probe.returncode != 0:
        fail(f"faultgate_stream does not import with {py}:\n{probe.stderr.strip()[-2000:]}")
    return py


def script(python: Path, name: str) -> Path:
    """The console script installed beside an interpreter (kept unresolved: a venv's python is a symlink)."""
    s = python.parent / name
    if not s.is_file():
        fail(f"no `{name}` command beside {python}")
    return s


def worker_command(python: Path, tool: str, files: list[Path], golden: Path, repeats: int) -> list[str]:
    return [str(python), str(Path(__file__).resolve()), "--worker", tool, "--repeats", str(repeats),
            "--golden", str(golden), *map(str, files)]


def run_worker(python: Path, tool: str, files: list[Path], golden: Path, repeats: int) -> dict:
    r = subprocess.run(worker_command(python, tool, files, golden, repeats), capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{tool} worker failed (exit {r.returncode}):\n{r.stderr.strip()[-3000:]}")
    return json.loads(r.stdout)


def time_cli(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if r.returncode not in (0, 1):  # both tools: 0 clean, 1 a check fired, 2 bad input
        fail(f"`{' '.join(cmd)}` exited {r.returncode}:\n{r.stderr.strip()[-3000:]}")
    return elapsed


def cli_instructions(cmd: list[str]) -> int:
    """Instructions the whole command executed, interpreter start included, counted by
    valgrind's callgrind: unlike wall time, the count does not move with this machine's
    load or speed (which changes by half between hours here), so two runs of the bench
    can be compared, not only the two tools within one run. Costs ~50x the command's time."""
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        fail(f"`valgrind ... {' '.join(cmd)}` exited {r.returncode}:\n{r.stderr.strip()[-3000:]}")
    for line in r.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip().replace(",", ""))
    fail(f"callgrind printed no instruction count for `{' '.join(cmd)}`:\n{r.stderr.strip()[-2000:]}")


def engine_instructions(python: Path, tool: str, files: list[Path], golden: Path) -> int:
    """Instructions of one steady-state pass of the tool's engine over the files: its worker
    counted with two timed passes less the same worker with one (start, imports and the
    untimed first pass cancel out). The engine's figure that load does not move; it is not
    the time ratio, since faultgate's interpreted instructions and our compiled ones do not
    take the same time each."""
    one, two = (cli_instructions(worker_command(python, tool, files, golden, n)) for n in (1, 2))
    return two - one


def report_cells(path: Path) -> dict[tuple[str, str], list[bool]]:
    """(trace_id, check) -> detected, as a list: a trace with several runs gives several rows."""
    cells: dict[tuple[str, str], list[bool]] = {}
    for r in json.loads(path.read_text(encoding="utf-8"))["results"]:
        cells.setdefault((r["trace_id"], r["check"]), []).append(bool(r["detected"]))
    return cells


def agree(theirs: dict, ours: dict) -> tuple[int, int, list[str]]:
    """Cells of faultgate's that ours matches. A cell ours lacks, or gives two answers for, is a miss."""
    matched, misses = 0, []
    for (tid, check), (want, *_) in theirs.items():
        got = ours.get((tid, check), [])
        if got and all(g == want for g in got):
            matched += 1
        else:
            misses.append(f"{tid[:16]} {check}: faultgate {want}, ours {got or 'missing'}")
    return matched, len(theirs), misses


def ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b > 0 else "n/a"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds of both workers (default 5)")
    p.add_argument("--repeats", type=int, default=5, help="passes over the four files per worker (default 5)")
    p.add_argument("--corpus", type=Path, default=None,
                   help="folder holding the four trace files and golden.json "
                        "(default: ../shared/corpus/faultgate-0.4.1/examples/gate beside the repo)")
    p.add_argument("--keep-venv", type=Path, default=None, metavar="PATH",
                   help="venv for faultgate, created if missing and kept "
                        "(default: ~/.cache/faultgate-stream-bench/faultgate-0.4.1)")
    # worker mode: internal, started by the driver with each tool's interpreter
    p.add_argument("--instructions", action="store_true",
                   help="also count the instructions of each tool's command on each file and of each "
                        "engine's pass over the four (valgrind's callgrind; load-proof, ~4 min); adds "
                        "cli_instructions=<x> engine_instructions=<y> to the RESULT line")
    p.add_argument("--profile", action="store_true",
                   help="instead of comparing, show where OUR engine's time goes (stage timings and cProfile)")
    p.add_argument("--worker", choices=TOOLS, help=argparse.SUPPRESS)
    p.add_argument("--golden", help=argparse.SUPPRESS)
    p.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rounds < 1 or args.repeats < 1:
        p.error("--rounds and --repeats must be at least 1")

    if args.worker:
        if args.profile:
            profile_ours(args.files, args.golden, args.repeats)
        else:
            worker(args.worker, args.files, args.golden, args.repeats)
        return 0

    corpus = (args.corpus or REPO.parent / "shared/corpus/faultgate-0.4.1/examples/gate").resolve()
    files = [corpus / f for f in FILES]
    golden = corpus / GOLDEN
    missing = [str(f) for f in [*files, golden] if not f.is_file()]
    if missing:
        fail("missing input(s): " + ", ".join(missing) + " (pass --corpus DIR)")

    if args.instructions and shutil.which("valgrind") is None:
        fail("--instructions needs valgrind on PATH (apt-get install valgrind)")
    if args.profile:
        # ours only, in our interpreter: faultgate is not needed to see where our time goes
        cmd = [str(our_python()), str(Path(__file__).resolve()), "--worker", "stream", "--profile",
               "--repeats", str(args.repeats), "--golden", str(golden), *map(str, files)]
        return subprocess.run(cmd).returncode

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = (args.keep_venv or cache / "faultgate-stream-bench" / f"faultgate-{FAULTGATE_VERSION}").expanduser()
    pythons = {"faultgate": ensure_faultgate(venv), "stream": our_python()}
    commands = {"faultgate": script(pythons["faultgate"], "faultgate"),
                "stream": script(pythons["stream"], "faultgate-stream")}

    # 1. engine, in-process. The tool that starts each round alternates (A B, B A, ...): whichever
    # goes first or second would otherwise always meet the same phase of the machine's noise.
    samples: dict[str, dict[str, list[float]]] = {t: {f.name: [] for f in files} for t in TOOLS}
    totals: dict[str, list[float]] = {t: [] for t in TOOLS}
    cells_inproc: dict[str, dict] = {}
    for rnd in range(args.rounds):
        for tool in (TOOLS if rnd % 2 == 0 else TOOLS[::-1]):
            out = run_worker(pythons[tool], tool, files, golden, args.repeats)
            per_file = [out["times"][str(f)] for f in files]
            for f, ts in zip(files, per_file):
                samples[tool][f.name].extend(ts)
            totals[tool].extend(sum(rep) for rep in zip(*per_file))  # one total per pass over the four files
            cells_inproc[tool] = out["cells"]
        print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)

    # 2. the whole command line, once per tool per file in each round, interleaved like the
    # engines (the tool that goes first alternates); each file's figure is the median of its
    # rounds. The last round's JSON reports are what agreement is judged on, since that is
    # what users of either tool read.
    cli_runs: dict[str, dict[str, list[float]]] = {t: {f.name: [] for f in files} for t in TOOLS}
    matched = total = 0
    misses: list[str] = []
    inproc_matched = 0
    with tempfile.TemporaryDirectory(prefix="fgs-bench-") as tmp:
        for rnd in range(args.rounds):
            for i, f in enumerate(files):
                for tool in (TOOLS if (rnd + i) % 2 == 0 else TOOLS[::-1]):
                    report = Path(tmp) / f"{tool}-{f.stem}.json"
                    cmd = [str(commands[tool]), "check", str(f), "--golden", str(golden), "--json", str(report)]
                    cli_runs[tool][f.name].append(time_cli(cmd))
        for f in files:
            reports = {tool: Path(tmp) / f"{tool}-{f.stem}.json" for tool in TOOLS}
            m, n, miss = agree(report_cells(reports["faultgate"]), report_cells(reports["stream"]))
            matched, total = matched + m, total + n
            misses += [f"{f.name}: {x}" for x in miss]
            # the timed engines must have computed the same verdicts as the commands
            fg_in = {(t, c): [d] for t, c, d in cells_inproc["faultgate"][str(f)]}
            ours_in: dict = {}
            for t, c, d in cells_inproc["stream"][str(f)]:
                ours_in.setdefault((t, c), []).append(d)
            inproc_matched += agree(fg_in, ours_in)[0]

        # 3. optional: the same commands' instruction counts, once each (they do not vary),
        # and each engine's for one pass over the four files
        instructions: dict[str, dict[str, int]] = {t: {} for t in TOOLS}
        engine_counted = {t: engine_instructions(pythons[t], t, files, golden) for t in TOOLS} if args.instructions else {}
        if args.instructions:
            for f in files:
                for tool in TOOLS:
                    report = Path(tmp) / f"{tool}-{f.stem}-counted.json"
                    cmd = [str(commands[tool]), "check", str(f), "--golden", str(golden), "--json", str(report)]
                    instructions[tool][f.name] = cli_instructions(cmd)

    cli = {t: {name: statistics.median(v) for name, v in cli_runs[t].items()} for t in TOOLS}

    # ---- output
    med = {t: {name: statistics.median(v) for name, v in samples[t].items()} for t in TOOLS}
    tot = {t: statistics.median(totals[t]) for t in TOOLS}
    n_samples = args.rounds * args.repeats
    print(f"faultgate {FAULTGATE_VERSION} vs faultgate-stream · {corpus}")
    print(f"engine in-process: median of {n_samples} runs per file per tool "
          f"({args.rounds} interleaved rounds x {args.repeats} repeats); ratio = faultgate / ours\n")
    w = max(len(f.name) for f in files) + 2
    head = f"{'file':<{w}}{'faultgate ms':>13}{'ours ms':>10}{'engine':>9}   {'faultgate s':>11}{'ours s':>9}{'CLI wall':>10}"
    print(head)
    print("-" * len(head))
    for f in files:
        a, b = med["faultgate"][f.name], med["stream"][f.name]
        ca, cb = cli["faultgate"][f.name], cli["stream"][f.name]
        print(f"{f.name:<{w}}{a * 1e3:>13.2f}{b * 1e3:>10.2f}{ratio(a, b):>9}   {ca:>11.3f}{cb:>9.3f}{ratio(ca, cb):>10}")
    ca, cb = sum(cli["faultgate"].values()), sum(cli["stream"].values())
    print("-" * len(head))
    print(f"{'total':<{w}}{tot['faultgate'] * 1e3:>13.2f}{tot['stream'] * 1e3:>10.2f}"
          f"{ratio(tot['faultgate'], tot['stream']):>9}   {ca:>11.3f}{cb:>9.3f}{ratio(ca, cb):>10}")
    print("\nengine = read + every rule and golden check (+ report), in-process, steady state, with the collector\n"
          "         each command sets (ours: cli/heap.one_pass; faultgate: CPython's defaults)")
    print(f"CLI wall = `<tool> check FILE --golden G --json X`, median of {args.rounds} interleaved runs each, "
          "including interpreter start")
    print(f"\nagreement (detected, per trace x check in faultgate's report): {matched}/{total}"
          f"  · in-process engines: {inproc_matched}/{total}")
    for m in misses[:20]:
        print(f"  mismatch {m}")
    if len(misses) > 20:
        print(f"  ... and {len(misses) - 20} more")
    counted = ""
    if args.instructions:
        print("\nCLI instructions (callgrind, the whole command once per file; ratio = faultgate / ours):")
        for f in files:
            a, b = instructions["faultgate"][f.name], instructions["stream"][f.name]
            print(f"  {f.name:<{w}}{a / 1e6:>10,.1f} M{b / 1e6:>10,.1f} M{ratio(a, b):>8}")
        a, b = sum(instructions["faultgate"].values()), sum(instructions["stream"].values())
        print(f"  {'total':<{w}}{a / 1e6:>10,.1f} M{b / 1e6:>10,.1f} M{ratio(a, b):>8}")
        ea, eb = engine_counted["faultgate"], engine_counted["stream"]
        print(f"  {'engine, one pass over the four':<{w}}{ea / 1e6:>10,.1f} M{eb / 1e6:>10,.1f} M{ratio(ea, eb):>8}")
        counted = f" cli_instructions={a / b:.2f} engine_instructions={ea / eb:.2f}"
    speedup = tot["faultgate"] / tot["stream"]
    print(f"RESULT offline_speedup={speedup:.1f} agreement={matched}/{total} cli_speedup={ca / cb:.1f}{counted}")
    return 0 if matched == total and inproc_matched == total and total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
