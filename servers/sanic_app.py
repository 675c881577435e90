"""Sanic on its own server: one process, one event loop (uvloop when installed), httptools' parser.

Sanic usually runs a manager process that starts its workers as processes of
their own, even a single one; here the one worker is this process
(`single_process=True`), so SIGTERM and the lab's parent-death rule reach the
process that serves, and start-up costs one import, not two.
"""

import asyncio
import time

from sanic import Sanic
from sanic.exceptions import NotFound
from sanic.response import text as sanic_text

import _wrapper
from iolab.contract import (
    HELLO_BODY,
    MAX_MS,
    BadParameter,
    announce,
    burn_cpu,
    die_with_parent,
    exit_on_sigterm,
    parse_args,
    parse_ms,
)

LOGS = {  # Sanic's own logging setup writes its banner and access lines to stdout, which is the contract's
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"}},
    "loggers": {"sanic": {"level": "WARNING", "handlers": ["stderr"]}},
}

app = Sanic("iolab", log_config=LOGS)
app.config.RESPONSE_TIMEOUT = MAX_MS // 1000 + 30  # Sanic's 60 s would cut a /sync-sleep?ms=60000 short


def text(body, status=200):
    return sanic_text(body, status=status)  # text/plain with a Content-Length


def query_ms(request):
    return parse_ms((request.args.getlist("ms") or [None])[-1])  # the last ?ms= wins


@app.get("/")
async def hello(request):
    """Handler C: answers at once."""
    return text(HELLO_BODY)


@app.get("/sync-sleep")
async def sync_sleep(request):
    """Handler A: time.sleep blocks the loop's only thread, so every connection waits."""
    ms = query_ms(request)
    time.sleep(ms / 1000)
    return text(f"slept {ms} ms blocking the loop\n")


@app.get("/async-sleep")
async def async_sleep(request):
    """Handler B: awaiting asyncio.sleep hands the thread back to the loop while we wait."""
    ms = query_ms(request)
    await asyncio.sleep(ms / 1000)
    return text(f"waited {ms} ms without blocking\n")


@app.get("/cpu")
async def cpu(request):
    ms = query_ms(request)
    burn_cpu(ms)
    return text(f"burned {ms} ms of CPU\n")


@app.exception(BadParameter)
async def bad_parameter(request, error):
    return text(f"400 {error}\n", 400)


@app.exception(NotFound)
async def not_found(request, error):
    return text(f"404 no route for {request.path}\n", 404)


def main():
    args = parse_args(__doc__.splitlines()[0])
    die_with_parent()
    # Until Sanic's own SIGTERM handler is in place (it stops the loop, a clean exit), ours exits cleanly.
    exit_on_sigterm()
    listener = _wrapper.bind_listener(args.host, args.port)
    app.prepare(sock=listener, single_process=True, access_log=False, motd=False)
    announce(*listener.getsockname()[:2])
    Sanic.serve_single(app)


if __name__ == "__main__":
    main()
