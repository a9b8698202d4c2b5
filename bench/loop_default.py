"""What turning the ``loop`` check on by default would change, measured on two corpora.

    .venv/bin/python bench/loop_default.py

1. faultgate 0.4.1's own reference reports (``../shared/corpus``, the 15 rows that
   ``tests/test_parity.py`` compares): each input checked as that test does, then again with
   ``loop`` added to the same checks. Counts the parity cells (trace, faultgate check) that
   change, the traces on which ``loop`` fires or is undecided, and the traces whose run
   verdict, failed list or exit code would move.
2. The conformance corpus (``tests/conformance/corpus``, real frameworks, truth by
   construction): the runs whose verdict or fired set would differ from ``expected.json``.

Not a timing benchmark: ``bench/live.py --extra-checks`` measures what loop costs per span.
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faultgate_stream.checks.loop import Loop  # noqa: E402
from faultgate_stream.checks.registry import select  # noqa: E402
from faultgate_stream.cli.main import main  # noqa: E402
from faultgate_stream.pipeline import check_spans  # noqa: E402
from faultgate_stream.read.files import read_files  # noqa: E402
from tests.conformance import score as conformance  # noqa: E402
from tests.test_parity import _flags, reference_rows  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"


def _report(args: list[str], out: Path) -> tuple[int, dict]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main([*args, "--json", str(out)])
    return code, json.loads(out.read_text())


def parity() -> dict[str, int]:
    totals = dict(rows=0, traces=0, cells=0, cells_changed=0, loop_fired=0, loop_undecided=0,
                  verdict_changed=0, failed_list_changed=0, exit_changed=0)
    with tempfile.TemporaryDirectory() as tmp:
        for r in reference_rows(CORPUS):
            base = ["check", str(CORPUS / "faultgate-0.4.1" / r["input"]), *_flags(CORPUS, r["flags"])]
            code0, off = _report(base, Path(tmp) / "off.json")
            names = off["checks"]
            with_loop = [a for a in base]
            if "--check" in with_loop:
                i = with_loop.index("--check")
                with_loop[i + 1] += ",loop"
            else:
                with_loop += ["--check", ",".join(names + ["loop"])]
            code1, on = _report(with_loop, Path(tmp) / "on.json")
            cell = lambda doc: {(x["trace_id"], x["check"]): x["detected"] for x in doc["results"]}  # noqa: E731
            c0, c1 = cell(off), cell(on)
            totals["rows"] += 1
            totals["traces"] += len(off["traces"]) if isinstance(off["traces"], list) else off["traces"]
            totals["cells"] += len(c0)
            totals["cells_changed"] += sum(c1.get(k) != v for k, v in c0.items())
            totals["loop_fired"] += sum(v is True for (t, c), v in c1.items() if c == "loop")
            totals["loop_undecided"] += sum(v is None for (t, c), v in c1.items() if c == "loop")
            v0 = {x["trace_id"]: x.get("verdict") for x in off.get("runs", [])}
            v1 = {x["trace_id"]: x.get("verdict") for x in on.get("runs", [])}
            totals["verdict_changed"] += sum(v1.get(k) != v for k, v in v0.items())
            totals["failed_list_changed"] += sorted(off["failed_traces"]) != sorted(on["failed_traces"])
            totals["exit_changed"] += code0 != code1
    return totals


def conformance_corpus() -> dict[str, int]:
    """``loop`` beside the built-in rules on every family, against the corpus's truth: the
    ``loop`` field of ``expected.json`` says whether the script made the run loop."""
    totals = dict(runs=0, loop_fired=0, loop_undecided=0, fired_on_loops=0, fired_on_non_loops=0,
                  verdict_changed=0, verdict_changed_on_non_loops=0)
    for family in conformance.families():
        found = read_files([str(p) for p in conformance.input_files(family)])
        checks = select(conformance.BUILT_IN.split(",")) + [Loop()]
        verdicts = check_spans([f.spans for f in found], checks, [f.contents for f in found])
        off = {v.key.trace_id: v.verdict for v in conformance.offline_verdicts(family)}
        truth = {r["trace_id"]: r.get("loop") for r in conformance.expected(family)["runs"]}
        for v in verdicts:
            loop = next(r for r in v.results if r.check == "loop")
            loops = bool(truth.get(v.key.trace_id))
            totals["runs"] += 1
            totals["loop_fired"] += loop.fired
            totals["loop_undecided"] += loop.undecided
            totals["fired_on_loops"] += loop.fired and loops
            totals["fired_on_non_loops"] += loop.fired and not loops
            changed = off.get(v.key.trace_id) != v.verdict
            totals["verdict_changed"] += changed
            totals["verdict_changed_on_non_loops"] += changed and not loops
    return totals


if __name__ == "__main__":
    p = parity()
    print("faultgate 0.4.1 reference reports (tests/test_parity.py rows), loop added to their checks:")
    print(f"  {p['rows']} reports, {p['traces']} traces, {p['cells']} (trace, check) cells")
    print(f"  cells changed {p['cells_changed']}; loop fired on {p['loop_fired']} traces, undecided on "
          f"{p['loop_undecided']}; run verdicts changed {p['verdict_changed']}; failed lists changed "
          f"{p['failed_list_changed']} of {p['rows']}; exit codes changed {p['exit_changed']} of {p['rows']}")
    c = conformance_corpus()
    print("conformance corpus (tests/conformance/corpus), loop added to the built-in rules:")
    print(f"  {c['runs']} runs; loop fired on {c['loop_fired']} ({c['fired_on_loops']} that the script made loop, "
          f"{c['fired_on_non_loops']} others), undecided on {c['loop_undecided']}; run verdicts changed "
          f"{c['verdict_changed']} ({c['verdict_changed_on_non_loops']} on runs that do not loop)")
    print(f"RESULT parity_cells_changed={p['cells_changed']} parity_exit_changed={p['exit_changed']} "
          f"report_columns_changed={p['rows']} conformance_verdicts_changed={c['verdict_changed']} conformance_false_alarms={c['fired_on_non_loops']}")
