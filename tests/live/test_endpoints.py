"""The metrics port: exposition by content negotiation, liveness and readiness."""
from __future__ import annotations

import urllib.request

from tests.live_service import OPENMETRICS


def _get(port: int, path: str, accept: str = "") -> tuple[int, str, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status, r.headers["Content-Type"], r.read().decode()


def test_health_and_readiness_answer_once_started(live_service):
    live = live_service()
    port = live.service.ports["metrics"]
    assert _get(port, "/healthz")[0] == 200
    assert _get(port, "/readyz")[:1] == (200,)


def test_exemplars_appear_only_in_openmetrics_exposition(live_service):
    from tests.live.test_receivers import _request, _span, _stub

    live = live_service()
    channel, stub = _stub(live)
    stub.Export(_request(_span(9, 1, gen_ai__operation__name="invoke_agent")), timeout=5)
    channel.close()
    live.sink.wait_for(1)
    port = live.service.ports["metrics"]
    _, plain_type, plain = _get(port, "/metrics")
    _, om_type, om = _get(port, "/metrics", OPENMETRICS)
    assert plain_type.startswith("text/plain") and "# {" not in plain
    assert om_type.startswith("application/openmetrics-text") and om.rstrip().endswith("# EOF")
    runs = next(line for line in om.splitlines() if line.startswith("faultgate_runs_total{"))
    assert f'trace_id="{(9).to_bytes(16, "big").hex()}"' in runs and 'span_id="0000000000000001"' in runs
