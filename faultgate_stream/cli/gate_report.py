"""The gate's part of ``check --band``: terminal lines in faultgate's words, and the
``--markdown`` / ``--audit`` files with the command that reproduces them."""
from __future__ import annotations

import argparse
import shlex

from faultgate_stream.gate.decide import INCONCLUSIVE, GateResult

# faultgate lists the first few regressions on the terminal; the JSON report has them all.
SHOWN_REGRESSIONS = 7


def lines(g: GateResult) -> list[str]:
    rate = "n/a" if g.clean_rate is None else f"{g.clean_rate:.2f}"
    p = "n/a" if g.p_value is None else f"{g.p_value:.3f}"
    out = [f"gate: {g.verdict} · clean rate {rate} vs band [{g.band.min:.2f}, {g.band.max:.2f}] from "
           f"{g.band.runs} baseline runs · fail below {g.fail_threshold:.2f} · p={p}"]
    if g.undecided:
        out.append(f"undecided: {g.undecided} run(s) the checks could not judge, left out of the clean rate")
    if g.policy_violations:
        out.append(f"policy violation in {len(g.policy_violations)} trace(s) (hard block)")
    if g.regressions:
        shown = ", ".join(g.regressions[:SHOWN_REGRESSIONS])
        more = ", ..." if len(g.regressions) > SHOWN_REGRESSIONS else ""
        out.append(f"regressions (clean in every baseline, not now): {shown}{more}")
    if g.missing:
        out.append(f"missing: {len(g.missing)} band scenario(s) not in this run")
    if g.verdict == INCONCLUSIVE and g.required_n is not None:
        out.append(f"inconclusive: a drop of {g.drop:.2f} needs {g.required_n} scenarios to tell from noise "
                   f"(alpha 0.05, power 0.80) · run {g.additional_n} more")
    return out


def drift_lines(results) -> list[str]:
    """``drift: PASS · agent 1.2 · 60 runs vs 90 baseline runs · tools p=0.412, steps ...``,
    one per (agent, version), then what moved most where it drifted."""
    from faultgate_stream.gate.drift import DRIFT, describe_moved

    out = []
    for agent, version, r in results:
        head = f"drift: {r.verdict} · {agent} {version or 'unknown'} · {r.window_runs} runs vs {r.baseline_runs} baseline runs"
        if r.why:
            out.append(f"{head} · {r.why}")
            continue
        ps = ", ".join(f"{d.dimension} p={d.p_value:.3f}" for d in r.tested)
        out.append(f"{head} · {ps} (each tested at {r.threshold:.3g})")
        if r.verdict == DRIFT:
            out.append("drift: moved most: " + "; ".join(describe_moved(r)))
    return out


def inputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(role, path) of every file the verdict depends on."""
    out = [("traces", t) for t in args.traces]
    for role in ("golden", "outcomes", "policy", "spec", "band", "sessions"):
        path = getattr(args, role, None)
        if path:
            out.append((role, path))
    return out


def repro(args: argparse.Namespace) -> str:
    cmd = ["faultgate-stream", "check", *args.traces]
    for flag in ("golden", "outcomes", "policy", "spec", "check", "rules", "band", "sessions"):
        value = getattr(args, flag, None)
        if value:
            cmd += [f"--{flag}", value]
    for plugin in getattr(args, "plugin", None) or ():
        cmd += ["--plugin", plugin]
    if args.format != "auto":
        cmd += ["--format", args.format]
    if args.redact != "builtin":
        cmd += ["--redact", args.redact]
    return shlex.join(cmd)
