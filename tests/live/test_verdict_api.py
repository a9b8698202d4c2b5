"""The verdict API (/api/v1 on the metrics endpoint) and the MCP tools over it, against a
real service fed by the OpenTelemetry SDK's own OTLP exporter, with the endpoint's TLS and
bearer token on; the tools are called through the MCP SDK's own stdio client, which starts
``faultgate-stream mcp`` as a coding assistant would."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import ssl
import sys
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from faultgate_stream.checks.config import BindingConfig, ChecksConfig
from faultgate_stream.export.metrics.config import MetricsConfig
from faultgate_stream.export.query.config import QueryConfig
from faultgate_stream.gate.config import GateBandConfig, GateConfig
from faultgate_stream.receive.config import ServerTLS
from tests.certs import make_certs
from tests.conftest import CORPUS
from tests.genai_sdk import tool_run
from tests.live_service import make_config

TOKEN = "api-token-0123456789abcdef"
EMAIL = "jane.doe@example.com"
BAND = CORPUS / "faultgate-0.4.1" / "examples" / "gate" / "band.json"


def _runs(tracer) -> dict[str, tuple[str, str]]:
    """Four runs as an instrumented agent sends them: clean; a tool error at step 2; a path
    traversal at step 2 (the policy fires the moment its span arrives); an e-mail address
    from nowhere at step 1 (the mailer's spec: trajectory.ground, whose reason quotes it).
    Returns (trace id, the span id where a check fires) by agent."""
    runs = {"files": ([("read_file", {"path": "README.md"}, "hello", True)], 0),
            "search": ([("lookup", {"q": 1}, "found", True), ("fetch", {"id": 7}, "Error: backend down", False)], 2),
            "reader": ([("list_dir", {"path": "."}, "a b", True), ("read_file", {"path": "../../etc/passwd"}, "x", True)],
                       2),
            "mailer": ([("send_email", {"to": EMAIL, "body": "hi"}, "sent", True)], 1)}
    out = {}
    for agent, (tools, fires_at) in runs.items():
        trace_id, spans = tool_run(tracer, agent, tools)
        out[agent] = (trace_id, spans[fires_at - 1] if fires_at else "")
    return out


@pytest.fixture
def api_service(live_service, tmp_path):
    """A service with TLS and a bearer token on its metrics endpoint, a gate for every agent,
    the mailer bound to a spec; fed the four runs by the SDK. Returns (live, base URL,
    runs, certs, token file)."""
    def start(**query):
        certs = make_certs(tmp_path / "certs")
        token = tmp_path / "token"
        token.write_text(TOKEN + "\n")
        spec = tmp_path / "mailer.yaml"
        spec.write_text("tools: [send_email]\nground: true\nsecrets: false\n")
        config = dataclasses.replace(
            make_config(),
            metrics=MetricsConfig(endpoint="127.0.0.1:0", bearer_token_file=str(token),
                                  tls=ServerTLS(cert_file=str(certs.server_cert), key_file=str(certs.server_key))),
            checks=ChecksConfig(bindings=(BindingConfig(agents=("mailer",), spec=str(spec)),)),
            gate=GateConfig(bands=(GateBandConfig(agents=("*",), band=str(BAND)),)),
            query=QueryConfig(**query))
        live = live_service(config)
        provider = TracerProvider(resource=Resource.create({"service.name": "agent-app"}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=live.grpc, insecure=True),
                                                       schedule_delay_millis=100))
        runs = _runs(provider.get_tracer("test"))
        assert provider.force_flush(10_000)
        live.sink.wait_for(4)
        provider.shutdown()
        return live, f"https://127.0.0.1:{live.service.ports['metrics']}", runs, certs, token

    return start


def _get(base: str, path: str, certs, token: str | None = TOKEN) -> tuple[int, str]:
    context = ssl.create_default_context(cafile=str(certs.ca))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(base + path, headers=headers), timeout=10,
                                    context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _json(base, path, certs) -> dict:
    status, body = _get(base, path, certs)
    assert status == 200, body
    return json.loads(body)


def _metric(base: str, certs, name: str) -> str:
    _, text = _get(base, "/metrics", certs)
    return "\n".join(line for line in text.splitlines() if line.startswith(name))


def _sample(base: str, certs, name: str, **labels: str) -> float:
    """One series' value from /metrics, over the endpoint's TLS and token."""
    for line in _metric(base, certs, name + "{").splitlines():
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} series with {labels}")


def test_recent_verdicts_are_served_under_the_metrics_token_and_tls_filtered_and_masked(api_service):
    live, base, runs, certs, _ = api_service()
    assert _get(base, "/api/v1/verdicts", certs, token=None)[0] == 401
    assert _get(base, "/api/v1/verdicts", certs, token="wrong")[0] == 401
    assert _get(base, f"/api/v1/runs/{runs['mailer'][0]}", certs, token="wrong")[0] == 401
    assert _get(base, "/api/v1/gate", certs, token="wrong")[0] == 401

    everything = _json(base, "/api/v1/verdicts", certs)
    assert everything["matched"] == 4 and everything["ring"]["verdicts"] == 4
    assert {v["agent"] for v in everything["verdicts"]} == {"files", "search", "reader", "mailer"}
    failed = _json(base, "/api/v1/verdicts?verdict=failed", certs)["verdicts"]
    assert {v["agent"] for v in failed} == {"search", "reader", "mailer"}
    assert [v["agent"] for v in _json(base, "/api/v1/verdicts?verdict=clean", certs)["verdicts"]] == ["files"]
    assert [v["agent"] for v in _json(base, "/api/v1/verdicts?agent=search", certs)["verdicts"]] == ["search"]
    (policy,) = _json(base, "/api/v1/verdicts?check=policy", certs)["verdicts"]
    assert policy["agent"] == "reader" and policy["trace_id"] == runs["reader"][0]
    # fired the moment the denied call's span arrived: the finding and the result point at it
    assert [e["span_id"] for e in policy["early"]] == [runs["reader"][1]]
    assert policy["fired"][0]["span_ids"] == [runs["reader"][1]] and policy["fired"][0]["steps"] == [2]
    assert _json(base, "/api/v1/verdicts?since=10m&limit=2", certs)["returned"] == 2
    future = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert _json(base, f"/api/v1/verdicts?since={future}", certs)["matched"] == 0

    body = json.dumps(everything)
    assert EMAIL not in body and "<EMAIL>" in body  # the mailer's ground reason, masked
    (mailer,) = _json(base, f"/api/v1/runs/{runs['mailer'][0]}", certs)["runs"]
    assert mailer["verdict"] == "failed" and mailer["fired"][0]["check"] == "trajectory.ground"
    assert "<EMAIL>" in mailer["fired"][0]["reason"] and mailer["fired"][0]["steps"] == [1]
    (search,) = _json(base, f"/api/v1/runs/{runs['search'][0]}", certs)["runs"]
    assert search["fired"][0]["check"] == "unrecovered_tool_error" and search["fired"][0]["steps"] == [2]

    assert 'faultgate_query_verdicts 4.0' in _metric(base, certs, "faultgate_query_verdicts")
    assert "faultgate_query_max_verdicts 1000.0" in _metric(base, certs, "faultgate_query_max_verdicts")


def test_requests_that_can_never_succeed_get_400_or_404_naming_the_problem(api_service):
    _, base, _, certs, _ = api_service()
    for path, names in (("/api/v1/verdicts?verdict=broken", "verdict"), ("/api/v1/verdicts?colour=red", "colour"),
                        ("/api/v1/verdicts?since=yesterday", "since"), ("/api/v1/verdicts?limit=0", "limit"),
                        ("/api/v1/runs/not-a-trace-id", "trace_id")):
        status, body = _get(base, path, certs)
        assert status == 400 and json.loads(body)["error"].startswith(names), (path, body)
    status, body = _get(base, "/api/v1/runs/" + "ab" * 16, certs)
    assert status == 404 and "no verdict kept" in json.loads(body)["error"]


def test_the_ring_keeps_the_newest_verdicts_to_its_bound_and_counts_what_it_let_go(api_service):
    _, base, runs, certs, _ = api_service(max_verdicts=2)
    kept = _json(base, "/api/v1/verdicts", certs)
    assert kept["matched"] == 2 and kept["ring"] == {"verdicts": 2, "max_verdicts": 2,
                                                     "evicted": {"max_verdicts": 2, "max_bytes": 0}}
    assert 'faultgate_query_evicted_verdicts_total{reason="max_verdicts"} 2.0' in _metric(
        base, certs, "faultgate_query_evicted_verdicts")
    newest = {v["trace_id"] for v in kept["verdicts"]}
    # the two it keeps are served; the two it let go of are not found (in whatever order the
    # runs were decided: each as its own grace ended)
    for trace_id, _ in runs.values():
        assert _get(base, f"/api/v1/runs/{trace_id}", certs)[0] == (200 if trace_id in newest else 404)


async def _tools(command: list[str], calls: list[tuple[str, dict]]) -> tuple[list[str], list]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = sorted(t.name for t in (await session.list_tools()).tools)
        results = [await session.call_tool(name, args) for name, args in calls]
    return names, results


def test_the_mcp_tools_answer_from_the_api_through_the_sdks_own_client(api_service):
    live, base, runs, certs, token = api_service()
    command = [sys.executable, "-m", "faultgate_stream.cli.main", "mcp", "--endpoint", base,
               "--token-file", str(token), "--ca-file", str(certs.ca)]
    names, (recent, by_check, explained, gate) = asyncio.run(_tools(command, [
        ("recent_failures", {}), ("recent_failures", {"check": "unrecovered_tool_error"}),
        ("explain_run", {"trace_id": runs["mailer"][0]}), ("gate_status", {})]))
    assert names == ["explain_run", "gate_status", "recent_failures"]

    assert not recent.is_error
    assert {f["agent"] for f in recent.structured_content["failures"]} == {"search", "reader", "mailer"}
    assert [f["agent"] for f in by_check.structured_content["failures"]] == ["search"]

    text = explained.structured_content["explanation"]
    assert "trajectory.ground (warn) at step(s) 1" in text and "<EMAIL>" in text
    everything = json.dumps([r.structured_content for r in (recent, by_check, explained, gate)]) + "".join(
        c.text for r in (recent, by_check, explained, gate) for c in r.content)
    assert EMAIL not in everything

    # the same verdict the gate's gauges carry, for every gated agent
    windows = {w["agent"]: w for w in gate.structured_content["windows"]}
    assert gate.structured_content["configured"] and set(windows) == {"files", "search", "reader", "mailer"}
    for agent, w in windows.items():
        assert _sample(base, certs, "faultgate_gate_verdict", agent=agent, verdict=w["verdict"].lower()) == 1
        assert w["window_runs"] == 1 and w["band"] == pytest.approx(
            [_sample(base, certs, "faultgate_gate_band_min", agent=agent),
             _sample(base, certs, "faultgate_gate_band_max", agent=agent)])


def test_a_bad_token_makes_every_tool_say_401_and_an_unknown_run_says_it_is_not_kept(api_service, tmp_path):
    _, base, _, certs, _ = api_service()
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token\n")
    command = [sys.executable, "-m", "faultgate_stream.cli.main", "mcp", "--endpoint", base,
               "--token-file", str(wrong), "--ca-file", str(certs.ca)]
    _, results = asyncio.run(_tools(command, [("recent_failures", {}), ("explain_run", {"trace_id": "ab" * 16}),
                                              ("gate_status", {})]))
    for r in results:
        assert r.is_error and "401" in r.content[0].text
    good = command[:-4] + ["--token-file", str(tmp_path / "token"), "--ca-file", str(certs.ca)]
    _, (missing,) = asyncio.run(_tools(good, [("explain_run", {"trace_id": "ab" * 16})]))
    assert missing.is_error and "no verdict kept" in missing.content[0].text
