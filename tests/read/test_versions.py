"""A run's version: ``gen_ai.agent.version`` on its root, else its resource's
``service.version``, read the same from OTLP/JSON and OTLP protobuf."""
from __future__ import annotations

import copy

from faultgate_stream.pipeline import assemble_runs
from faultgate_stream.read import otlp_json, otlp_proto


def _doc(resource_version: str | None, agent_version: str | None):
    attrs = [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}]
    if agent_version:
        attrs.append({"key": "gen_ai.agent.version", "value": {"stringValue": agent_version}})
    rs = {"scopeSpans": [{"spans": [
        {"traceId": "c" * 32, "spanId": "1" * 16, "name": "invoke_agent", "startTimeUnixNano": "1",
         "endTimeUnixNano": "9", "attributes": attrs},
        {"traceId": "c" * 32, "spanId": "2" * 16, "parentSpanId": "1" * 16, "name": "execute_tool x",
         "startTimeUnixNano": "2", "endTimeUnixNano": "3", "attributes": []}]}]}
    if resource_version:
        rs["resource"] = {"attributes": [{"key": "service.version", "value": {"stringValue": resource_version}}]}
    return {"resourceSpans": [rs]}


def _versions(doc):
    from_json = [r.agent_version for r in assemble_runs(otlp_json.read(copy.deepcopy(doc)))]
    request, _, _ = otlp_json.to_request(copy.deepcopy(doc))
    from_proto = [r.agent_version for r in assemble_runs(otlp_proto.read(request.SerializeToString()).spans)]
    return from_json, from_proto


def test_the_resource_service_version_is_the_fallback():
    assert _versions(_doc("2.1.0", None)) == (["2.1.0"], ["2.1.0"])


def test_the_agent_version_wins_over_the_resources():
    assert _versions(_doc("2.1.0", "canary-7")) == (["canary-7"], ["canary-7"])


def test_no_version_anywhere_is_empty():
    assert _versions(_doc(None, None)) == ([""], [""])


def test_only_root_candidates_carry_the_resource_version():
    spans = otlp_json.read(_doc("2.1.0", None))
    assert [s.attrs.get("service.version") for s in spans] == ["2.1.0", None]
