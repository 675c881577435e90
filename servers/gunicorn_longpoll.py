"""gunicorn's sync workers holding Flask long polls: one parked poll per worker.

GET /poll?cursor=K parks its worker until a message after K is published
(without a cursor: until the next one), then answers JSON {"seq", "messages",
"pid"}. GET /publish publishes one message, when a worker is free to serve it;
SIGUSR1 to this wrapper publishes one too, from outside the web tier, when
every worker is parked. GET /stats answers {"published"}. --timeout is
gunicorn's: a worker silent for longer is killed, and its log says so.
"""

import fcntl
import json
import mmap
import os
import signal
import struct
import time

import _wrapper
import gunicorn_app
from iolab.contract import HELLO_BODY, MAX_MS, parse_args

BOARD_FD_ENV = "IOLAB_LONGPOLL_BOARD_FD"  # the shared counter, inherited by gunicorn and forked into every worker
LOOK_EVERY_S = 0.005  # how often a parked poll looks at the counter
MAX_TIMEOUT_S = 3600
SEQ = struct.Struct("q")


class Board:
    """The count of published messages, in memory every process shares (a memfd made before gunicorn starts).

    A lock-free read and a lockf-guarded write: a worker that gunicorn kills
    while parked holds no lock, and the kernel drops a dead writer's lockf.
    """

    def __init__(self, fd):
        self.fd = fd
        self.memory = mmap.mmap(fd, SEQ.size)

    @classmethod
    def create(cls):
        fd = os.memfd_create("iolab-longpoll", 0)  # inheritable: pass_fds keeps it open in gunicorn
        os.ftruncate(fd, SEQ.size)
        return cls(fd)

    def read(self):
        return SEQ.unpack_from(self.memory)[0]

    def publish(self):
        fcntl.lockf(self.fd, fcntl.LOCK_EX)
        try:
            seq = self.read() + 1
            SEQ.pack_into(self.memory, 0, seq)
            return seq
        finally:
            fcntl.lockf(self.fd, fcntl.LOCK_UN)


def wait_for_message(board, cursor):
    """Park until a message after `cursor` is published: the whole worker waits here, with nothing else to run."""
    deadline = time.monotonic() + MAX_MS / 1000  # no request of the lab waits for ever
    while (seq := board.read()) <= cursor and time.monotonic() < deadline:
        time.sleep(LOOK_EVERY_S)
    return seq


def create_app():
    """The Flask app each worker runs; gunicorn calls this (gunicorn_longpoll:create_app())."""
    from flask import Flask, Response, request

    board = Board(int(os.environ[BOARD_FD_ENV]))
    app = Flask(__name__)

    def answer(body, status=200, mimetype="application/json"):
        text = body if isinstance(body, str) else json.dumps(body) + "\n"
        return Response(text, status=status, mimetype=mimetype)

    @app.errorhandler(404)
    def not_found(error):
        return answer(f"404 no route for {request.path}\n", 404, "text/plain")

    @app.route("/")
    def hello():
        return answer(HELLO_BODY, mimetype="text/plain")

    @app.route("/poll")
    def poll():
        raw = request.args.get("cursor")
        if raw is None:
            cursor = board.read()
        elif raw.isdigit():
            cursor = int(raw)
        else:
            return answer(f"400 cursor must be a whole number of messages seen, got {raw!r}\n", 400, "text/plain")
        seq = wait_for_message(board, cursor)
        return answer({"seq": seq, "messages": max(0, seq - cursor), "pid": os.getpid()})

    @app.route("/publish")
    def publish():
        return answer({"seq": board.publish(), "pid": os.getpid()})

    @app.route("/stats")
    def stats():
        return answer({"published": board.read()})

    return app


def add_arguments(parser):
    parser.add_argument(
        "--workers", type=_wrapper.count_between(1, gunicorn_app.MAX_WORKERS), default=2,
        help="sync worker processes: each holds one long poll",
    )
    parser.add_argument(
        "--timeout", type=_wrapper.count_between(1, MAX_TIMEOUT_S), default=MAX_MS // 1000 + 30,
        help="gunicorn's --timeout: seconds a worker may stay silent before the arbiter kills it (gunicorn's default: 30)",
    )


def main():
    args = parse_args(__doc__, add_arguments)
    args.threads, args.worker_class, args.keep_alive = 1, "sync", 2
    board = Board.create()
    signal.signal(signal.SIGUSR1, lambda signum, frame: board.publish())
    gunicorn_app.serve(
        args, "gunicorn_longpoll:create_app()",
        env={BOARD_FD_ENV: str(board.fd)},
        extra=["--timeout", str(args.timeout)],
        pass_fds=[board.fd],
    )


if __name__ == "__main__":
    main()
