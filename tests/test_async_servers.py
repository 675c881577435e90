"""aiohttp_app, fastapi_app and uvicorn_app under the server contract.

aiohttp_app, fastapi_app and uvicorn_app (with each loop and parser) under the server contract, and answering
pipelined requests in order.
"""

import socket
import subprocess

import pytest
from test_servers import follows_contract

from iolab import registry, servers
from iolab.http1 import AnswerReader, get_request

TIMEOUT_S = 10
UVICORN_VARIANTS = [("asyncio", "h11"), ("uvloop", "httptools"), ("asyncio", "httptools"), ("uvloop", "h11")]
UVICORN_IDS = ["-".join(variant) for variant in UVICORN_VARIANTS]
SERVERS = [("aiohttp_app", {}), ("fastapi_app", {})] + [
    ("uvicorn_app", {"loop": loop, "http": http}) for loop, http in UVICORN_VARIANTS
]
SERVER_IDS = ["aiohttp_app", "fastapi_app"] + [f"uvicorn_app-{name}" for name in UVICORN_IDS]


def needs(name):
    reason = registry.get(name).missing()
    if reason:
        pytest.skip(reason)


@pytest.mark.parametrize("variant", UVICORN_VARIANTS, ids=UVICORN_IDS)
def test_every_uvicorn_variant_follows_the_contract(variant):
    loop, http = variant
    follows_contract("uvicorn_app", "--loop", loop, "--http", http)


@pytest.mark.parametrize("name, options", SERVERS, ids=SERVER_IDS)
def test_pipelined_requests_are_answered_in_order(name, options):
    """Some servers drop or reorder pipelined requests (the Japronto article's caveat); these must not."""
    needs(name)
    paths = ["/async-sleep?ms=150", "/", "/missing-1", "/async-sleep?ms=10", "/cpu?ms=0", "/missing-2"]
    with servers.serve(name, **options) as server:
        with socket.create_connection((server.host, server.port), timeout=TIMEOUT_S) as sock:
            sock.sendall(b"".join(get_request(path) for path in paths))
            reader = AnswerReader(sock)
            answers = [reader.read() for _ in paths]
        server.check()
    assert [(status, body) for status, _, body in answers] == [
        (200, "waited 150 ms without blocking\n"),
        (200, "hello world\n"),
        (404, "404 no route for /missing-1\n"),
        (200, "waited 10 ms without blocking\n"),
        (200, "burned 0 ms of CPU\n"),
        (404, "404 no route for /missing-2\n"),
    ]


def test_uvicorn_refuses_a_loop_it_does_not_know(python):
    completed = subprocess.run(
        [python, str(servers.SERVERS_DIR / "uvicorn_app.py"), "--loop", "trio"], capture_output=True, text=True, timeout=20
    )
    assert completed.returncode != 0 and "--loop" in completed.stderr and completed.stdout == ""
