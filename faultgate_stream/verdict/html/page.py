"""``check --html report.html``: the report as one self-contained page.

A renderer of ``Report`` like ``to_dict`` (JSON) and the Markdown summary: the summary
(runs, failed, undecided; with ``--band`` the gate's verdict and its clean rate drawn
against the band), filters by check and verdict, then one row per run that opens into its
timeline, the run's spans as a waterfall (name, tool, duration, tokens, status) with the
steps where a check fired marked and the reason beside them.

Self-contained: the style sheet and script (``report.css``, ``report.js`` beside this
module) are inlined, the plot is inline SVG, and nothing is fetched, so the page opens the
same from a CI artifact, an e-mail or a machine with no network. The page works without
its script (every run listed, each opens); the script adds the filters.

Masked like every other report: each reason, scenario key, agent name, span and tool name
goes through the report's mask (``report.masker``) before it is written, and no prompt,
answer, argument or tool result is copied. Every text is HTML-escaped after masking.
"""
from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from faultgate_stream import __version__
from faultgate_stream.model.verdict import VERDICTS, CheckResult, RunVerdict
from faultgate_stream.verdict.pointers import pointed_spans
from faultgate_stream.verdict.redact import safe_key
from faultgate_stream.verdict.report import Redact, Report, masker
from faultgate_stream.verdict.timeline import TimelineStep

Mask = Callable[[str], str]
# Spans drawn per run. A page is read, not searched: past this the rest of a run's spans
# are counted, not drawn (each marked one still is), so a run of 10,000 spans stays a page
# a browser opens.
MAX_ROWS = 500


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def render(report: Report, redact: Redact | None, gate: Mapping[str, Any] | None = None) -> str:
    """The page. ``gate`` is the gate's JSON (``GateResult.to_json``, its keys masked), when
    a band was given."""
    mask = masker(redact)
    verdicts = report.verdicts
    failed = sum(v.failed for v in verdicts)
    undecided = len(report.undecided_runs)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # nothing is loaded from anywhere: the page's own style and script only
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
        "<title>faultgate-stream report</title>",
        f"<style>{_asset('report.css')}</style></head><body>",
        '<header><h1>faultgate-stream report</h1>',
        f'<p class="meta">faultgate-stream {_e(__version__)} · checks: {_e(", ".join(report.checks))} · '
        f'reasons masked: {_e(report.redaction if redact else "off")} · judge: {_e(report.judge)}</p></header>',
        _summary(len(verdicts), failed, undecided, len(report.trace_ids), report.fired, gate),
        _filters(report.checks, len(verdicts)),
        '<section id="runs">',
    ]
    for i, v in enumerate(verdicts):
        parts.append(_run(i, v, report.timelines.get(str(v.key), ()), mask))
    parts += ["</section>", f"<script>{_asset('report.js')}</script>", "</body></html>", ""]
    return "\n".join(parts)


# ------------------------------------------------------------------------------ summary

def _summary(runs: int, failed: int, undecided: int, traces: int, fired: Mapping[str, int],
             gate: Mapping[str, Any] | None) -> str:
    clean = runs - failed - undecided
    counts = "".join(f'<div class="count {cls}"><span id="count-{cls}">{n}</span> {label}</div>'
                     for cls, n, label in (("runs", runs, "runs"), ("failed", failed, "failed"),
                                           ("undecided", undecided, "undecided"), ("clean", clean, "clean"),
                                           ("traces", traces, "traces")))
    checks = ", ".join(f"{_e(k)} {n}" for k, n in fired.items() if n) or "none"
    out = ['<section id="summary">', f'<div class="counts">{counts}</div>',
           f'<p class="fired">checks that fired: {checks}</p>']
    out.append(_gate(gate) if gate is not None else
               '<p id="gate" class="no-gate">No gate: give <code>--band band.json</code> (from '
               '<code>faultgate-stream baseline</code>) to compare the clean rate against a baseline.</p>')
    out.append("</section>")
    return "\n".join(out)


def _rate(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def _gate(g: Mapping[str, Any]) -> str:
    verdict = str(g["verdict"])
    lo, hi = g["band"]
    stats = g.get("stats", {})
    p = stats.get("p_value")
    rows = [f'<div id="gate" data-verdict="{_e(verdict)}">',
            f'<p class="gate-verdict">gate <strong class="verdict-{_e(verdict.lower())}">{_e(verdict)}</strong>: '
            f'clean rate {_rate(g.get("clean_rate"))} against the band [{lo:.2f}, {hi:.2f}] '
            f'(pass at {g["pass_threshold"]:.2f}, fail below {g["fail_threshold"]:.2f}; '
            f'p-value {_rate(p)})</p>',
            _plot(g.get("clean_rate"), lo, hi, g["pass_threshold"], g["fail_threshold"])]
    if stats.get("required_n") is not None:
        rows.append(f'<p>Inconclusive: {stats["required_n"]} scenarios would tell this drop from noise; '
                    f'run {stats.get("additional_n")} more.</p>')
    for key, label in (("policy_violations", "policy violations (a hard block)"),
                       ("regressions", "regressions (clean in every baseline run, not now)"),
                       ("missing", "scenarios in the band not run")):
        if g.get(key):
            rows.append(f"<p>{_e(label)}: {_e(', '.join(map(str, g[key])))}</p>")
    for w in g.get("warnings", ()):
        rows.append(f'<p class="warning">warning: {_e(w)}</p>')
    rows.append("</div>")
    return "\n".join(rows)


def _plot(rate: float | None, lo: float, hi: float, pass_at: float, fail_below: float) -> str:
    """The clean-rate axis from 0 to 1: the band shaded, the pass and fail thresholds as
    lines, the clean rate as a dot (absent when no run was decided)."""
    w, h, pad = 600, 64, 20

    def x(v: float) -> float:
        return pad + (w - 2 * pad) * min(1.0, max(0.0, v))

    ticks = "".join(f'<line x1="{x(t):.1f}" y1="40" x2="{x(t):.1f}" y2="44" class="tick"/>'
                    f'<text x="{x(t):.1f}" y="56" text-anchor="middle">{t:g}</text>'
                    for t in (0, 0.25, 0.5, 0.75, 1))
    dot = "" if rate is None else (
        f'<circle id="gate-rate" class="clean-rate" cx="{x(rate):.1f}" cy="28" r="6">'
        f"<title>clean rate {rate:.2f}</title></circle>")
    return (f'<svg id="gate-plot" role="img" aria-label="clean rate against the band" viewBox="0 0 {w} {h}" '
            f'width="{w}" height="{h}">'
            f'<line x1="{pad}" y1="40" x2="{w - pad}" y2="40" class="axis"/>{ticks}'
            f'<rect id="gate-band" class="band" x="{x(lo):.1f}" y="18" width="{max(1.0, x(hi) - x(lo)):.1f}" '
            f'height="20"><title>band [{lo:.2f}, {hi:.2f}]</title></rect>'
            f'<line class="threshold fail" x1="{x(fail_below):.1f}" y1="12" x2="{x(fail_below):.1f}" y2="40">'
            f"<title>fail below {fail_below:.2f}</title></line>"
            f'<line class="threshold pass" x1="{x(pass_at):.1f}" y1="12" x2="{x(pass_at):.1f}" y2="40">'
            f"<title>pass at {pass_at:.2f}</title></line>"
            f"{dot}</svg>")


def _filters(checks: Sequence[str], runs: int) -> str:
    check_opts = "".join(f'<option value="{_e(c)}">{_e(c)}</option>' for c in checks)
    verdict_opts = "".join(f'<option value="{v}">{v}</option>' for v in VERDICTS)
    return ('<section id="filters"><label>check fired <select id="filter-check"><option value="">any</option>'
            f'{check_opts}</select></label> <label>verdict <select id="filter-verdict">'
            f'<option value="">any</option>{verdict_opts}</select></label> '
            f'<span id="shown">{runs} of {runs} runs shown</span></section>')


# ------------------------------------------------------------------------------ runs

def _duration(ns: int) -> str:
    if ns <= 0:
        return ""
    ms = ns / 1e6
    if ms < 1:
        return f"{ns / 1000:.0f} µs"
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def _run(i: int, v: RunVerdict, steps: tuple[TimelineStep, ...], mask: Mask) -> str:
    verdict = v.verdict
    fired = [r for r in v.results if r.fired]
    undecided = [r for r in v.results if r.undecided]
    step_spans = {n: s.span_id for s in steps for n in s.steps}
    # span id -> the fired results that point at it
    marks: dict[str, list[CheckResult]] = {}
    pointed = [pointed_spans(r, v.early, step_spans) for r in fired]  # per result: a check bound to two agents fires twice
    for r, spans in zip(fired, pointed):
        for sid in spans:
            marks.setdefault(sid, []).append(r)
    shown = {s.span_id: k for k, s in enumerate(steps)}
    start = min((s.start_ns for s in steps if s.start_ns), default=v.first_start_ns)
    end = max((max(s.end_ns, s.start_ns) for s in steps), default=v.last_end_ns)
    agent = mask(v.agent) + (f" {mask(v.agent_version)}" if v.agent_version else "")
    summary = (f'<summary><span class="badge {verdict}">{verdict}</span> '
               f'<code class="trace">{_e(v.key.trace_id)}</code> <span class="agent">{_e(agent)}</span> '
               f'<span class="scenario">{_e(safe_key(v.scenario, mask))}</span> '
               f'<span class="size">{_count(v.steps, "step")} · {_count(v.spans, "span")} · {_e(_duration(end - start))}</span> '
               f'<span class="checks">{_e(" ".join(r.check for r in fired))}</span></summary>')
    findings = []
    for r, spans in zip(fired, pointed):
        at = [f'<a href="#run-{i}-span-{shown[sid]}">{_e(_where(steps[shown[sid]]))}</a>'
              for sid in spans if sid in shown]
        where = f" at {', '.join(at)}" if at else " (the run as a whole)"
        findings.append(f'<li class="finding" data-check="{_e(r.check)}"><strong>{_e(r.check)}</strong> '
                        f'<span class="severity {r.severity.value}">{r.severity.value}</span>{where}: '
                        f'<span class="reason">{_e(mask(r.reason))}</span></li>')
    for r in undecided:
        findings.append(f'<li class="finding undecided" data-check="{_e(r.check)}"><strong>{_e(r.check)}</strong> '
                        f'undecided: <span class="reason">{_e(mask(r.reason))}</span></li>')
    passed = [r.check for r in v.results if not r.fired and not r.undecided]
    body = [f'<details class="run" id="run-{i}" data-verdict="{verdict}" '
            f'data-fired="{_e(" ".join(r.check for r in fired))}" '
            f'data-undecided="{_e(" ".join(r.check for r in undecided))}" data-run-id="{_e(str(v.key))}">',
            summary, '<div class="detail">',
            f'<p class="run-meta">run <code>{_e(str(v.key))}</code> · completion {v.completion.value}'
            + (f" · revision {v.revision}" if v.revision else "") + "</p>"]
    if findings:
        body.append(f'<ul class="findings">{"".join(findings)}</ul>')
    if passed:
        body.append(f'<p class="passed">passed: {_e(", ".join(passed))}</p>')
    body.append(_waterfall(i, steps, marks, start, end, mask) if steps else
                '<p class="no-timeline">No spans to draw for this run.</p>')
    body.append("</div></details>")
    return "\n".join(body)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _where(s: TimelineStep) -> str:
    if s.steps:
        return ("step " if len(s.steps) == 1 else "steps ") + ", ".join(map(str, s.steps))
    return "span " + s.span_id


def _waterfall(i: int, steps: tuple[TimelineStep, ...], marks: Mapping[str, list[CheckResult]], start: int,
               end: int, mask: Mask) -> str:
    total = max(end - start, 1)
    left_out = 0
    rows = ['<table class="waterfall"><thead><tr><th>step</th><th>span</th><th>tool</th>'
            '<th class="bar-col">time</th><th>duration</th><th>tokens</th><th>status</th></tr></thead><tbody>']
    for k, s in enumerate(steps):
        hits = marks.get(s.span_id, ())
        if k >= MAX_ROWS and not hits:
            left_out += 1
            continue
        left = (s.start_ns - start) / total * 100 if s.start_ns else 0.0
        width = max((s.end_ns - s.start_ns) / total * 100, 0.4) if s.end_ns > s.start_ns else 0.4
        status = "error" if s.failed else "ok"
        cls = f"span {s.kind}" + (" fired" if hits else "") + (" error" if s.failed else "")
        fired_attr = f' data-fired="{_e(" ".join(r.check for r in hits))}"' if hits else ""
        rows.append(
            f'<tr id="run-{i}-span-{k}" class="{cls}" data-span-id="{_e(s.span_id)}"{fired_attr}>'
            f'<td class="step">{_e(", ".join(map(str, s.steps)))}</td>'
            f'<td class="name" style="padding-left:{0.4 + 1.1 * min(s.depth, 12):.1f}em">{_e(mask(s.name))}</td>'
            f'<td class="tool">{_e(mask(s.tool))}</td>'
            f'<td class="bar-col"><div class="track"><div class="bar {s.kind}" '
            f'style="left:{min(left, 99.6):.2f}%;width:{min(width, 100 - min(left, 99.6)):.2f}%"></div></div></td>'
            f'<td class="duration">{_e(_duration(s.end_ns - s.start_ns))}</td>'
            f'<td class="tokens">{"" if s.tokens is None else s.tokens}</td>'
            f'<td class="status {status}">{status}</td></tr>')
        for r in hits:
            rows.append(f'<tr class="why" data-check="{_e(r.check)}"><td></td><td colspan="6">'
                        f'<span class="mark">{_e(r.check)}</span> fired here: '
                        f'<span class="reason">{_e(mask(r.reason))}</span></td></tr>')
    if left_out:
        rows.append(f'<tr class="left-out"><td></td><td colspan="6">{left_out} more spans not drawn (a run\'s first '
                    f'{MAX_ROWS} are, and every span where a check fired)</td></tr>')
    rows.append("</tbody></table>")
    return "\n".join(rows)

