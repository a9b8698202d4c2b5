"""What `check` prints for a person: faultgate's table where its ids tell the rows apart,
labels that do where they do not, and an output that ends quietly when its reader goes."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.conftest import ROOT, SHARED

CLI = [sys.executable, "-m", "faultgate_stream.cli.main"]
RETAIL = ROOT / "examples" / "traces" / "retail_gaps.json"
RETAIL_POLICY = ROOT / "examples" / "policies" / "retail.json"


def _table(stdout: str) -> list[str]:
    """The table's lines: the header, the rule and the rows, up to the blank line."""
    return [line.rstrip() for line in stdout.split("\n\n")[0].splitlines()]


def test_on_faultgates_example_the_table_is_faultgates_line_for_line():
    """faultgate 0.4.1's README shows its table for examples/traces.json, whose trace ids
    differ in their first 12 digits: ours prints the same lines (the summary line differs
    only in the seconds it took)."""
    readme = (SHARED / "reference" / "faultgate-0.4.1-README.md").read_text().splitlines()
    start = readme.index("$ faultgate check examples/traces.json") + 1
    theirs = [line.rstrip() for line in readme[start:readme.index("", start)]]
    r = subprocess.run([*CLI, "check", str(SHARED / "corpus" / "faultgate-0.4.1" / "examples" / "traces.json")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert _table(r.stdout) == theirs
    assert len(theirs) == 7 and theirs[2].startswith("fc2cdab304bd  FAIL 1.00")


def test_runs_whose_ids_share_their_first_12_digits_are_told_apart_by_their_last():
    """examples/traces/retail_gaps.json numbers its 13 traces 000…0001 to 000…000d: under
    faultgate's label every row read 000000000000."""
    r = subprocess.run([*CLI, "check", str(RETAIL), "--policy", str(RETAIL_POLICY)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    rows = _table(r.stdout)[2:]
    labels = [row.split()[0] for row in rows]
    assert labels == [f"0000000…{i:04x}" for i in range(1, 14)]
    # the columns stay where the header puts them
    header = _table(r.stdout)[0]
    assert all(row.index("ok") == header.index("search_loop") for row in rows)
    assert "6/13 traces failed" in r.stdout


def test_check_into_a_closed_pipe_ends_quietly_with_its_own_exit_status_and_still_writes_its_report(tmp_path):
    """`check ... | head`: the reader is gone before the table is written. No traceback, no
    "Exception ignored" line; the exit status says what the checks found (1: a check fired),
    and the --json report asked for is written all the same."""
    report = tmp_path / "report.json"
    p = subprocess.Popen([*CLI, "check", str(RETAIL), "--policy", str(RETAIL_POLICY), "--json", str(report)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # before the interpreter has started: its first write meets a closed pipe
    _, err = p.communicate(timeout=120)
    assert err.decode() == ""
    assert p.returncode == 1
    assert json.loads(report.read_text())["traces"] == 13


def test_head_reading_one_line_of_check_leaves_no_error_in_a_shell_pipeline():
    r = subprocess.run(["bash", "-c", 'set -o pipefail; "$@" | head -n 1', "_", *CLI, "check", str(RETAIL),
                        "--policy", str(RETAIL_POLICY)], capture_output=True, text=True, timeout=120)
    assert r.stdout.startswith("trace ") and r.stdout.count("\n") == 1
    assert r.stderr == "" and r.returncode == 1


def test_a_closed_pipe_under_help_also_ends_quietly():
    p = subprocess.Popen([*CLI, "check", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    _, err = p.communicate(timeout=120)
    assert err.decode() == "" and p.returncode == 0


def test_an_undecided_runs_warning_names_it_by_the_tables_label(tmp_path):
    """The warning's example run is labelled as in the table, so it can be found there."""
    spans = json.loads((ROOT / "examples" / "formats" / "openinference.json").read_text())
    # two copies of the run whose content was not captured, with ids that share their first 12 digits
    docs = []
    for n in (1, 2):
        doc = json.loads(json.dumps(spans))
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    s["traceId"] = f"{n:032x}"
        docs.append(doc)
    merged = {"resourceSpans": docs[0]["resourceSpans"] + docs[1]["resourceSpans"]}
    f = tmp_path / "two.json"
    f.write_text(json.dumps(merged))
    r = subprocess.run([*CLI, "check", str(f)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    labels = [row.split()[0] for row in _table(r.stdout)[2:]]
    assert labels == ["0000000…0001", "0000000…0002"]
    assert re.search(r"^warning: 2/2 run\(s\) undecided: .*\(e\.g\. 0000000…0001 ", r.stderr, re.M), r.stderr
