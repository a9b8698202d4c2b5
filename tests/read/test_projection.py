"""The live reader's attribute projection (read/projection.py): a record read with the
service's projection is the record read with every attribute, but for the attributes
nothing reads afterwards; verdicts are the same; what a configured check reads is kept,
and a reload that reads more widens what the receivers keep before it judges anything.

The traces are the conformance corpus's (real frameworks through their real
instrumentation) and faultgate's gate files, sent as the protobuf a collector sends.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from faultgate_stream.checks.config import BindingConfig, ChecksConfig
from faultgate_stream.checks.registry import select
from faultgate_stream.model.records import NO_ATTRS
from faultgate_stream.model.run import ATTRIBUTES_READ
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read import otlp_json, otlp_proto
from faultgate_stream.read.conventions import READ_NAMES, READ_PREFIXES
from faultgate_stream.read.projection import Projection
from faultgate_stream.verdict.ruleset import Ruleset
from tests.conformance.score import families
from tests.live.test_receivers import _request, _span, _stub
from tests.live_service import make_config

GATE = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "faultgate-0.4.1" / "examples" / "gate"
TRACE_FILES = [f / "traces.json" for f in families()] + sorted(
    p for p in GATE.glob("*.json") if p.stat().st_size > 10_000)


def _protobuf(path: Path) -> bytes:
    request, _, problem = otlp_json.to_request(json.loads(path.read_text()))
    assert not problem, problem
    return request.SerializeToString()


def _service_projection() -> Projection:
    # every check the registry has, as a service enabling all of them would read
    return Projection(Ruleset(tuple(select(None))).attributes)


def test_there_are_real_framework_traces_to_read():
    assert len(TRACE_FILES) >= 12 and all(p.is_file() for p in TRACE_FILES)


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_projected_record_is_the_full_record_without_what_nothing_reads(path):
    data = _protobuf(path)
    projection = _service_projection()
    full, projected = otlp_proto.read(data).spans, otlp_proto.read(data, projection).spans
    assert len(full) == len(projected) > 0
    dropped = 0
    for f, p in zip(full, projected):
        # every field the conventions derive is the same: READ_NAMES holds all they read
        assert p._replace(attrs=NO_ATTRS, size=0) == f._replace(attrs=NO_ATTRS, size=0)
        assert dict(p.attrs) == {k: v for k, v in f.attrs.items() if k in projection.kept}
        dropped += len(f.attrs) - len(p.attrs)
    assert dropped > 0  # the corpus does carry attributes nothing reads
    checks = select(None)
    assert check_spans([projected], checks) == check_spans([full], select(None))


def test_the_run_and_the_configured_checks_name_what_they_read(tmp_path):
    policy = tmp_path / "p.json"
    policy.write_text(json.dumps({"identity": {"arg": "customer_id", "session_attr": "tenant.principal"},
                                  "confirmation": {"tools": ["issue_refund"], "by": "confirm_refund"}}))
    from faultgate_stream.verdict import ruleset

    rs = ruleset.build(ChecksConfig(bindings=(BindingConfig(policy=str(policy)),)))
    assert {"tenant.principal", "faultgate.confirmed"} <= rs.attributes
    assert ATTRIBUTES_READ <= rs.attributes
    assert "tenant.principal" not in Ruleset(tuple(select(None))).attributes


def test_the_conventions_read_names_cover_their_own_prefix_families():
    # what build_span reads by prefix (indexed OpenLLMetry content, flattened OpenInference
    # messages) is read whole, never cut down to named keys
    assert all(p.endswith(".") for p in READ_PREFIXES)
    assert not any(n.startswith(READ_PREFIXES) for n in READ_NAMES)


def _identity_policy(path: Path, attr: str) -> None:
    path.write_text(json.dumps({"identity": {"arg": "customer_id", "session_attr": attr}}))


def _run(trace: int, attr: str, customer: str):
    root = _span(trace, 1, name="invoke_agent support", gen_ai__operation__name="invoke_agent",
                 gen_ai__agent__name="support", **{attr.replace(".", "__"): "c-1"})
    call = _span(trace, 2, parent=1, name="execute_tool issue_refund", gen_ai__operation__name="execute_tool",
                 gen_ai__tool__name="issue_refund", gen_ai__tool__call__arguments=json.dumps({"customer_id": customer}))
    return [call, root]


def test_a_live_service_reads_the_attribute_a_policy_names_and_a_reload_widens_it(live_service, tmp_path):
    """Through gRPC and the service's own receivers: the identity's session attribute is
    not one the run or the default checks read, so only the policy's declaration keeps it."""
    policy = tmp_path / "identity.json"
    _identity_policy(policy, "tenant.principal")
    cfg = make_config(root_grace=0.5)
    live = live_service(dataclasses.replace(cfg, checks=ChecksConfig(bindings=(BindingConfig(policy=str(policy)),))))
    channel, stub = _stub(live)
    stub.Export(_request(*_run(11, "tenant.principal", "c-1")), timeout=5)   # the same customer: allowed
    stub.Export(_request(*_run(12, "tenant.principal", "c-2")), timeout=5)   # another's: refused
    first = {v.key.trace_id[-1]: v for v in live.sink.wait_for(2)}
    _identity_policy(policy, "org.user")
    assert live.service.reload() is True
    assert "org.user" in live.service.reader.projection.kept
    assert "tenant.principal" in live.service.reader.projection.kept  # never narrowed
    stub.Export(_request(*_run(13, "org.user", "c-1")), timeout=5)
    stub.Export(_request(*_run(14, "org.user", "c-2")), timeout=5)
    channel.close()
    later = {v.key.trace_id[-1]: v for v in live.sink.wait_for(4)}
    fired = {k: sorted(r.check for r in v.fired) for k, v in {**first, **later}.items()}
    assert fired == {"b": [], "c": ["policy"], "d": [], "e": ["policy"]}, {k: v.results for k, v in later.items()}
    reasons = [r.reason for r in later["e"].fired]
    assert any("org.user" in r and "c-2" in r for r in reasons), reasons
