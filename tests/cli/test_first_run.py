"""A first run as a new user makes it: the README's run command on a machine with only
Python, the demo beside something that holds its ports, serve on a taken port, replay to
nothing, serve --help."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "faultgate_stream.cli.main"]


def _listening() -> socket.socket:
    """A socket that holds a free port on 127.0.0.1, as another program would."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_demo_beside_programs_holding_its_ports_moves_to_free_ones_and_shows_the_retail_gaps(tmp_path):
    held = [_listening() for _ in range(3)]
    grpc, http, metrics = (s.getsockname()[1] for s in held)
    config = tmp_path / "demo.yaml"
    config.write_text(f"receive: {{grpc_endpoint: '127.0.0.1:{grpc}', http_endpoint: '127.0.0.1:{http}'}}\n"
                      f"metrics: {{endpoint: '127.0.0.1:{metrics}'}}\nassemble: {{root_grace: 500ms}}\n")
    try:
        r = subprocess.run([*CLI, "demo", "--config", str(config)], capture_output=True, text=True, timeout=120)
    finally:
        for s in held:
            s.close()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    for port, key in ((grpc, "receive.grpc_endpoint"), (http, "receive.http_endpoint"), (metrics, "metrics.endpoint")):
        assert f"port {port} ({key}) is taken; using :" in r.stdout
    # the retail fixture is checked against its policy: the six gap-* runs fail on it,
    # the seven ok-* look-alikes stay clean
    gaps = [line for line in r.stdout.splitlines() if " gap-" in line]
    oks = [line for line in r.stdout.splitlines() if " ok-" in line]
    assert len(gaps) == 6 and all(line.lstrip().startswith("FAILED") and "policy" in line for line in gaps)
    assert len(oks) == 7 and all(line.lstrip().startswith("clean") for line in oks)
    # the summary counts the rows it printed, by verdict: an undecided row is not "decided clean"
    rows = [line.split()[0] for line in r.stdout.splitlines() if line.startswith("  ") and " grace " in line]
    summary = re.search(r"^(\d+) runs decided: (\d+) failed, (\d+) clean, (\d+) undecided\.$", r.stdout, re.M)
    assert summary, r.stdout
    assert [int(n) for n in summary.groups()] == [len(rows), rows.count("FAILED"), rows.count("clean"),
                                                  rows.count("undecided")]
    assert rows.count("undecided") >= 1  # examples/formats/openinference.json captured no content
    # each column and the completion state the rows show are explained once, before and after them
    assert r.stdout.count("Each run is printed as it is decided") == 1
    assert len(re.findall(r"^closed grace: its root span arrived and root_grace \(0\.5s\) passed", r.stdout, re.M)) == 1
    # the final counts it showed, and where to look next
    assert 'faultgate_check_fired_total{agent="retail",check="policy",severity="hard"} 6.0' in r.stdout
    assert "Where to look next:" in r.stdout
    for hint in ("--keep-running", "faultgate-stream serve --config", "otlp_grpc", "faultgate-stream check"):
        assert hint in r.stdout, hint


def test_serve_on_a_taken_port_says_which_port_and_key_in_one_line(tmp_path):
    held = _listening()
    port = held.getsockname()[1]
    env = {**os.environ, "FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": f"127.0.0.1:{_free_port()}",
           "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": f"127.0.0.1:{port}",
           "FAULTGATE_STREAM__METRICS__ENDPOINT": f"127.0.0.1:{_free_port()}"}
    try:
        r = subprocess.run([*CLI, "serve"], capture_output=True, text=True, timeout=60, env=env)
    finally:
        held.close()
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert f"port {port}" in lines[0] and "receive.http_endpoint" in lines[0]
    assert "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT" in lines[0]


def test_replay_to_an_endpoint_where_nothing_listens_fails_plainly():
    port = _free_port()
    for args in (["--endpoint", f"127.0.0.1:{port}"], ["--protocol", "http", "--endpoint", f"http://127.0.0.1:{port}"]):
        started = time.monotonic()
        # the subprocess timeout is the bound: a replay that retried for minutes fails here
        r = subprocess.run([*CLI, "replay", str(ROOT / "examples/traces/traces.json"), "--quiet", *args],
                           capture_output=True, text=True, timeout=60)
        print(f"replay {args[-1]} with nothing there: exit {r.returncode} after {time.monotonic() - started:.1f}s")
        assert r.returncode == 1
        assert "Traceback" not in r.stderr and "_InactiveRpcError" not in r.stderr
        assert f"127.0.0.1:{port}" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_serve_help_describes_the_config_file_and_every_environment_override():
    r = subprocess.run([*CLI, "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "examples/config.yaml" in r.stdout and "FAULTGATE_STREAM__<SECTION>__<KEY>" in r.stdout
    from faultgate_stream.config import ServiceConfig
    import dataclasses

    for f in dataclasses.fields(ServiceConfig):
        assert re.search(rf"^\s+{f.name}:|{f.name}", r.stdout), f.name
    assert "grpc_endpoint" in r.stdout and "root_grace" in r.stdout and "SIGHUP" in r.stdout


def _readme_command(label: str) -> str:
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith(label):
            return re.search(r"`([^`]+)`\s*$", line).group(1)
    raise AssertionError(f"no {label!r} line in README.md")


def test_the_readme_run_command_reaches_the_demo_verdicts_on_a_machine_with_only_python(tmp_path):
    """A copy of the work tree with no .venv, run with a PATH that has no Go and no
    collector: the run command installs the package alone (pip's cache makes it quick
    where it has run before) and the demo decides every run."""
    command = _readme_command("Run ")
    assert "install_peers" not in command
    copy = tmp_path / "fresh"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split("\n")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, copy / name)
    bare = tmp_path / "bin"
    bare.mkdir()
    python = Path(sys.base_prefix) / "bin" / "python3"
    (bare / "python3").symlink_to(python)
    path = f"{bare}:/usr/bin:/bin"
    assert shutil.which("go", path=path) is None
    env = {"PATH": path, "HOME": os.environ.get("HOME", str(tmp_path)), "LANG": "C.UTF-8",
           # the demo on its defaults binds fixed ports; in a shared test run they are moved
           # to free ones, which is also what the demo would do if they were taken
           "FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__METRICS__ENDPOINT": "127.0.0.1:0"}
    r = subprocess.run(["bash", "-c", command], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    decided = re.search(r"^(\d+) runs decided: \d+ failed, \d+ clean, \d+ undecided\.$", r.stdout, re.M)
    assert decided and int(decided.group(1)) > 0, r.stdout[-2000:]
    assert not (copy / ".venv" / "bin" / "pytest").exists()  # the package alone, not the test extras
