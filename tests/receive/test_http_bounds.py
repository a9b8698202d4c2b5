"""OTLP/HTTP under hostile input: idle connections are closed and capped, bad compression
is a clear 400 or 415, and the probes and scrapes live on an event loop of their own, so
a request being parsed holds up neither, and a scrape holds up no request."""
from __future__ import annotations

import dataclasses
import gzip
import logging
import socket
import threading
import urllib.request

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream.receive import decode, log_throttle
from faultgate_stream.receive.log_throttle import RepeatFilter, Throttle
from tests.live.test_receivers import _post, _request, _span
from tests.live_service import make_config
from tests.peers import eventually

PROTOBUF = "application/x-protobuf"


def _get(port: int, path: str) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.status


class Peer:
    """A client socket and what the server has sent it so far."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.got = b""
        self.closed = False

    def poll(self) -> bool:
        """True once the server has closed the connection."""
        self.sock.settimeout(0.02)
        while not self.closed:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                break
            except ConnectionResetError:
                data = b""
            self.got += data
            self.closed = not data
        return self.closed


def _with_receive(**receive: object):
    base = make_config()
    return dataclasses.replace(base, receive=dataclasses.replace(base.receive, **receive))


def test_idle_connections_are_closed_and_capped_while_healthz_answers(live_service):
    live = live_service(_with_receive(http_idle_timeout=1.0, http_max_connections=20))
    port, metrics = live.service.ports["http"], live.service.ports["metrics"]
    peers = [Peer(port) for _ in range(60)]
    # one that started a request and never finished its headers
    peers[0].sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
    try:
        assert _get(metrics, "/healthz") == 200
        # past the cap: answered 503 at once, then closed; the rest are closed by the idle
        # timeout (the half-sent request too)
        eventually(lambda: all(p.poll() for p in peers), timeout=30, what="every connection closed")
        refused = [p for p in peers if p.got.startswith(b"HTTP/1.1 503")]
        assert len(refused) == 40, [p.got[:20] for p in peers]
        assert all(p.got == b"" for p in peers if p not in refused)
        assert live.sample("faultgate_http_refused_connections_total", site="http") == 40
        assert _get(metrics, "/healthz") == 200
        status, _, _ = _post(live.http, _request(_span(11, 1)).SerializeToString(), PROTOBUF)
        assert status == 200  # room again once the idle ones are gone
    finally:
        for p in peers:
            p.sock.close()


def test_the_same_error_is_logged_once_per_interval_and_the_drops_are_counted():
    now = [0.0]
    logger = logging.getLogger("faultgate-test.throttled")
    logger.propagate = False
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    logger.addHandler(Keep())
    logger.addFilter(RepeatFilter(Throttle(interval=10.0, clock=lambda: now[0])))
    for _ in range(1000):
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            logger.exception("socket.accept() out of system resource")
    now[0] = 11.0
    logger.error("socket.accept() out of system resource", exc_info=OSError(24, "again"))
    assert seen == ["socket.accept() out of system resource",
                    "socket.accept() out of system resource (999 similar suppressed)"]
    # the libraries that log per connection get the filter when a host is made
    log_throttle.install()
    assert all(any(isinstance(f, RepeatFilter) for f in logging.getLogger(n).filters)
               for n in log_throttle.NOISY_LOGGERS)


def test_bad_gzip_is_a_400_with_a_message_not_an_internal_error(live_service, capsys, caplog):
    live = live_service()
    body = gzip.compress(_request(_span(12, 1)).SerializeToString())
    bad = {"garbled": body[:10] + b"\xff" * 40 + body[50:], "cut short": body[: len(body) // 2],
           "wrong checksum": body[:-8] + b"\0" * 8, "not gzip at all": b"plain bytes"}
    for what, corrupt in bad.items():
        status, _, answer = _post(live.http, corrupt, PROTOBUF, **{"Content-Encoding": "gzip"})
        assert status == 400, (what, answer)
        assert b"does not decompress as gzip" in answer, (what, answer)
    assert live.sample("faultgate_receiver_rejected_requests_total", transport="http",
                       reason="undecodable") == len(bad)
    assert live.sample("faultgate_receiver_accepted_spans_total", transport="http") == 0
    assert "Traceback" not in capsys.readouterr().out
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_an_unsupported_content_encoding_is_a_415_not_read_as_identity(live_service, caplog):
    live = live_service()
    raw = _request(_span(13, 1)).SerializeToString()  # decodable as is: the encoding must decide
    for encoding in ("snappy", "zstd", "br", "x-bogus"):
        status, _, answer = _post(live.http, raw, PROTOBUF, **{"Content-Encoding": encoding})
        assert status == 415, (encoding, answer)
        assert encoding.encode() in answer
    assert live.sample("faultgate_receiver_accepted_spans_total", transport="http") == 0
    status, _, _ = _post(live.http, gzip.compress(raw), PROTOBUF, **{"Content-Encoding": "gzip"})
    assert status == 200
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_health_and_metrics_answer_while_a_request_is_being_parsed(live_service, monkeypatch):
    """The parse is held on an event the test controls: the probes must answer meanwhile."""
    live = live_service()
    entered, release = threading.Event(), threading.Event()
    parse = decode.protobuf

    def held(body: bytes, projection=None):
        entered.set()
        release.wait(60)
        return parse(body, projection)

    monkeypatch.setattr(decode, "protobuf", held)
    answers: list[int] = []
    poster = threading.Thread(target=lambda: answers.append(
        _post(live.http, _request(_span(14, 1)).SerializeToString(), PROTOBUF)[0]))
    poster.start()
    try:
        assert entered.wait(30)
        metrics = live.service.ports["metrics"]
        assert _get(metrics, "/healthz") == 200
        assert _get(metrics, "/readyz") == 200
        assert "faultgate_receiver_accepted_spans" in live.metrics()
    finally:
        release.set()
        poster.join(30)
    assert answers == [200]


def test_a_scrape_being_rendered_holds_up_no_request(live_service):
    """The scrape is held inside a collector the test controls: a request must be
    answered meanwhile."""
    live = live_service()
    entered, release = threading.Event(), threading.Event()

    class Held(Collector):
        def collect(self):
            entered.set()
            release.wait(60)
            yield GaugeMetricFamily("faultgate_test_held", "held scrape", value=1)

    live.service.telemetry.registry.register(Held())
    scraped: list[str] = []
    scraper = threading.Thread(target=lambda: scraped.append(live.metrics()))
    scraper.start()
    try:
        assert entered.wait(30)
        status, _, _ = _post(live.http, _request(_span(15, 1)).SerializeToString(), PROTOBUF)
        assert status == 200
    finally:
        release.set()
        scraper.join(30)
    assert "faultgate_test_held 1" in scraped[0]
