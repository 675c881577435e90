"""gunicorn's sync workers running flask_app.py, lesson 10's third front end: gunicorn_app.py's wrapper with another app.

Each sync worker handles one request at a time and closes every connection,
so the front end serves --workers requests at once; its backend options reach
the app through the environment.
"""

import os

import _backend_client
import _wrapper
import backend_tasks
import gunicorn_app
from gunicorn_app import READY_FD, gunicorn_command, wait_for_workers
from iolab.contract import parse_args


def add_arguments(parser):
    gunicorn_app.add_arguments(parser)
    _backend_client.add_arguments(parser)


def main():
    args = _backend_client.check_arguments(parse_args(__doc__, add_arguments))
    with _wrapper.in_charge() as programs:
        listener = _wrapper.bind_listener(args.host, args.port)
        ready, ready_to_write = os.pipe()
        command = gunicorn_command(listener.fileno(), args)
        command[-1] = "flask_app:application"  # gunicorn_app.py's command, with this app instead of wsgi_app
        gunicorn = programs.start(
            "gunicorn", command, pass_fds=[listener.fileno(), ready_to_write],
            env={
                READY_FD: str(ready_to_write),
                backend_tasks.BROKER_ENV: args.broker or "",
                _backend_client.QUEUE_LIMIT_ENV: str(args.queue_limit),
                _backend_client.TIMEOUT_MS_ENV: str(args.timeout_ms),
            },
        )
        os.close(ready_to_write)
        wait_for_workers(ready, args.workers, gunicorn)
        os.close(ready)
        programs.serve(listener)


if __name__ == "__main__":
    main()
