"""One aiohttp web server process serving the lab's common routes.

An event loop on asyncio, as Tornado, with aiohttp's parser.
"""

import asyncio
import signal
import socket
import time

from aiohttp import web

from iolab.contract import (
    HELLO_BODY,
    BadParameter,
    announce,
    burn_cpu,
    die_with_parent,
    parse_args,
    parse_ms,
)


def text(body, status=200):
    return web.Response(text=body, status=status, content_type="text/plain")


def query_ms(request):
    # The last ?ms= wins, as with Tornado's get_query_argument.
    values = request.query.getall("ms", [None])
    return parse_ms(values[-1])


async def hello(request):
    """Handler C: answers at once."""
    return text(HELLO_BODY)


async def sync_sleep(request):
    """Handler A: time.sleep blocks the loop's only thread, so every connection waits."""
    ms = query_ms(request)
    time.sleep(ms / 1000)
    return text(f"slept {ms} ms blocking the loop\n")


async def async_sleep(request):
    """Handler B: awaiting asyncio.sleep hands the thread back to the loop while we wait."""
    ms = query_ms(request)
    await asyncio.sleep(ms / 1000)
    return text(f"waited {ms} ms without blocking\n")


async def cpu(request):
    ms = query_ms(request)
    burn_cpu(ms)
    return text(f"burned {ms} ms of CPU\n")


async def not_found(request):
    return text(f"404 no route for {request.path}\n", status=404)


@web.middleware
async def bad_parameters_are_400s(request, handler):
    try:
        return await handler(request)
    except BadParameter as error:
        return text(f"400 {error}\n", status=400)


def make_app():
    app = web.Application(middlewares=[bad_parameters_are_400s])
    app.router.add_get("/", hello)
    app.router.add_get("/sync-sleep", sync_sleep)
    app.router.add_get("/async-sleep", async_sleep)
    app.router.add_get("/cpu", cpu)
    app.router.add_route("*", "/{anything:.*}", not_found)
    return app


async def main():
    await serve(make_app(), parse_args(__doc__.splitlines()[0]))


async def serve(app, args, **runner_options):
    """Serve `app` on args.host:args.port under the contract until SIGTERM (aiohttp_push serves through it too)."""
    die_with_parent()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    # We bind the socket ourselves and hand it over: no window between learning a port and listening on it.
    listener = socket.create_server((args.host, args.port), family=family, backlog=1024)
    # No access log: writing a line per request costs more than hello world. A request still
    # waiting at SIGTERM gets a second to finish, not aiohttp's default minute.
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0, **runner_options)
    await runner.setup()
    await web.SockSite(runner, listener).start()
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    announce(*listener.getsockname()[:2])
    try:
        await stopping.wait()
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
