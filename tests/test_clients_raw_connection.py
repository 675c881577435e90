"""The three raw clients hold their connections the same way.

A refusal, a hang-up or garbage is each request's named error, and nothing hangs.
"""

import contextlib
import socket
import threading

import pytest

from iolab import load, metrics

RAW_CLIENTS = {
    "closed": {"kind": "closed_raw"},
    "open": {"kind": "open", "rate_rps": 200},
    "pipelined": {"kind": "pipelined", "pipeline_depth": 4},
}
REQUESTS = 12


@contextlib.contextmanager
def hostile_server(behaviour):
    """A loopback server that reads each request, then hangs up ("hangup") or answers with something not HTTP ("garbage")."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)  # so the thread notices the end of the test
    done = threading.Event()

    def serve():
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                    if behaviour == "garbage":
                        conn.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        done.set()
        thread.join(timeout=5)
        listener.close()


@contextlib.contextmanager
def nothing_listening():
    """A loopback port bound but not listening: every connect is refused."""
    with socket.socket() as reserved:
        reserved.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{reserved.getsockname()[1]}/"


@pytest.mark.parametrize("client", RAW_CLIENTS)
@pytest.mark.parametrize("server, kind", [
    (lambda: hostile_server("hangup"), "disconnected"),
    (lambda: hostile_server("garbage"), "ProtocolError"),
    (nothing_listening, "refused"),
], ids=["hangup", "garbage", "nothing"])
@pytest.mark.timeout(60)
def test_every_request_ends_in_its_connections_error(client, server, kind):
    with server() as url:
        result = load.run_load(url, requests=REQUESTS, concurrency=3, timeout_s=5, **RAW_CLIENTS[client])
    assert len(result.samples) == REQUESTS
    assert metrics.summarize(result).error_kinds == {kind: REQUESTS}
