"""gunicorn whose --graceful-timeout the lesson sets (lesson 15).

On SIGTERM gunicorn's arbiter closes its listening socket, sends SIGTERM to each worker, waits up to
--graceful-timeout seconds for them to exit, then sends SIGKILL (gunicorn/arbiter.py, Arbiter.stop). A worker told
SIGTERM stops accepting and finishes the requests it holds (workers/gthread.py, run; workers/sync.py, run_for_one).
gunicorn_app fixes the timeout at 1 s; here the lesson sets it, 0 included: then SIGKILL follows SIGTERM at once.
"""

import _wrapper
import gunicorn_app
from iolab.contract import parse_args

MAX_GRACEFUL_S = 10  # gunicorn takes whole seconds; the lesson's longest drain is 10 s


def add_arguments(parser):
    gunicorn_app.add_arguments(parser)
    parser.add_argument("--graceful-timeout", type=_wrapper.count_between(0, MAX_GRACEFUL_S), default=1,
                        help="whole seconds SIGTERM waits for requests in flight before SIGKILL (default 1)")


def main():
    args = parse_args(__doc__.splitlines()[0], add_arguments)
    # The wrapper kills the whole group if gunicorn lingers past its own stop timeout: give it the drain and a second.
    _wrapper.STOP_TIMEOUT_S = max(_wrapper.STOP_TIMEOUT_S, args.graceful_timeout + 1.0)
    gunicorn_app.serve(args, extra=["--graceful-timeout", str(args.graceful_timeout)])


if __name__ == "__main__":
    main()
