"""The lab's common routes as one bare ASGI application, no framework.

What uvicorn (uvicorn_app.py) runs.

ASGI is the interface between an async Python server and an application: the
server calls `app(scope, receive, send)` once per request, and the application
sends the answer as two messages, its start (status and headers) and its body.
Every async framework (Starlette, FastAPI, Django's async side) sits on it, so
this file is the least any of them can cost.
"""

import asyncio
import time
from urllib.parse import parse_qs

from iolab.contract import HELLO_BODY, BadParameter, burn_cpu, parse_ms
from iolab.contract import ROUTES as CONTRACT_ROUTES


async def app(scope, receive, send):
    if scope["type"] != "http":
        return  # uvicorn_app.py turns lifespan events off; websockets are not part of the lab
    route = ROUTES.get(scope["path"])
    if route is None:
        return await answer(send, 404, f"404 no route for {scope['path']}\n")
    try:
        ms = query_ms(scope) if CONTRACT_ROUTES[scope["path"]].takes_ms else None
    except BadParameter as error:
        return await answer(send, 400, f"400 {error}\n")
    await answer(send, 200, await route(ms))


async def answer(send, status, text):
    body = text.encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def query_ms(scope):
    # The last ?ms= wins, as with Tornado's get_query_argument.
    return parse_ms(parse_qs(scope["query_string"].decode("latin-1")).get("ms", [None])[-1])


async def hello(ms):
    """Handler C: answers at once."""
    return HELLO_BODY


async def sync_sleep(ms):
    """Handler A: time.sleep blocks the loop's only thread, so every connection waits."""
    time.sleep(ms / 1000)
    return f"slept {ms} ms blocking the loop\n"


async def async_sleep(ms):
    """Handler B: awaiting asyncio.sleep hands the thread back to the loop while we wait."""
    await asyncio.sleep(ms / 1000)
    return f"waited {ms} ms without blocking\n"


async def cpu(ms):
    burn_cpu(ms)
    return f"burned {ms} ms of CPU\n"


ROUTES = {"/": hello, "/sync-sleep": sync_sleep, "/async-sleep": async_sleep, "/cpu": cpu}
