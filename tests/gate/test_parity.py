"""Parity with faultgate 0.4.1's gate over every reference report made with --band.

For each report the corpus README lists with ``--band``, our ``check`` with the same input
and flags must give faultgate's exit code and its gate object: verdict, clean rate, band,
thresholds, the statistics (p-value to the last bit), regressions, missing scenarios,
policy violations, usage change and warnings.
"""
from __future__ import annotations

import json
import re

import pytest

from faultgate_stream.cli.main import main
from tests.test_parity import README_ROW, _flags


def band_rows(corpus):
    rows = [m.groupdict() for line in (corpus / "README.md").read_text().splitlines()
            if (m := README_ROW.match(line))]
    return [r for r in rows if "--band" in r["flags"]]


def test_the_corpus_lists_eight_gate_reports(corpus):
    rows = band_rows(corpus)
    assert len(rows) == 8
    assert all((corpus / "reference" / r["report"]).is_file() for r in rows)


@pytest.mark.parametrize("row", range(8))
def test_our_gate_equals_faultgates(corpus, tmp_path, row, capsys):
    r = band_rows(corpus)[row]
    theirs = json.loads((corpus / "reference" / r["report"]).read_text())["gate"]
    out = tmp_path / "ours.json"
    code = main(["check", str(corpus / "faultgate-0.4.1" / r["input"]), *_flags(corpus, r["flags"]), "--json", str(out)])
    printed = capsys.readouterr().out
    ours = json.loads(out.read_text())["gate"]
    assert code == int(r["exit"])
    assert ours == theirs
    # the terminal line says the same verdict and numbers
    line = next(ln for ln in printed.splitlines() if ln.startswith("gate: "))
    assert line.startswith(f"gate: {theirs['verdict']} · clean rate {theirs['clean_rate']:.2f} ")
    assert f"fail below {theirs['fail_threshold']:.2f} · p={theirs['stats']['p_value']:.3f}" in line
    assert re.search(r"policy violation in \d+ trace", printed) is not None or not theirs["policy_violations"]
