"""An OpenAI-compatible chat completions server on 127.0.0.1 that answers from a script.

Each request takes the next turn of the current script: a text answer (with its finish
reason) or one or more tool calls. Nothing reaches the network; the framework under test
talks to this server exactly as it would to the real API (``base_url`` pointed here).
Streaming requests get the same turn as server-sent chunks.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Turn:
    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    finish_reason: str = ""

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.calls else "stop")


def say(text: str, finish_reason: str = "") -> Turn:
    return Turn(text=text, finish_reason=finish_reason)


def call(name: str, **args: Any) -> Turn:
    return Turn(calls=((name, args),))


def calls(*pairs: tuple[str, dict[str, Any]]) -> Turn:
    return Turn(calls=tuple(pairs))


@dataclass
class Script:
    """The turns of one run; ``tail`` makes the turns after the listed ones (a loop that
    only the framework's own budget ends)."""

    turns: list[Turn]
    tail: Callable[[int], Turn] | None = None
    served: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)

    def next(self, request: dict[str, Any]) -> Turn:
        self.requests.append(request)
        i = self.served
        self.served += 1
        if i < len(self.turns):
            return self.turns[i]
        if self.tail is not None:
            return self.tail(i)
        raise RuntimeError(f"script exhausted after {len(self.turns)} turns")


class ScriptedModel:
    def __init__(self) -> None:
        self.script: Script | None = None
        self.prefix = "run"
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def play(self, script: Script, prefix: str) -> None:
        self.script, self.prefix = script, prefix

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            assert self.script is not None, "no script loaded"
            n = self.script.served
            turn = self.script.next(body)
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            message["tool_calls"] = [
                {"id": f"call_{self.prefix}_{n}_{k}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for k, (name, args) in enumerate(turn.calls)]
        return {"id": f"chatcmpl-{self.prefix}-{n}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "scripted-1"),
                "choices": [{"index": 0, "message": message, "finish_reason": turn.finish, "logprobs": None}],
                "usage": {"prompt_tokens": 40 + 10 * n, "completion_tokens": 12, "total_tokens": 52 + 10 * n}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self.send_error(404, f"only chat completions are scripted, not {self.path}")
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                try:
                    reply = model._completion(body)
                except Exception as e:  # the script is wrong: tell the client, loudly
                    self.send_error(500, str(e))
                    return
                if body.get("stream"):
                    self._stream(reply, bool((body.get("stream_options") or {}).get("include_usage")))
                    return
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, reply: dict[str, Any], usage: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                choice = reply["choices"][0]
                msg = choice["message"]
                base = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
                delta: dict[str, Any] = {"role": "assistant", "content": msg["content"] or ""}
                if msg.get("tool_calls"):
                    delta["tool_calls"] = [dict(tc, index=i) for i, tc in enumerate(msg["tool_calls"])]
                chunks = [dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
                          dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}])]
                if usage:
                    chunks.append(dict(base, choices=[], usage=reply["usage"]))
                for c in chunks:
                    self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler
