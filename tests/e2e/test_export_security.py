"""The exporter speaks TLS with a CA and sends headers: a downstream collector that demands
TLS and a bearer token gets the spans; without the token they are refused for good and
counted, never silently lost."""
from __future__ import annotations

import dataclasses

from faultgate_stream.export.spans.config import ClientTLS, SpansExportConfig
from tests.certs import make_certs
from tests.e2e.downstream import downstream_config, read_spans
from tests.live.test_receivers import _request, _span, _stub
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector

TOKEN = "downstream-token-42"


def _send_run(live) -> None:
    channel, stub = _stub(live)
    stub.Export(_request(_span(11, 1, gen_ai__operation__name="invoke_agent"),
                         _span(11, 2, parent=1, name="chat")), timeout=5)
    channel.close()


def test_spans_reach_a_tls_and_token_protected_downstream_only_with_ca_and_token(live_service, tmp_path):
    certs = make_certs(tmp_path / "certs")
    port, out = free_port(), tmp_path / "out"
    out.mkdir()
    tls = ClientTLS(insecure=False, ca_file=str(certs.ca))
    with running_collector(downstream_config(port, out, TOKEN, (str(certs.server_cert), str(certs.server_key))),
                           tmp_path):
        good = live_service(dataclasses.replace(make_config(), export=SpansExportConfig(
            endpoint=f"127.0.0.1:{port}", tls=tls, headers={"authorization": f"Bearer {TOKEN}"})))
        _send_run(good)
        eventually(lambda: len(read_spans(out)) == 2, timeout=30, what="both spans downstream")
        assert good.sample("faultgate_exporter_sent_spans_total") == 2
        bad = live_service(dataclasses.replace(make_config(), export=SpansExportConfig(
            endpoint=f"127.0.0.1:{port}", tls=tls, retry_initial_interval=0.1, retry_max_interval=0.2)))
        _send_run(bad)
        eventually(lambda: bad.sample("faultgate_exporter_failed_spans_total", reason="unauthenticated") == 2,
                   timeout=30, what="the refused spans counted as failed")
    assert bad.sample("faultgate_exporter_sent_spans_total") == 0
    assert bad.sample("faultgate_exporter_queue_spans") == 0
