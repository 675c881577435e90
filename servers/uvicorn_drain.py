"""uvicorn whose graceful shutdown's timeout the lesson sets.

uvicorn serving apps/asgi_app.py, --timeout-graceful-shutdown set on the command line (lesson 15).
On SIGTERM uvicorn stops accepting, waits 0.1 s, then waits up to --timeout-graceful-shutdown seconds for the
requests in flight before it cancels them (uvicorn/server.py, Server.shutdown). uvicorn_app fixes it at 1 s;
here the lesson sets it, 0 included.
"""

import socket

import uvicorn

from apps.asgi_app import app
from iolab.contract import announce, die_with_parent, exit_on_sigterm, parse_args


def add_arguments(parser):
    parser.add_argument("--timeout-graceful-shutdown", type=float, default=None,
                        help="seconds SIGTERM waits for requests in flight (default: uvicorn's own, no limit)")


def main():
    args = parse_args(__doc__.splitlines()[0], add_arguments)
    timeout = args.timeout_graceful_shutdown
    if timeout is not None and not 0 <= timeout <= 60:
        raise SystemExit(f"--timeout-graceful-shutdown must be between 0 and 60 s, got {timeout}")
    die_with_parent()
    exit_on_sigterm()  # uvicorn handles SIGTERM itself, then raises it again with this handler back in place
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.create_server((args.host, args.port), family=family, backlog=1024)
    config = uvicorn.Config(app, loop="asyncio", http="h11", lifespan="off", access_log=False, log_config=None,
                            log_level="critical", server_header=False, timeout_graceful_shutdown=timeout)
    announce(*listener.getsockname()[:2])
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
