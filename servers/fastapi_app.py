"""FastAPI under uvicorn, the server a student writes, under the lab's contract.

FastAPI runs an `async def` endpoint on the event loop and a `def` endpoint in a
thread from anyio's pool, at most 40 at once by default (--threads K changes
that limit). So /sync-sleep (a `def` endpoint calling time.sleep) serves 40 at
once, /async-sleep awaits asyncio.sleep on the loop, and /blocking-sleep is the
mistake: an `async def` endpoint calling time.sleep, which holds the loop and
serves one request at a time. /cpu is a `def` endpoint, as FastAPI advises for
blocking work. uvicorn_app.serve runs it, with the same --loop and --http.
"""

import asyncio
import contextlib
import time

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from starlette.exceptions import HTTPException

import uvicorn_app
from iolab.contract import HELLO_BODY, BadParameter, burn_cpu, parse_args
from iolab.contract import parse_ms as contract_parse_ms

DEFAULT_THREADS = 40  # anyio's own default: anyio/_backends/_asyncio.py:3257, `CapacityLimiter(40)`


def build_app(threads):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        # anyio keeps one default limiter per event loop (a RunVar, anyio/_backends/_asyncio.py:2308), made on first
        # use as CapacityLimiter(40) (line 3257). Starlette's run_in_threadpool (starlette/concurrency.py:34) runs
        # every `def` endpoint through anyio.to_thread.run_sync with that limiter (fastapi/routing.py:383), so
        # setting its tokens here, on the server's own loop before any request, is what --threads changes.
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        yield

    app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)

    @app.exception_handler(HTTPException)
    async def plain_errors(request, error):
        # FastAPI answers JSON by default; the contract's 404 is one line of text naming the path.
        if error.status_code == 404:
            return PlainTextResponse(f"404 no route for {request.url.path}\n", status_code=404)
        return PlainTextResponse(f"{error.status_code} {error.detail}\n", status_code=error.status_code)

    @app.exception_handler(BadParameter)
    async def bad_parameter(request, error):
        return PlainTextResponse(f"400 {error}\n", status_code=400)

    @app.get("/", response_class=PlainTextResponse)
    async def hello():
        """Handler C: answers at once."""
        return HELLO_BODY

    @app.get("/sync-sleep", response_class=PlainTextResponse)
    def sync_sleep(request: Request):
        """Handler A written as FastAPI wants it: a `def`, so it sleeps in a pool thread, not on the loop."""
        ms = parse_ms(request)
        time.sleep(ms / 1000)
        return f"slept {ms} ms in a pool thread\n"

    @app.get("/async-sleep", response_class=PlainTextResponse)
    async def async_sleep(request: Request):
        """Handler B: awaiting asyncio.sleep hands the loop back while we wait."""
        ms = parse_ms(request)
        await asyncio.sleep(ms / 1000)
        return f"waited {ms} ms without blocking\n"

    @app.get("/blocking-sleep", response_class=PlainTextResponse)
    async def blocking_sleep(request: Request):
        """The mistake: time.sleep inside an `async def` holds the loop, so every other request waits."""
        ms = parse_ms(request)
        time.sleep(ms / 1000)
        return f"slept {ms} ms blocking the loop\n"

    @app.get("/cpu", response_class=PlainTextResponse)
    def cpu(request: Request):
        ms = parse_ms(request)
        burn_cpu(ms)
        return f"burned {ms} ms of CPU\n"

    return app


def parse_ms(request):
    # Read by hand, not as a typed parameter: FastAPI would answer a bad value with a 422 and JSON, the contract
    # with a 400 and one line. The last ?ms= wins, as with Tornado's get_query_argument.
    values = request.query_params.getlist("ms")
    return contract_parse_ms(values[-1] if values else None)


def main():
    def add_arguments(parser):
        uvicorn_app.add_arguments(parser)
        parser.add_argument(
            "--threads", type=int, default=DEFAULT_THREADS,
            help=f"`def` endpoints run at once in anyio's thread pool (default {DEFAULT_THREADS}, anyio's own)",
        )

    args = parse_args(__doc__.splitlines()[0], add_arguments)
    if not 1 <= args.threads <= 1000:
        raise SystemExit(f"--threads must be between 1 and 1000, got {args.threads}")
    uvicorn_app.serve(build_app(args.threads), args, lifespan="on")  # the lifespan sets the limit on the server's loop


if __name__ == "__main__":
    main()
