"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1 for judge tests: no model is
bundled or downloaded; each request gets the next scripted reply (or waits, to time out)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedModel:
    def __init__(self, replies: list[str | tuple[str, float] | int], *, usage: bool = False) -> None:
        """Each reply: the assistant's content; (content, seconds to wait first); or an
        HTTP status to answer with. With ``usage`` a reply says how many prompt tokens it
        read, as OpenAI's endpoints do: here the characters of its messages over 4."""
        self.replies = list(replies)
        self.prompt_tokens: list[int] = []
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.release = threading.Event()  # set to end every wait early (teardown)
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append({"path": self.path, **body})
                model.headers.append(dict(self.headers))
                reply = model.replies.pop(0) if model.replies else "no more scripted replies"
                if isinstance(reply, int):
                    self.send_response(reply)
                    self.end_headers()
                    return
                if isinstance(reply, tuple):
                    reply, wait = reply
                    model.release.wait(wait)
                doc = {"id": "cmpl-1", "object": "chat.completion", "model": body.get("model"),
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": reply}}]}
                if usage:
                    n = sum(len(m["content"]) for m in body["messages"]) // 4
                    model.prompt_tokens.append(n)
                    doc["usage"] = {"prompt_tokens": n, "completion_tokens": 20, "total_tokens": n + 20}
                out = json.dumps(doc).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except OSError:  # the client gave up waiting: expected in timeout tests
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "ScriptedModel":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def spec(self, model: str = "judge-model") -> str:
        return f"openai:http://127.0.0.1:{self.port}/v1/{model}"
