"""``serve`` as a process: the gate's windows and bands survive SIGHUP. A reload with a
changed band judges the same window by the new band; a reload with a broken band file is
rejected and keeps the band it had."""
from __future__ import annotations

import json
import signal
import time
import urllib.request

from faultgate_stream.cli.replay import GrpcSender, replay
from tests.cli.test_serve import _free_port, _lines_until, _serve
from tests.gate.test_live_gate import AGENT, versioned


def _sample(port: int, name: str, **labels: str) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def _verdict_lines(proc, n: int) -> None:
    seen = 0
    while seen < n:
        seen += sum(1 for x in _lines_until(proc, "verdict") if x.get("event") == "verdict")


def _until(port: int, name: str, want: float, timeout: float = 30, **labels: str) -> float | None:
    """The log sink writes a verdict's line before the gate sink takes it: wait for the gate."""
    deadline = time.monotonic() + timeout
    while True:
        got = _sample(port, name, **labels)
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_windows_and_bands_survive_sighup(corpus, tmp_path):
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    band = tmp_path / "band.json"
    band.write_text((g / "band.json").read_text())
    grpc_port, metrics_port = _free_port(), _free_port()
    proc = _serve(tmp_path, f"receive: {{grpc_endpoint: '127.0.0.1:{grpc_port}', http_endpoint: ''}}\n"
                            f"metrics: {{endpoint: '127.0.0.1:{metrics_port}'}}\n"
                            "assemble: {root_grace: 300ms}\n"
                            f"checks: {{golden: '{g / 'golden.json'}'}}\n"
                            f"gate: {{bands: [{{agents: ['faultline-*'], band: '{band}'}}]}}\n")
    try:
        started = _lines_until(proc, "started")[-1]
        assert started["gate"][0]["band"] == str(band)
        sender = GrpcSender(f"127.0.0.1:{grpc_port}")
        replay([str(versioned(g / "baseline_glm_run1.json", tmp_path / "a.json", "A"))], sender)
        sender.close()
        _verdict_lines(proc, 30)
        a = {"agent": AGENT, "version": "A"}
        assert _until(metrics_port, "faultgate_gate_window_runs", 30, **a) == 30
        assert _sample(metrics_port, "faultgate_gate_verdict", verdict="pass", **a) == 1

        # a stricter band: every baseline run was clean
        strict = json.loads(band.read_text())
        strict["clean_rate"] = {"min": 1.0, "max": 1.0, "mean": 1.0, "per_run": [1.0, 1.0]}
        band.write_text(json.dumps(strict))
        proc.send_signal(signal.SIGHUP)
        _lines_until(proc, "reloaded")
        assert _sample(metrics_port, "faultgate_gate_window_runs", **a) == 30   # the window was kept
        assert _sample(metrics_port, "faultgate_gate_band_min", **a) == 1.0
        assert _sample(metrics_port, "faultgate_gate_verdict", verdict="fail", **a) == 1

        # a broken band file: the reload is rejected and the strict band stays
        band.write_text("{not json")
        proc.send_signal(signal.SIGHUP)
        rejected = _lines_until(proc, "reload_rejected")[-1]
        assert "gate.bands[0]" in rejected["reason"]
        assert _sample(metrics_port, "faultgate_gate_band_min", **a) == 1.0
        assert _sample(metrics_port, "faultgate_gate_window_runs", **a) == 30
        assert _sample(metrics_port, "faultgate_config_reloads_total", result="rejected") == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        finally:
            proc.kill()
