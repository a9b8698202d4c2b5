"""The README's run command on a fresh clone, timed step by step: what a new user waits for
before the demo's last verdict (issue 41). Not a test: the figure moves with the machine's
load, so it is measured here and written into the README with the load it was taken at.

    python bench/first_run.py            a fresh clone of this checkout's HEAD; pip's and
                                         cargo's download caches as they are on this machine
    python bench/first_run.py --cold     nothing downloaded before: a fresh CARGO_HOME (crates
                                         from crates.io) and a fresh pip cache, no PIP_FIND_LINKS
    python bench/first_run.py --wheel    also the wheel route: scripts/build_wheel.sh's wheel
                                         (built first, not timed: "a prebuilt wheel") installed
                                         into a fresh venv, then the same demo
    python bench/first_run.py --nice -15 at a raised CPU priority (root only): on a machine
                                         other builds keep busy, the command then gets most of
                                         the cores for its minute or two, as on an idle machine
                                         (the disk and the network stay shared). The command
                                         runs in a session of its own whose autogroup gets the
                                         priority: with the kernel's autogroup on, nice alone
                                         only ranks a process within its own session.

It runs the README's `Run` line exactly, in the clone, with the demo's ports moved to free
ones (as the demo itself does when they are taken), and prints each setup step's time as
setup.sh reported it, the demo's time, the total and the 1-minute load average before and
after; the last line is

    RESULT first_run_s=<wall> first_run_cpu_s=<..> setup_s=<..> build_s=<..> demo_s=<..>
           [wheel_s=<..> wheel_cpu_s=<..>] load=<before>

The CPU seconds are the steadier figure on a shared machine: the wall time of an idle
2-core machine lies between half of them (all of it spread over both cores) and all of them.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DONE = re.compile(r"^setup: (?P<label>.+): done in (?:(?P<m>\d+)m)?(?P<s>\d+)s$")
PORTS = {"FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": "127.0.0.1:0",
         "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": "127.0.0.1:0",
         "FAULTGATE_STREAM__METRICS__ENDPOINT": "127.0.0.1:0"}


def readme_command(label: str) -> str:
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith(label):
            return re.search(r"`([^`]+)`\s*$", line).group(1)
    raise SystemExit(f"no {label!r} line in README.md")


def load() -> float:
    return os.getloadavg()[0]


def cpu() -> float:
    """CPU seconds (user + system) of this process's finished children and theirs."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


NICE = 0  # --nice: the command's session's priority


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, list[tuple[float, str]], float, float]:
    """Run ``argv``, echoing its output as it comes; (status, [(seconds since start, line)],
    wall seconds, CPU seconds). The CPU time moves little with the machine's load, the wall
    time a lot: on an idle 2-core machine the wall time lies between CPU/2 and CPU."""
    started, cpu0 = time.monotonic(), cpu()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True) as p:
        if NICE:
            autogroup = Path(f"/proc/{p.pid}/autogroup")
            if autogroup.exists():
                autogroup.write_text(str(NICE))
        for line in p.stdout:
            at = time.monotonic() - started
            lines.append((at, line.rstrip("\n")))
            print(f"{at:7.1f}s  {line}", end="", flush=True)
    return p.returncode, lines, time.monotonic() - started, cpu() - cpu0


def first_run(work: Path, cold: bool) -> dict[str, float]:
    clone = work / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = {**os.environ, **PORTS}
    env.pop("VIRTUAL_ENV", None)
    if cold:
        env.update(CARGO_HOME=str(work / "cargo-home"), PIP_CACHE_DIR=str(work / "pip-cache"))
        env.pop("PIP_FIND_LINKS", None)
    command = readme_command("Run ")
    print(f"$ {command}   (in a fresh clone of {ROOT} at {clone}{', nothing cached' if cold else ''})")
    code, lines, total, used = timed(["bash", "-c", command], clone, env)
    if code != 0:
        raise SystemExit(f"the run command failed (exit {code})")
    steps = {}
    for _, line in lines:
        m = DONE.match(line)
        if m:
            steps[m["label"]] = int(m["m"] or 0) * 60 + int(m["s"])
    ready = next(at for at, line in lines if line.startswith("setup: ready in"))
    build = next((s for label, s in steps.items() if label.startswith("building the compiled core")), 0.0)
    return {"first_run_s": total, "first_run_cpu_s": used, "setup_s": ready, "build_s": build,
            "demo_s": total - ready, **{f"step: {k}": v for k, v in steps.items()}}


def wheel_run(work: Path) -> tuple[float, float]:
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build_wheel.sh"), "--out", str(work / "dist")],
                           capture_output=True, text=True)
    if built.returncode != 0:
        raise SystemExit(f"scripts/build_wheel.sh failed:\n{built.stderr[-3000:]}")
    wheel = built.stdout.strip().splitlines()[-1]
    venv = work / "wheel-venv"
    command = (f"{sys.executable} -m venv {venv} && {venv}/bin/pip install --quiet --disable-pip-version-check "
               f"{wheel} && {venv}/bin/faultgate-stream demo")
    print(f"$ {command}")
    code, _, total, used = timed(["bash", "-c", command], work, {**os.environ, **PORTS})
    if code != 0:
        raise SystemExit(f"the wheel route failed (exit {code})")
    return total, used


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cold", action="store_true", help="a fresh CARGO_HOME and pip cache: every download made")
    ap.add_argument("--wheel", action="store_true", help="also time the wheel route")
    ap.add_argument("--nice", type=int, default=0, help="change this process's (and so the command's) CPU "
                                                        "priority by this much; negative raises it (root only)")
    args = ap.parse_args()
    if args.nice:
        global NICE
        NICE = args.nice
        print(f"priority: nice {os.nice(args.nice)}, and the command's session's autogroup")
    before = load()
    with tempfile.TemporaryDirectory(prefix="first-run-") as tmp:
        work = Path(tmp)
        figures = first_run(work, args.cold)
        if args.wheel:
            figures["wheel_s"], figures["wheel_cpu_s"] = wheel_run(work)
    after = load()
    print(f"\n{'what':<90} {'seconds':>8}")
    for k, v in figures.items():
        print(f"{k:<90} {v:8.1f}")
    print(f"load average (1 min, {os.cpu_count()} cores): {before:.1f} before, {after:.1f} after")
    result = " ".join(f"{k}={v:.0f}" for k, v in figures.items() if not k.startswith("step: "))
    print(f"RESULT {result} load={before:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
