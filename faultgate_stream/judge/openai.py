"""A judge on any OpenAI-compatible chat endpoint: ``openai:http://host:port/v1/MODEL``.

The model is the last path segment; the rest is the API base (``/chat/completions`` is
appended). A key, when the endpoint wants one, comes from ``FAULTGATE_JUDGE_API_KEY``
(never from the command line, where ``ps`` would show it). Temperature 0 and a JSON
answer; a reply that is not that JSON is no answer (``JudgeError``), not "not detected".
"""
from __future__ import annotations

import dataclasses
import json
import os
from urllib.parse import urlsplit

import urllib3

from faultgate_stream.judge.contract import Judgement, JudgeError, JudgeTimeout

KEY_ENV = "FAULTGATE_JUDGE_API_KEY"
SYSTEM = ("You judge one run of an AI agent from its trace. {question}\n"
          'Reply with JSON only: {{"detected": true or false, "confidence": 0.0 to 1.0, "reason": "one sentence"}}')
MAX_REASON = 200
MAX_REPLY_BYTES = 1 << 20


class OpenAIJudge:
    remote = True
    budget: int | None = None

    def __init__(self, spec: str, *, timeout: float = 30.0, key: str | None = None) -> None:
        url = spec.removeprefix("openai:")
        parts = urlsplit(url)
        base, _, model = parts.path.rstrip("/").rpartition("/")
        if parts.scheme not in ("http", "https") or not parts.netloc or not model or not base:
            raise ValueError(f"judge {spec!r}: use openai:http(s)://HOST[:PORT]/PATH/MODEL, "
                             "e.g. openai:http://127.0.0.1:8000/v1/my-model")
        self.name = f"openai:{model}"
        self.model = model
        self.url = f"{parts.scheme}://{parts.netloc}{base}/chat/completions"
        self._headers = {"Content-Type": "application/json"}
        key = key if key is not None else os.environ.get(KEY_ENV, "")
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        # one try, bounded: a judge that does not answer in time leaves its question undecided
        self._http = urllib3.PoolManager(maxsize=4, retries=False,
                                         timeout=urllib3.Timeout(connect=min(timeout, 5.0), read=timeout))

    def ask(self, state: str, question: str) -> Judgement:
        body = {"model": self.model, "temperature": 0, "max_tokens": 300,
                "messages": [{"role": "system", "content": SYSTEM.format(question=question)},
                             {"role": "user", "content": state}]}
        try:
            r = self._http.request("POST", self.url, body=json.dumps(body).encode(), headers=self._headers,
                                   preload_content=False)
            data = r.read(MAX_REPLY_BYTES + 1)
            r.release_conn()
        except urllib3.exceptions.TimeoutError as e:
            raise JudgeTimeout(f"{self.name}: no answer from {self.url}: {type(e).__name__}") from e
        except urllib3.exceptions.HTTPError as e:
            raise JudgeError(f"{self.name}: no answer from {self.url}: {type(e).__name__}") from e
        if r.status != 200:
            raise JudgeError(f"{self.name}: HTTP {r.status} from {self.url}")
        if len(data) > MAX_REPLY_BYTES:
            raise JudgeError(f"{self.name}: reply larger than {MAX_REPLY_BYTES} bytes")
        try:
            reply = json.loads(data)
            content = reply["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise JudgeError(f"{self.name}: not a chat completion") from e
        return dataclasses.replace(parse_answer(self.name, content), prompt_tokens=_prompt_tokens(reply))

    def close(self) -> None:
        self._http.clear()


def _prompt_tokens(reply: object) -> int | None:
    """``usage.prompt_tokens`` of a chat completion, when it is a whole number."""
    usage = reply.get("usage") if isinstance(reply, dict) else None
    n = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def parse_answer(name: str, content: str) -> Judgement:
    """The JSON verdict in a reply, code fences allowed around it."""
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        d = json.loads(text)
        detected, confidence = d["detected"], float(d.get("confidence", 1.0))
    except (ValueError, KeyError, TypeError) as e:
        raise JudgeError(f"{name}: the reply is not the JSON verdict asked for: {content[:80]!r}") from e
    if not isinstance(detected, bool) or not 0.0 <= confidence <= 1.0:
        raise JudgeError(f"{name}: detected must be true/false and confidence within 0..1: {content[:80]!r}")
    return Judgement(detected, confidence, str(d.get("reason", ""))[:MAX_REASON])


def get_judge(spec: str, *, timeout: float = 30.0) -> OpenAIJudge:
    if spec.startswith("openai:"):
        return OpenAIJudge(spec, timeout=timeout)
    raise ValueError(f"unknown judge {spec!r}; use openai:http(s)://HOST[:PORT]/PATH/MODEL")
