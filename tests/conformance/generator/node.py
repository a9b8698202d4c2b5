"""The JavaScript families: a framework's npm packages, instrumented with the OTel JS SDK,
in a Node process this module drives (``js/harness.mjs`` is its other half).

Each family is a folder under ``js/`` with its ``package.json``, its ``package-lock.json``
(the pins: ``npm ci`` installs exactly them) and ``play.mjs``. The scenarios, their truth and
the scripted model are the Python families' (``scenarios.py``, ``scripted_model.py``): the
Node process talks to the same scripted model, and its tools call back here, where the
scenario's ``World`` decides what each returns or raises. The spans are written as the OTel
JS SDK's own OTLP/JSON encoder (``JsonTraceSerializer``) writes an export request.
"""
from __future__ import annotations

import inspect
import json
import queue
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .scenarios import SCENARIOS, TOOLS, WORLD, Scenario, ToolFailure
from .scripted_model import ScriptedModel, Turn

JS = Path(__file__).resolve().parent / "js"
MODEL = "scripted-1"
STEP_BUDGET = 12  # every family's own step limit, as the Python families set theirs
MARK = "@@faultgate "
REPLY_TIMEOUT = 180.0  # seconds a scenario may take in Node (a budget loop is 12 model turns)


@dataclass(frozen=True)
class NodeFamily:
    name: str
    folder: str               # js/<folder>: package.json, package-lock.json, play.mjs
    framework: str            # npm package whose version is recorded
    instrumentation: str      # npm package whose version is recorded
    args: tuple[str, ...] = ()  # play.mjs's arguments
    supports: frozenset[str] = frozenset({"parallel"})
    skip: frozenset[str] = frozenset()
    why_skipped: str = ""
    adapt: Callable[[Turn], Turn] | None = None
    # what the instrumentation records, known from its source (families.py's Family.captures)
    captures: frozenset[str] = frozenset({"content", "finish_reasons"})
    content: str = "span"
    extras: dict[str, str] = field(default_factory=dict)
    # as families.py's Family: how a hand-off is made (none of these plays one), and the
    # scenarios whose recording has a gap of its own
    hand_off: Callable[[str], tuple[Turn, ...]] | None = None
    undecided_on: dict[str, str] = field(default_factory=dict)

    def plays(self, s: Scenario) -> bool:
        return s.needs <= self.supports and s.name not in self.skip

    @property
    def path(self) -> Path:
        return JS / self.folder

    def versions(self) -> dict[str, str]:
        """The recorded packages' versions, as the lock file pins them."""
        lock = json.loads((self.path / "package-lock.json").read_text())["packages"]
        names = {self.framework, self.instrumentation, *self.extras.values(), "@opentelemetry/sdk-trace-base"}
        return {n: lock[f"node_modules/{n}"]["version"] for n in sorted(names)}


def tool_specs() -> list[dict[str, Any]]:
    """The scenario tools as the Node side declares them: name, description, parameter types."""
    kinds = {"str": "string", "float": "number", "int": "number"}  # scenarios.py's annotations, as text
    out = []
    for f in TOOLS:
        params = {p.name: kinds[str(p.annotation)] for p in inspect.signature(f).parameters.values()}
        out.append({"name": f.__name__, "description": (f.__doc__ or "").strip().split("\n")[0], "params": params})
    return out


class ToolServer:
    """``POST /tool {"name", "args"}`` -> ``{"result": ...}``, or ``{"error": message}`` when
    the scenario's tool fails (``ToolFailure``): the Node side throws it for its framework."""

    def __init__(self) -> None:
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                try:
                    with lock:  # parallel calls of one turn: World counts calls per tool
                        reply = {"result": WORLD.call(body["name"], **body.get("args", {}))}
                    status = 200
                except ToolFailure as e:
                    reply, status = {"error": str(e)}, 200
                except Exception as e:  # the scenario or the call is wrong: tell the family, loudly
                    reply, status = {"problem": f"{type(e).__name__}: {e}"}, 500
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/tool"

    def __enter__(self) -> ToolServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class Node:
    """The family's ``node play.mjs``, one JSON message a line each way."""

    def __init__(self, family: NodeFamily, stderr: Path) -> None:
        if not (family.path / "node_modules").is_dir():
            raise RuntimeError(f"{family.path}: run `npm ci` there first (regenerate.sh does)")
        self._err = stderr.open("w")
        # a family that needs another Node than the machine's pins it (the npm package `node`)
        pinned = family.path / "node_modules" / ".bin" / "node"
        node = str(pinned) if pinned.exists() else "node"
        self._proc = subprocess.Popen([node, "play.mjs", *family.args], cwd=family.path, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._err, text=True, bufsize=1)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith(MARK):
                self._lines.put(line[len(MARK):])
        self._lines.put(None)

    def ask(self, msg: dict[str, Any], want: str) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(msg) + "\n")
        self._proc.stdin.flush()
        try:
            line = self._lines.get(timeout=REPLY_TIMEOUT)
        except queue.Empty:
            raise RuntimeError(f"node gave no answer to {msg['op']} in {REPLY_TIMEOUT:.0f} s") from None
        if line is None:
            raise RuntimeError(f"node exited ({self._proc.wait()}) during {msg['op']}: see {self._err.name}")
        reply = json.loads(line)
        if reply.get("op") != want:
            raise RuntimeError(f"node answered {msg['op']} with {reply}")
        return reply

    def close(self) -> None:
        try:
            self.ask({"op": "exit"}, "bye")
        finally:
            self._proc.wait(timeout=30)
            self._err.close()


def main(family: NodeFamily, out: Path) -> None:
    from .run import expected_doc, run_entry, scripted

    target = (out / family.name).resolve()  # node runs in its own folder
    target.mkdir(parents=True, exist_ok=True)
    runs = []
    with ScriptedModel() as model, ToolServer() as tools:
        node = Node(family, target / "node.stderr")
        try:
            node.ask({"op": "init", "tools": tool_specs(), "model_url": model.base_url, "tools_url": tools.url,
                      "model": MODEL, "budget": STEP_BUDGET}, "ready")
            for s in SCENARIOS:
                if not family.plays(s):
                    continue
                WORLD.start(s)
                model.play(scripted(family, s), s.name)
                played = node.ask({"op": "play", "scenario": {"name": s.name, "prompt": s.prompt,
                                                               "needs": sorted(s.needs), "session": s.session}},
                                  "played")
                assert len(played["ran"]) == 1, f"{family.name}/{s.name}: {len(played['ran'])} traces, expected one"
                runs.append(run_entry(family, s, played["ran"][0], played["built"], model))
            raw = target / "traces.raw.json"
            node.ask({"op": "write", "path": str(raw)}, "written")
        finally:
            node.close()
    doc = json.loads(raw.read_text())
    raw.unlink()
    spans = sum(len(ss.get("spans", ())) for rs in doc.get("resourceSpans", ()) for ss in rs.get("scopeSpans", ()))
    (target / "traces.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    (target / "node.stderr").unlink(missing_ok=True)
    written = {"spans": spans, "logs": 0}
    (target / "expected.json").write_text(
        json.dumps(expected_doc(family, family.versions(), runs, written, language="javascript"), indent=1) + "\n")
    print(f"{family.name}: {len(runs)} runs, {spans} spans")
