"""``faultgate-stream check FILE...``: faultgate's table, summary line, JSON report and exit codes."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from faultgate_stream.checks.base import Check, each
from faultgate_stream.checks.expectations import Golden, Outcomes
from faultgate_stream.checks.registry import select
from faultgate_stream.cli import heap
from faultgate_stream.cli.terminal import run_labels
from faultgate_stream.model.errors import InputError
from faultgate_stream.model.verdict import RunVerdict, Severity
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import FORMATS, read_files
from faultgate_stream.verdict.redact import get_redactor
from faultgate_stream.verdict.report import Report

EXIT_CLEAN, EXIT_FIRED, EXIT_BAD_INPUT = 0, 1, 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", help="trace files: OTLP/JSON or protobuf, or a vendor export (see --format); "
                                            "OTLP/JSON log files (resourceLogs) add the GenAI content of their log events")
    p.add_argument("--golden", help="golden.json: {scenario key or prompt: expected answer}; enables wrong_answer and truncation")
    p.add_argument("--outcomes", help="outcomes.json: {scenario key or prompt: true | false}; enables the outcome check")
    p.add_argument("--policy", help="policy file (faultgate's keys, JSON or YAML); replaces the default policy")
    p.add_argument("--spec", help="trajectory spec (luckrate's keys, JSON or YAML); adds the trajectory.* checks")
    p.add_argument("--check", help="comma-separated subset of checks (default: all that apply)")
    add_own_checks(p)
    p.add_argument("--format", default="auto", choices=FORMATS, help="trace format (default: detect)")
    p.add_argument("--json", help="also write the full report to this path")
    p.add_argument("--redact", default="builtin", choices=("builtin", "off"),
                   help="mask PII and secrets in every reason written out (default builtin)")
    p.add_argument("--judge", help="also ask the judge checks (wrong_direction) of this judge: "
                                   "openai:http(s)://HOST[:PORT]/PATH/MODEL, any OpenAI-compatible chat endpoint "
                                   "(a key, if it needs one, from FAULTGATE_JUDGE_API_KEY); what it reads is masked "
                                   "unless --redact off")
    p.add_argument("--judge-timeout", type=float, default=30.0, help="seconds to wait for each answer (default 30)")
    p.add_argument("--band", help="band.json from `baseline`: gate PASS / FAIL / INCONCLUSIVE against it "
                                  "(exit 1 only on FAIL)")
    p.add_argument("--sessions", help="sessions.yaml: group runs by session.id / gen_ai.conversation.id and judge "
                                      "each session (the service's `sessions:` settings: budgets, repeated_task, "
                                      "monotonic, idle_timeout, end_attribute)")
    p.add_argument("--markdown", help="write a PR summary (Markdown) to this path")
    p.add_argument("--html", help="write the report as one self-contained HTML page to this path: the summary "
                                  "(and the gate's plot with --band), then every run's steps as a timeline with "
                                  "the step where each check fired marked")
    p.add_argument("--audit", help="write verdict.json, failing_traces.json and repro.sh to this directory")


def add_own_checks(p: argparse.ArgumentParser) -> None:
    """``--plugin`` and ``--rules``: checks of your own beside the built-ins (docs/writing-checks.md)."""
    p.add_argument("--plugin", action="append", default=[], metavar="PLUGIN",
                   help="a plug-in check: module:Class, or the name an installed package gives it in the "
                        "faultgate_stream.checks entry-point group (repeatable)")
    p.add_argument("--rules", help="a rules file: CEL expressions over a span or a run, one check each (YAML or JSON)")


def checks_from_args(args: argparse.Namespace) -> list[Check]:
    """The checks ``--golden``, ``--outcomes``, ``--policy``, ``--spec`` and ``--check`` ask
    for (``baseline`` builds its runs' checks the same way). Raises ``InputError``."""
    golden = Golden.load(args.golden) if args.golden else None
    outcomes = Outcomes.load(args.outcomes) if args.outcomes else None
    names = [n.strip() for n in args.check.split(",") if n.strip()] if args.check else None
    policy = store = None
    if args.policy:
        from faultgate_stream.checks.policy import load_policy
        from faultgate_stream.checks.window_store import WindowStore

        policy = load_policy(args.policy)
        # one store for every run of this command: windowed budgets count across its runs
        # (a file holding several runs of a session, in time order) and nothing else
        store = WindowStore()
    checks = select(names, golden=golden, outcomes=outcomes, policy=policy, store=store)
    if args.spec:
        from faultgate_stream.checks.trajectory import checks_for, load_spec
        checks += checks_for(load_spec(args.spec))
    plugins, rules = getattr(args, "plugin", None) or [], getattr(args, "rules", None)
    if plugins or rules:
        from faultgate_stream.verdict.ruleset import own_checks, unique
        checks += own_checks(plugins, rules or "")
        unique(checks)
    return checks


def table(report: Report) -> str:
    """faultgate's table: one row per run, labelled by its trace id's first 12 digits where
    those tell the rows apart, else by as much of the id as does (``terminal.run_labels``)."""
    labels = run_labels(v.key for v in report.verdicts)
    width = max(len("trace"), *map(len, labels.values())) if labels else len("trace")
    head = f"{'trace':<{width}}  " + "  ".join(f"{c:<16}" for c in report.checks)
    rows = [head, "-" * len(head)]
    for v in report.verdicts:
        cells = [("undecided" if r.undecided else f"{('FAIL' if r.fired else 'ok'):<5}{r.confidence:.2f}").ljust(16)
                 for r in v.results]
        rows.append(f"{labels[v.key]:<{width}}  " + "  ".join(cells))
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    heap.one_pass()
    t0 = time.perf_counter()
    judge = None
    try:
        checks = checks_from_args(args)
        redact = get_redactor(args.redact)
        if args.judge:
            from faultgate_stream.judge.check import JudgeCheck
            from faultgate_stream.judge.contract import QUESTIONS
            from faultgate_stream.judge.openai import get_judge
            judge = get_judge(args.judge, timeout=args.judge_timeout)
            checks += [JudgeCheck(judge, q, redact) for q in QUESTIONS.values()]
        band = None
        if args.band:
            from faultgate_stream.gate.band import Band
            band = Band.load(args.band)
        sessions_config = load_sessions(args.sessions) if args.sessions else None
        found = read_files(args.traces, args.format)
        profile = None
        if band is not None or sessions_config is not None:  # drift and sessions read the runs' profiles
            from faultgate_stream.verdict.profile import Profiler
            profile = (Profiler(sessions_config.end_attribute, sessions_config.monotonic)
                       if sessions_config is not None else Profiler())
        timelines: dict = {}
        verdicts = check_spans([f.spans for f in found], checks, [f.contents for f in found], early=False,
                               profile=profile, seen=keep_timelines(timelines) if args.html else None)
    except (InputError, ValueError) as e:
        print(f"faultgate-stream: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if judge is not None:
            judge.close()
    report = Report([c.name for c in each(checks)], verdicts, redact.name if redact else "off",
                    judge.name if judge is not None else "none", timelines)
    elapsed = time.perf_counter() - t0
    print(table(report))
    fired = ", ".join(f"{k}={v}" for k, v in report.fired.items())
    print(f"\n{len(report.failed_traces)}/{len(report.trace_ids)} traces failed · {fired} · judge {report.judge} · {elapsed:.1f}s")
    outcome = report.outcome()
    if outcome is not None:
        rate = (f"{outcome['true']}/{outcome['judged']} true ({outcome['outcome_rate']:.2f})"
                if outcome["judged"] else "no scenario has an outcome")
        print(f"outcome: {rate} · {outcome['missing']} scenario(s) without an outcome, not judged · "
              f"structural clean rate {outcome['structural_clean_rate']:.2f}")
        luck = "undefined (no run passed)" if outcome["luck_rate"] is None else f"{outcome['luck_rate']:.0%}"
        print(f"luck rate {luck} · {outcome['lucky']} of {outcome['passed']} passing runs took a path that was not clean")
    undecided = report.undecided_runs
    if undecided:
        # Not a failure (exit 0 unless a check fired), but never silently clean: the runs
        # whose content was not captured are named, with what was missing.
        first = undecided[0].undecided[0]
        label = run_labels(v.key for v in report.verdicts)[undecided[0].key]
        print(f"warning: {len(undecided)}/{len(report.verdicts)} run(s) undecided: a check could not see its input "
              f"(e.g. {label} {first.check}: {redact(first.reason) if redact else first.reason})",
              file=sys.stderr)
    sessions = None
    if sessions_config is not None:
        from faultgate_stream.sessions.offline import decide_sessions

        sessions = decide_sessions(verdicts, sessions_config)
        for line in session_lines(sessions, redact):
            print(line)
    gate = drift = None
    drift_text: list[str] = []
    if band is not None:
        from faultgate_stream.cli import gate_report
        from faultgate_stream.gate.decide import decide
        from faultgate_stream.gate.runs import gate_run

        gate = decide(band, [gate_run(v) for v in verdicts], report.checks)
        for line in gate_report.lines(gate):
            print(line)
        for w in gate.warnings:
            print(f"warning: {w}", file=sys.stderr)
        from faultgate_stream.gate.drift import compare_verdicts
        drift = compare_verdicts(band.trajectories, [(v.agent, v.agent_version, v.profile.shape) for v in verdicts])
        drift_text = gate_report.drift_lines(drift)
        for line in drift_text:
            print(line)
    code = gate_exit(gate) if gate is not None else (EXIT_FIRED if gate_fails(verdicts) or any(
        r.severity is Severity.HARD for s in sessions or () for r in s.fired) else EXIT_CLEAN)
    if args.json:
        try:
            doc = report.to_dict(redact)
            if gate is not None:
                doc["gate"] = masked_gate(gate, redact)
            if sessions is not None:
                doc["sessions"] = [session_json(s, redact) for s in sessions]
            if drift is not None:
                doc["drift"] = [{"agent": a, "version": ver, **r.to_json()} for a, ver, r in drift]
            write_text(args.json, json.dumps(doc, indent=1))
        except OSError as e:
            # an output that could not be written is a usage error: exit 1 would read as "a check fired"
            print(f"faultgate-stream: cannot write {args.json}: {e.strerror or e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"report written to {args.json}")
    if args.markdown or args.audit:
        if not write_summaries(args, report, gate, code, redact, drift_text):
            return EXIT_BAD_INPUT
    if args.html:
        from faultgate_stream.verdict.html.page import render
        try:
            write_text(args.html, render(report, redact, masked_gate(gate, redact) if gate is not None else None))
        except OSError as e:
            print(f"faultgate-stream: cannot write {args.html}: {e.strerror or e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"HTML report written to {args.html}")
    return code


def load_sessions(path: str):
    """The ``sessions:`` settings from a YAML file (the mapping itself, or a service config
    that holds one). Raises ``InputError`` naming each bad key."""
    import yaml

    from faultgate_stream.config import _build
    from faultgate_stream.sessions.config import SessionsConfig

    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f) or {}
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    except yaml.YAMLError as e:
        raise InputError(f"{path}: not valid YAML ({e})") from None
    if isinstance(raw, dict) and isinstance(raw.get("sessions"), dict):
        raw = raw["sessions"]
    if isinstance(raw, dict):
        raw = {"enabled": True, **raw}
    problems: list[str] = []
    cfg = _build(SessionsConfig, raw, "sessions", problems)
    if problems:
        raise InputError(f"{path}: " + "; ".join(problems))
    return cfg


def session_lines(sessions, redact) -> list[str]:
    mask = redact or (lambda s: s)
    out = []
    for s in sessions:
        out.append(f"session {mask(s.session_id)} · {mask(s.agent)} · {len(s.runs)} run(s) · {s.verdict} · {s.end.value}")
        out += [f"  {r.check}: {'FAIL' if r.fired else 'undecided'}: {mask(r.reason)}"
                for r in s.results if r.fired or r.undecided]
    failed = sum(s.verdict == "failed" for s in sessions)
    out.append(f"{failed}/{len(sessions)} sessions failed")
    return out


def session_json(s, redact) -> dict:
    mask = redact or (lambda t: t)
    return {"session_id": mask(s.session_id), "agent": mask(s.agent), "verdict": s.verdict, "end": s.end.value,
            "runs": [str(k) for k in s.runs], "tokens": s.tokens, "cost_usd": s.cost_usd,
            "results": [{"check": r.check, "fired": r.fired, "undecided": r.undecided, "severity": r.severity.value,
                         "reason": mask(r.reason)} for r in s.results]}


def keep_timelines(into: dict):
    """What ``--html`` draws of each run, kept by run id as the runs complete."""
    from faultgate_stream.verdict.timeline import timeline

    def seen(run) -> None:
        into[str(run.key)] = timeline(run)

    return seen


def write_text(path: str, text: str) -> None:
    """Write an output file, making its directory. (os, not pathlib: pathlib's import is
    ~4% of the command's instructions, and this is all `check` needed it for.)"""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def gate_exit(gate) -> int:
    """With a band, only a gate FAIL fails the build: PASS and INCONCLUSIVE exit 0."""
    return EXIT_FIRED if gate.verdict == "FAIL" else EXIT_CLEAN


def masked_gate(gate, redact) -> dict:
    from faultgate_stream.verdict.redact import safe_key

    doc = gate.to_json()
    for k in ("regressions", "missing"):
        doc[k] = [safe_key(s, redact) for s in doc[k]]
    return doc


def write_summaries(args: argparse.Namespace, report: Report, gate, code: int, redact,
                    drift: list[str] | None = None) -> bool:
    """``--markdown`` and ``--audit``; False (after saying why) when one cannot be written."""
    from faultgate_stream.cli import gate_report
    from faultgate_stream.gate import audit, summary

    mask = redact if redact else (lambda text: text)
    verdict = gate.verdict if gate is not None else ("FAIL" if code == EXIT_FIRED else "PASS")
    cmd = gate_report.repro(args)
    target = ""
    try:
        if args.markdown:
            target = args.markdown
            write_text(args.markdown, summary.markdown(verdict, report.verdicts, report.fired, gate, cmd, mask,
                                                       drift or []))
        if args.audit:
            target = args.audit
            audit.write(args.audit, verdict=verdict, exit_code=code, inputs=gate_report.inputs(args),
                        verdicts=report.verdicts, gate=gate, repro=cmd, mask=mask)
    except OSError as e:
        print(f"faultgate-stream: cannot write {target}: {e.strerror or e}", file=sys.stderr)
        return False
    return True


def gate_fails(verdicts: list[RunVerdict]) -> bool:
    """luckrate's gate on faultgate's exit code: any hard finding fails; a soft one (a
    budget, repeated work) fails when it fired on most runs of its scenario, since one run
    over budget is variance; a warning never fails a build (it counts in Luck Rate)."""
    if any(r.severity is Severity.HARD for v in verdicts for r in v.fired):
        return True
    runs: dict[str, list[bool]] = {}
    for v in verdicts:
        runs.setdefault(v.scenario, []).append(any(r.severity is Severity.SOFT for r in v.fired))
    return any(sum(soft) * 2 > len(soft) for soft in runs.values())
