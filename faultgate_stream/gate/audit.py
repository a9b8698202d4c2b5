"""Audit files (``check --audit DIR``): ``verdict.json`` (the verdict, exit code, version,
UTC time, every input file with its SHA-256 and the gate's numbers), ``failing_traces.json``
(each failing run and every reason) and ``repro.sh``. No prompt, answer or payload is
copied; reasons and scenario keys are masked."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from faultgate_stream import __version__
from faultgate_stream.gate.decide import GateResult
from faultgate_stream.model.verdict import RunVerdict
from faultgate_stream.verdict.redact import safe_key


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write(directory: str | Path, *, verdict: str, exit_code: int, inputs: list[tuple[str, str]],
          verdicts: list[RunVerdict], gate: GateResult | None, repro: str, mask: Callable[[str], str],
          now: datetime | None = None) -> None:
    """``inputs``: (role, path) of every file the verdict was made from. Raises OSError."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"verdict": verdict, "exit_code": exit_code, "faultgate_stream_version": __version__,
           "time_utc": (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "inputs": [{"role": role, "path": path, "sha256": sha256(path)} for role, path in inputs],
           "runs": len(verdicts), "failed_runs": sum(bool(v.fired) for v in verdicts),
           "gate": gate.to_json() if gate is not None else None}
    if gate is not None:
        g = doc["gate"]
        g["regressions"] = [safe_key(s, mask) for s in g["regressions"]]
        g["missing"] = [safe_key(s, mask) for s in g["missing"]]
    (out / "verdict.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    failing = [{"trace_id": v.key.trace_id, "run_id": str(v.key), "scenario": safe_key(v.scenario, mask),
                "agent": v.agent, "agent_version": v.agent_version, "steps": v.steps,
                "fired": [{"check": r.check, "severity": r.severity.value, "reason": mask(r.reason)}
                          for r in v.fired]}
               for v in verdicts if v.fired]
    (out / "failing_traces.json").write_text(json.dumps(failing, indent=1), encoding="utf-8")
    script = out / "repro.sh"
    script.write_text("#!/bin/sh\n# Re-run the check that produced verdict.json (inputs and their hashes there).\n"
                      f"set -e\n{repro}\n", encoding="utf-8")
    script.chmod(0o755)
