"""The compiled module's training workload (scripts/pgo_train.py) still runs both of its
paths. If it broke, scripts/native_profile.sh would say so and build without a profile,
and the module would quietly lose what the profile gives (bench/README.md): this fails
instead. Run with the installed module, as the instrumented one runs it."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "pgo_train.py"


def test_the_training_checks_runs_offline_and_exports_live_spans():
    out = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    m = re.search(r"(\d+) runs checked offline, (\d+) spans through the live path, (\d+) export batches", out.stdout)
    assert m, out.stdout
    runs, spans, batches = map(int, m.groups())
    # every bundled trace file read, with golden answers and with a policy
    assert runs >= 20, out.stdout
    # the three OTLP examples, ten rounds, exported downstream
    assert spans >= 1000 and batches >= 5, out.stdout


def test_the_training_reads_only_the_bundled_examples():
    # the benches time faultgate's gate files and generated requests: training on them
    # would make the benches measure the build on its own training input
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import pgo_train
    finally:
        sys.path.remove(str(SCRIPT.parent))
    examples = SCRIPT.parents[1] / "examples"
    inputs = [*pgo_train.OFFLINE_FILES, *pgo_train.OTLP_FILES, pgo_train.GOLDEN, pgo_train.POLICY]
    assert len(pgo_train.OFFLINE_FILES) >= 5
    assert all(p.is_file() and p.is_relative_to(examples) for p in inputs), inputs
