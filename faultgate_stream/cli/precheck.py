"""``faultgate-stream precheck FILE``: the input problems that otherwise surface as a
confusing verdict. Errors make the file unusable (exit 2); warnings do not block.

It also says what the checks will read: tool steps found, tool spans recognised only by
their name, spans that carry tool attributes but are not read as steps, spans of agent
work written in a convention no reader knows (model/unread.py: the checks that need them
will be undecided), and exports that mix native tool spans with OpenInference LLM spans.
"""
from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.pipeline import assemble_runs
from faultgate_stream.read.conventions import OI_KIND
from faultgate_stream.read.files import FORMATS, read_file

DEFAULT_SAMPLE = 5
TOOL_ATTRS = ("gen_ai.tool.name", "gen_ai.tool.call.id", "tool.name")


@dataclass(frozen=True)
class Issue:
    level: str  # "error" | "warning"
    trace_id: str
    message: str


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", help="a trace file (any format check reads)")
    p.add_argument("--format", default="auto", choices=FORMATS)
    p.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help=f"traces to inspect (default {DEFAULT_SAMPLE}; 0 = all)")


def span_issues(tid: str, spans: list[SpanRecord]) -> list[Issue]:
    """Problems in the raw spans of one trace, before duplicates are dropped."""
    out: list[Issue] = []
    short = tid[:12]
    counts = Counter(s.span_id for s in spans)
    out += [Issue("error", short, f"duplicate span id {sid}") for sid in sorted(k for k, n in counts.items() if n > 1)]
    ids = set(counts)
    roots = [s for s in spans if not s.parent_id]
    if not roots:
        out.append(Issue("warning", short, "no root span in the export: prompt and answer are read from child spans"))
    elif len(roots) > 1:
        out.append(Issue("warning", short, f"{len(roots)} root spans; each top-level agent is checked as its own run"))
    dangling = [s for s in spans if s.parent_id and s.parent_id not in ids]
    if dangling:
        parents = sorted({s.parent_id or "" for s in dangling})
        out.append(Issue("warning", short, f"{len(dangling)} span(s) point at {len(parents)} parent(s) not in the "
                                           f"export ({', '.join(parents[:3])})"))
    for s in spans:
        if s.start_ns <= 0:
            out.append(Issue("error", short, f"span {s.span_id} ({s.name}): missing start time"))
        elif s.end_ns and s.end_ns < s.start_ns:
            out.append(Issue("error", short, f"span {s.span_id} ({s.name}): ends before it starts"))
    if roots and roots[0].start_ns > 0:
        early = [s for s in spans if 0 < s.start_ns < roots[0].start_ns]
        if early:
            out.append(Issue("warning", short, f"{len(early)} span(s) start before the root span"))
    by_name = [s for s in spans if s.is_tool and s.operation is None]
    if by_name:
        out.append(Issue("warning", short, f"{len(by_name)} tool span(s) recognised by span name only; "
                                           "set gen_ai.operation.name = execute_tool"))
    if any(s.is_tool and OI_KIND not in s.attrs for s in spans) and any(OI_KIND in s.attrs for s in spans):
        out.append(Issue("warning", short, "mixed export: native execute_tool spans next to OpenInference spans; "
                                           "steps are read from the tool spans, not from LLM messages"))
    return out


def run_issues(run: Run) -> list[Issue]:
    """Problems in what the checks will read from one run."""
    out: list[Issue] = []
    short = run.trace_id[:12]
    for st in run.steps:
        if not st.tool or st.tool == "unknown":
            out.append(Issue("error", short, f"step {st.index}: tool call without a name"))
    read = {st.span_id for st in run.steps}
    unread = [s for s in run.spans if s.span_id not in read and s.parent_id and any(k in s.attrs for k in TOOL_ATTRS)]
    if unread:
        names = ", ".join(sorted({s.name for s in unread})[:3])
        out.append(Issue("warning", short, f"{len(unread)} span(s) carry tool attributes but are not read as tool "
                                           f"steps ({names}); set gen_ai.operation.name = execute_tool"))
    for what, why in run.unread.reasons.items():
        out.append(Issue("warning", short, f"{why}: checks that read the run's {what.replace('_', ' ')} will be "
                                           "undecided"))
    if not run.has_content:
        out.append(Issue("warning", short, "no content attributes (prompt, answer, tool arguments or results): "
                                           "rules see structure only"))
    if not run.prompt.strip():
        out.append(Issue("warning", short, "no prompt: scenario keys fall back to a hash of the empty string "
                                           "unless faultgate.scenario is set"))
    if not run.answer.strip() and not run.termination:
        out.append(Issue("warning", short, "no final answer and no faultgate.termination"))
    return out


def run(args: argparse.Namespace) -> int:
    try:
        fmt, spans = read_file(args.traces, args.format)
    except InputError as e:
        print(f"error    {'-':<12}  {e}")
        print(f"precheck: FAILED · format {args.format} · checked 0 of 0 traces · 0 tool steps read · 1 error(s), 0 warning(s)")
        return 2
    by_trace: dict[str, list[SpanRecord]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    ids = list(by_trace) if args.sample <= 0 else list(by_trace)[: args.sample]
    issues: list[Issue] = []
    steps = unread = 0
    for tid in ids:
        issues += span_issues(tid, by_trace[tid])
        for r in assemble_runs(by_trace[tid]):
            issues += run_issues(r)
            steps += len(r.steps)
            unread += sum(n for _, n in r.unread.counts())
    for i in issues:
        print(f"{i.level:<8} {i.trace_id:<12}  {i.message}")
    errors = sum(i.level == "error" for i in issues)
    print(f"precheck: {'FAILED' if errors else 'OK'} · format {fmt} · checked {len(ids)} of {len(by_trace)} traces · "
          f"{steps} tool steps read{f' · {unread} spans of agent work not read' if unread else ''} · "
          f"{errors} error(s), {len(issues) - errors} warning(s)")
    return 2 if errors else 0
