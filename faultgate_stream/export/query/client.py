"""A client of the verdict API (``api.py``), for the MCP tools: urllib3 (already a
dependency), the endpoint's TLS (a CA file for a private certificate) and bearer token.

Every answer the API gives is passed on as its JSON; a refusal becomes an ``ApiError``
whose message says what to change (a 401 is a token problem, a 404 a run not kept), so a
tool can hand it to the model as is.
"""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

import urllib3

from faultgate_stream.export.query.api import PREFIX

# The API answers from memory: seconds are plenty, and a tool should not hang a session.
DEFAULT_TIMEOUT_S = 10.0


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class VerdictApi:
    def __init__(self, endpoint: str, *, token: str = "", ca_file: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        if "://" not in endpoint:
            endpoint = f"http://{endpoint}"
        self.base = endpoint.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._pool = urllib3.PoolManager(ca_certs=ca_file, timeout=urllib3.Timeout(total=timeout),
                                         retries=False)

    def close(self) -> None:
        self._pool.clear()

    def _get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        query = {k: v for k, v in (params or {}).items() if v is not None and v != ""}
        url = f"{self.base}{PREFIX}{path}" + (f"?{urlencode(query)}" if query else "")
        try:
            r = self._pool.request("GET", url, headers=self._headers)
        except urllib3.exceptions.HTTPError as e:
            raise ApiError(0, f"cannot reach the verdict API at {self.base}: {e}") from None
        body = r.data.decode("utf-8", "replace")
        if r.status == 401:
            raise ApiError(401, "the verdict API refused the request (401): give the metrics endpoint's bearer "
                                "token (--token-file, or FAULTGATE_API_TOKEN)")
        try:
            doc = json.loads(body)
        except ValueError:
            raise ApiError(r.status, f"the verdict API answered {r.status} with no JSON: {body[:200]}") from None
        if r.status != 200:
            raise ApiError(r.status, str(doc.get("error", body[:200])) if isinstance(doc, dict) else body[:200])
        return doc

    def verdicts(self, **filters: Any) -> dict[str, Any]:
        """``agent``, ``verdict``, ``check``, ``since``, ``limit``: as ``/api/v1/verdicts`` takes them."""
        return self._get("/verdicts", filters)

    def run(self, trace_id: str) -> dict[str, Any]:
        return self._get(f"/runs/{quote(trace_id, safe='')}")

    def gate(self) -> dict[str, Any]:
        return self._get("/gate")
