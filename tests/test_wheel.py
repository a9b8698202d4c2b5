"""The package as a user installs it: scripts/build_wheel.sh's abi3 manylinux wheel, put by
pip into a clean venv whose PATH has no cargo, runs `demo` on the examples inside it and
`check` with the same table and exit status as the checkout.

The wheel is cached by its sources (scripts/build_wheel.sh), so this costs a build only
when they changed (about 1.5 minutes, Rust unchanged about half a minute; twice that
when the profile must be trained again), then a venv and pip's install (seconds, from pip's
cache) and the demo (a few seconds).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "traces" / "retail_gaps.json"
RETAIL_POLICY = ROOT / "examples" / "policies" / "retail.json"


def _bare_env(tmp_path: Path) -> dict[str, str]:
    """This process's environment with a PATH of the base python and the system's own
    directories: no ~/.cargo/bin, no Go, no .venv."""
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to(Path(sys.base_prefix) / "bin" / "python3")
    path = f"{bare}:/usr/bin:/bin"
    for tool in ("cargo", "rustc", "maturin"):
        assert shutil.which(tool, path=path) is None, f"{tool} is on {path}"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CARGO", "RUSTUP", "VIRTUAL_ENV", "PYTHONPATH", "FAULTGATE_"))}
    return {**env, "PATH": path,
            # the demo's ports moved to free ones, as it does itself when they are taken
            "FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": "127.0.0.1:0",
            "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": "127.0.0.1:0",
            "FAULTGATE_STREAM__METRICS__ENDPOINT": "127.0.0.1:0"}


def test_the_wheel_installs_with_no_cargo_and_runs_demo_and_check(tmp_path):
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build_wheel.sh"), "--out", str(tmp_path / "dist")],
                           capture_output=True, text=True, timeout=1800)
    assert built.returncode == 0, built.stderr[-4000:]
    wheel = Path(built.stdout.strip().splitlines()[-1])
    # one wheel for every CPython from 3.11 on any glibc from 2.17 (manylinux2014)
    tags = set(wheel.name.removesuffix(".whl").split("-")[-1].split("."))
    assert wheel.name.startswith("faultgate_stream-") and "-cp311-abi3-" in wheel.name, wheel.name
    assert tags == {"manylinux_2_17_x86_64", "manylinux2014_x86_64"}, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "faultgate_stream/_native.abi3.so" in names
    assert "faultgate_stream/examples/traces/retail_gaps.json" in names

    env = _bare_env(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run(["python3", "-m", "venv", str(venv)], env=env, check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                          "--only-binary", ":all:", str(wheel)], env=env, capture_output=True, text=True,
                         timeout=900)
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    cli = str(venv / "bin" / "faultgate-stream")
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import faultgate_stream; print(faultgate_stream.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr  # the wheel's, not the checkout's

    # demo: the service on its defaults, the examples from inside the installed package
    demo = subprocess.run([cli, "demo"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "Traceback" not in demo.stderr
    assert re.search(r"^19 runs decided: 9 failed, 9 clean, 1 undecided\.$", demo.stdout, re.M), demo.stdout
    assert f"{venv}/lib/" in demo.stdout and "/site-packages/faultgate_stream/examples/" in demo.stdout

    # check: the same table, summary and exit status as the checkout's own command
    args = ["check", str(RETAIL), "--policy", str(RETAIL_POLICY)]
    installed = subprocess.run([cli, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    checkout = subprocess.run([sys.executable, "-m", "faultgate_stream.cli.main", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert installed.returncode == checkout.returncode == 1, installed.stderr
    seconds = re.compile(r" · [\d.]+s$", re.M)  # the summary's time taken
    assert seconds.sub("", installed.stdout) == seconds.sub("", checkout.stdout)
    assert "6/13 traces failed" in installed.stdout
