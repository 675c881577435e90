"""Lesson 12's section 6: nginx_ws_proxy's headers and timeouts.

Its headers and read timeout, and the section's claims.
"""

import socket
import time
import urllib.error
import urllib.request

import pytest

from iolab import registry, servers
from iolab.claims import Claims, ClaimsFailed
from iolab.lessons.long_lived import proxy

needs_nginx = pytest.mark.skipif(registry.get("nginx_ws_proxy").missing() is not None,
                                 reason=str(registry.get("nginx_ws_proxy").missing()))


@needs_nginx
def test_an_upstream_silent_past_the_read_timeout_gets_504_at_the_timeout():
    # Any lab server will do as the upstream: tornado_app's /async-sleep stays silent for as long as it is asked.
    with servers.serve("nginx_ws_proxy", upstream="tornado_app", read_timeout_s=1) as server:
        assert urllib.request.urlopen(server.url + "/async-sleep?ms=100", timeout=5).status == 200
        began = time.monotonic()
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(server.url + "/async-sleep?ms=3000", timeout=5)
        took = time.monotonic() - began
    assert raised.value.code == 504 and 1.0 <= took < 3.0, f"{raised.value.code} after {took:.2f} s"


@needs_nginx
@pytest.mark.parametrize(("options", "words"), [
    ({"upstream": "nginx_proxy"}, ["--upstream", "not itself nginx"]),
    ({"upstream": "redis_server"}, ["--upstream", "not itself nginx"]),
    ({"upgrade_headers": "maybe"}, ["--upgrade-headers", "maybe"]),
    ({"read_timeout_s": 0}, ["--read-timeout-s", "must be between 1 and"]),
])
def test_bad_options_are_refused_by_name(options, words):
    with pytest.raises(servers.ServerError) as raised:
        servers.start("nginx_ws_proxy", **options)
    for word in words:
        assert word in str(raised.value)
    assert not servers.running()


@pytest.fixture(scope="module")
def result():
    if proxy.missing():
        pytest.skip(proxy.missing())
    return proxy.run(read_timeout_s=1)


def test_the_section_keeps_its_claims_through_nginx(result, capsys):
    claims = Claims("12-long-lived-connections")
    proxy.add_claims(claims, result)
    claims.report()
    out = capsys.readouterr().out
    assert "✗" not in out and "101" in out and "504" in out


def test_a_websocket_that_opened_without_the_headers_is_named(result):
    broken = {**result, "upgrade": {**result["upgrade"], "off": {**result["upgrade"]["on"]}}}
    claims = Claims("12-long-lived-connections")
    proxy.add_claims(claims, broken)
    with pytest.raises(ClaimsFailed, match="without the headers, nginx answered 'HTTP/1.1 101"):
        claims.report()


def test_a_missing_push_server_skips_the_section_with_the_reason(monkeypatch):
    monkeypatch.delitem(registry.SERVERS, proxy.UPSTREAM, raising=False)
    found = proxy.run(read_timeout_s=1)
    assert "tornado_push" in found["skipped"]
    claims = Claims("12-long-lived-connections")
    proxy.add_claims(claims, found)
    assert claims.report() == 0


@needs_nginx
def test_an_event_stream_passes_through_nginx_unbuffered():
    if proxy.missing():
        pytest.skip(proxy.missing())
    # Buffered, the event would sit in nginx until its buffer filled: the socket's timeout would end the test.
    with servers.serve("nginx_ws_proxy") as server, socket.create_connection(("127.0.0.1", server.port), timeout=5) as sse:
        sse.sendall(b"GET /sse HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            head += sse.recv(4096)
        assert b" 200 " in head.split(b"\r\n", 1)[0] and b"text/event-stream" in head
        urllib.request.urlopen(server.url + "/publish?size=100", timeout=5).read()
        event = head.split(b"\r\n\r\n", 1)[1]
        while b"data: " not in event:
            event += sse.recv(4096)
    assert b'"seq": 1' in event or b'"seq":1' in event, event[:200]
