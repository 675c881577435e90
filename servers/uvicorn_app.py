"""uvicorn serving apps/asgi_app.py under the lab's contract.

uvicorn is the server most async Python applications run on in production. The
event loop and the HTTP parser are chosen by argument, as on uvicorn's own
command line: --loop asyncio|uvloop|auto and --http h11|httptools|auto (auto
picks uvloop and httptools when they are installed). We bind the listening
socket ourselves and hand it to uvicorn, so the port we announce is already
listening: no window in which another process could take it.
"""

import importlib.util
import socket

import uvicorn

from apps.asgi_app import app
from iolab.contract import announce, die_with_parent, exit_on_sigterm, parse_args

NEEDS = {"uvloop": "uvloop", "httptools": "httptools"}


def add_arguments(parser):
    parser.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto", help="the event loop (default auto)")
    parser.add_argument("--http", choices=["auto", "h11", "httptools"], default="auto", help="the HTTP parser (default auto)")


def serve(app, args, lifespan="off"):
    """Run uvicorn on the ASGI `app` until SIGTERM, with the loop and parser `args` name.

    lifespan="on" runs the app's startup on the server's own loop (fastapi_app sets its thread limit there).
    """
    for option, choice in (("loop", args.loop), ("http", args.http)):
        if choice in NEEDS and importlib.util.find_spec(NEEDS[choice]) is None:
            raise SystemExit(f"--{option} {choice} needs the Python package {NEEDS[choice]!r}, which is not installed")
    die_with_parent()
    # uvicorn catches SIGTERM itself, shuts down, then raises it again with our handler back in place:
    # that last raise becomes SystemExit(0), a clean exit.
    exit_on_sigterm()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.create_server((args.host, args.port), family=family, backlog=1024)
    config = uvicorn.Config(
        app,
        loop=args.loop,
        http=args.http,
        lifespan=lifespan,
        access_log=False,  # a log line per request costs more than hello world
        log_config=None,  # uvicorn's own logging setup would send access logs to stdout, which is the contract's
        log_level="warning",
        server_header=False,
        timeout_graceful_shutdown=1,  # a request still waiting at SIGTERM gets a second, not forever
    )
    announce(*listener.getsockname()[:2])
    uvicorn.Server(config).run(sockets=[listener])


def main():
    serve(app, parse_args(__doc__.splitlines()[0], add_arguments))

if __name__ == "__main__":
    main()
