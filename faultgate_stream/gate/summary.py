"""The PR summary (``check --markdown FILE``): the verdict, the gate's numbers, the checks
that fired, the policy hard block, failing traces with their reasons, the usage change
against the baseline and the command that reproduces it. Reasons and scenario keys are
masked; no prompt, answer or tool payload is copied."""
from __future__ import annotations

from collections.abc import Callable

from faultgate_stream.gate.decide import GateResult
from faultgate_stream.model.verdict import RunVerdict
from faultgate_stream.verdict.redact import safe_key

MARKER = "<!-- faultgate -->"   # faultgate's: a CI step finds and updates its comment by it
# A PR comment is read, not searched: past this many failing traces the rest are counted.
MAX_FAILING_ROWS = 50


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(verdict: str, verdicts: list[RunVerdict], fired: dict[str, int], gate: GateResult | None,
             repro: str, mask: Callable[[str], str], drift: list[str] = ()) -> str:
    """``drift``: the lines ``check --band`` printed about trajectory drift."""
    failed = [v for v in verdicts if v.fired]
    lines = [MARKER, f"## faultgate-stream: {verdict}", "",
             f"{len(failed)}/{len(verdicts)} runs failed · "
             + ", ".join(f"{k}={n}" for k, n in fired.items()), ""]
    if gate is not None:
        g = gate
        p = "n/a" if g.p_value is None else f"{g.p_value:.3f}"
        rate = "n/a" if g.clean_rate is None else f"{g.clean_rate:.2f}"
        lines += ["| gate | clean rate | band | pass at | fail below | p-value | baseline runs |",
                  "|---|---|---|---|---|---|---|",
                  f"| **{g.verdict}** | {rate} | [{g.band.min:.2f}, {g.band.max:.2f}] | {g.pass_threshold:.2f} "
                  f"| {g.fail_threshold:.2f} | {p} | {g.band.runs} |", ""]
        if g.required_n is not None:
            lines += [f"Inconclusive: a drop of {g.drop:.2f} needs {g.required_n} scenarios to tell from noise "
                      f"(alpha 0.05, power 0.80); run {g.additional_n} more.", ""]
        if g.policy_violations:
            lines += [f"**Policy violation in {len(g.policy_violations)} trace(s) (hard block).**", ""]
        if g.regressions:
            lines += ["Regressions (clean in every baseline run, not now): "
                      + ", ".join(f"`{safe_key(s, mask)}`" for s in g.regressions), ""]
        if g.usage:
            lines += ["| usage | baseline | candidate | change |", "|---|---|---|---|"]
            for m, u in g.usage.items():
                delta = "n/a" if u["delta_pct"] is None else f"{u['delta_pct']:+.1f}%"
                lines.append(f"| {m} | {u['baseline']:.1f} | {u['candidate']:.1f} | {delta} |")
            lines.append("")
        for w in g.warnings:
            lines.append(f"> warning: {_cell(w)}")
        if g.warnings:
            lines.append("")
    if drift:
        lines += [f"- {_cell(line.removeprefix('drift: '))}" for line in drift] + [""]
    if failed:
        lines += ["| trace | scenario | check | reason |", "|---|---|---|---|"]
        rows = [(v, r) for v in failed for r in v.fired]
        for v, r in rows[:MAX_FAILING_ROWS]:
            lines.append(f"| `{v.key.trace_id[:12]}` | `{safe_key(v.scenario, mask)}` | {r.check} | {_cell(mask(r.reason))} |")
        if len(rows) > MAX_FAILING_ROWS:
            lines.append(f"\n... and {len(rows) - MAX_FAILING_ROWS} more findings (see the audit files).")
        lines.append("")
    lines += ["Reproduce:", "", "```sh", repro, "```", ""]
    return "\n".join(lines)
