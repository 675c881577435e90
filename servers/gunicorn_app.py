"""gunicorn serving apps/wsgi_app.py under the lab's contract.

--workers processes, each with --threads threads.
"""

import os
import selectors
import sys
import time
from pathlib import Path

import _wrapper
from _gunicorn_hooks import READY_FD
from _wrapper import count_between
from iolab.contract import MAX_MS, parse_args

HERE = Path(__file__).resolve().parent
MAX_WORKERS = 64  # each worker is a whole Python process
MAX_THREADS = 1024
MAX_KEEP_ALIVE_S = 86_400  # lesson 07 holds idle connections for as long as a run may last


def add_arguments(parser):
    parser.add_argument(
        "--workers", type=count_between(1, MAX_WORKERS), default=1, help="worker processes forked by gunicorn's arbiter"
    )
    parser.add_argument(
        "--threads", type=count_between(1, MAX_THREADS), default=1, help="threads per worker (above 1 means gthread)"
    )
    parser.add_argument(
        "--worker-class", choices=["sync", "gthread"], default="sync",
        help="sync: one request at a time per worker, no keep-alive; gthread: a thread pool per worker",
    )
    parser.add_argument(
        "--keep-alive", type=count_between(1, MAX_KEEP_ALIVE_S), default=2,
        help="seconds a gthread worker keeps an idle keep-alive connection open (gunicorn's own default: 2)",
    )


def gunicorn_command(fd, args, app="apps.wsgi_app:application", extra=()):
    """gunicorn's command line; `extra` options come after the lab's, so they win (a shorter --timeout)."""
    return [
        sys.executable, "-m", "gunicorn",
        "--bind", f"fd://{fd}",
        "--workers", str(args.workers),
        "--threads", str(args.threads),  # gunicorn switches a sync worker to gthread when this is above 1
        "--worker-class", args.worker_class,
        "--keep-alive", str(args.keep_alive),
        # A /sync-sleep may hold a sync worker for MAX_MS; gunicorn would kill it after its default 30 s.
        "--timeout", str(MAX_MS // 1000 + 30),
        "--graceful-timeout", "1",  # on SIGTERM, requests in flight get one second to finish
        "--no-control-socket",  # by default every gunicorn on the machine would share one control socket
        "--error-logfile", "-", "--log-level", "warning",  # to stderr; no access log unless asked for
        "--config", str(HERE / "_gunicorn_hooks.py"),  # also keeps gunicorn from reading a gunicorn.conf.py here
        "--pythonpath", str(HERE),
        *extra,
        app,
    ]


def wait_for_workers(ready, workers, gunicorn, timeout_s=_wrapper.READY_TIMEOUT_S):
    """Read one byte per worker from the ready pipe: the arbiter starts its workers a little apart."""
    deadline = time.monotonic() + timeout_s
    heard = 0
    with selectors.DefaultSelector() as selector:
        selector.register(ready, selectors.EVENT_READ)
        while heard < workers and time.monotonic() < deadline:
            if selector.select(deadline - time.monotonic()):
                news = os.read(ready, workers)
                if not news:  # every holder of the write end is gone: gunicorn died
                    break
                heard += len(news)
    if heard < workers:
        raise SystemExit(f"{heard} of {workers} gunicorn workers were ready after {timeout_s} s"
                         f" (gunicorn's exit code: {gunicorn.poll()})")


def serve(args, app="apps.wsgi_app:application", env=None, extra=(), pass_fds=()):
    """Run gunicorn on `app` (module:callable under servers/) until SIGTERM; `env` reaches the app's workers."""
    with _wrapper.in_charge() as programs:
        listener = _wrapper.bind_listener(args.host, args.port)
        ready, ready_to_write = os.pipe()
        gunicorn = programs.start(
            "gunicorn",
            gunicorn_command(listener.fileno(), args, app, extra),
            done_with_its_children=True,
            pass_fds=[listener.fileno(), ready_to_write, *pass_fds],
            env={**(env or {}), READY_FD: str(ready_to_write)},
        )
        os.close(ready_to_write)
        wait_for_workers(ready, args.workers, gunicorn)
        os.close(ready)
        programs.serve(listener)


def main():
    serve(parse_args(__doc__, add_arguments))


if __name__ == "__main__":
    main()
