"""A Celery worker pool running apps/backend_tasks.py, under the lab's contract: --pool and --concurrency, on the lab's Redis.

A worker listens on no port of its own: it takes tasks from the broker. This
wrapper serves a tiny status port instead, the one its LISTENING line names,
and prints that line only once the worker has said it consumes from the queue
(Celery's `worker_ready` signal, which writes a byte into a pipe, as
gunicorn's workers do for gunicorn_app.py). `GET /` answers `hello world`,
`GET /status` the worker's pool, concurrency, pid and broker as JSON.
Without `--broker` it starts a Redis of its own (redis_server.py) in its
process group, so it also runs alone. It leads a process group holding the
worker and its pool's children: SIGTERM stops them (Celery's warm shutdown,
then SIGKILL after 3 s), and they all die with the wrapper's parent.
"""

import http.server
import json
import os
import selectors
import subprocess
import sys
import threading
import time
from pathlib import Path

import _wrapper
from _backend_client import check_broker
from _wrapper import count_between
from apps.backend_tasks import BROKER_ENV, READY_FD_ENV
from iolab.contract import HELLO_BODY, parse_args

HERE = Path(__file__).resolve().parent
POOLS = ("threads", "prefork", "gevent", "solo")
MAX_CONCURRENCY = 1000


def add_arguments(parser):
    parser.add_argument(
        "--broker", default=None,
        help="the lab's Redis, redis://127.0.0.1:PORT/0; without it the wrapper starts a Redis of its own",
    )
    parser.add_argument("--pool", choices=POOLS, default="threads", help="how the worker runs tasks at once")
    parser.add_argument(
        "--concurrency", type=count_between(1, MAX_CONCURRENCY), default=4,
        help="tasks the worker runs at once: c, the backend tier's servers",
    )


def worker_command(args):
    return [
        sys.executable, "-m", "celery", "-A", "apps.backend_tasks", "worker",
        "--pool", args.pool,
        "--concurrency", str(args.concurrency),
        "--prefetch-multiplier", "1",  # one task reserved per slot: the rest wait in the broker's list
        "--without-mingle", "--without-gossip", "--without-heartbeat",  # no chatter with other workers: there are none
        "--hostname", f"lab{os.getpid()}@%h",
        "--loglevel", "WARNING",
    ]


def wait_until_ready(ready, worker, timeout_s=_wrapper.READY_TIMEOUT_S):
    """Block until the worker's ready byte arrives; exit if it dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(ready, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(min(0.1, deadline - time.monotonic())) and os.read(ready, 1):
                return
            if worker.poll() is not None:
                break
    raise SystemExit(
        f"the Celery worker was not ready within {timeout_s} s (exit code {worker.poll()}); see its log above"
    )


def status_server(listener, status):
    """The wrapper's status port: `/` as the contract asks, `/status` as JSON; a thread serves it."""

    class Status(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            if self.path == "/":
                self.answer(200, HELLO_BODY, "text/plain")
            elif self.path == "/status":
                self.answer(200, json.dumps(status) + "\n", "application/json")
            else:
                self.answer(404, f"404 no route for {self.path}\n", "text/plain")

        def answer(self, code, text, kind):
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(listener.getsockname()[:2], Status, bind_and_activate=False)
    server.socket.close()
    server.socket = listener
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="status", daemon=True).start()
    return server


def main():
    args = parse_args(__doc__, add_arguments)
    with _wrapper.in_charge() as programs:
        broker = args.broker and check_broker(args.broker)
        if broker is None:
            redis = programs.start("redis", [sys.executable, str(HERE / "redis_server.py"), "--port", "0"],
                                   stdout=subprocess.PIPE)
            host, port = _wrapper.read_listening(redis)
            broker = f"redis://{host}:{port}/0"
        listener = _wrapper.bind_listener(args.host, args.port)
        ready, ready_to_write = os.pipe()
        worker = programs.start(
            "celery worker", worker_command(args), cwd=str(HERE), pass_fds=[ready_to_write],
            env={BROKER_ENV: broker, READY_FD_ENV: str(ready_to_write),
                 "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))},
        )
        os.close(ready_to_write)
        wait_until_ready(ready, worker)
        os.close(ready)
        status = {"pool": args.pool, "concurrency": args.concurrency, "worker_pid": worker.pid, "broker": broker}
        status_server(listener, status)
        programs.announce_and_run(*listener.getsockname()[:2])


if __name__ == "__main__":
    main()
