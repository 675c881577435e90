"""gunicorn's sync workers running apps/flask_app.py, lesson 10's third front end: gunicorn_app.py with another app.

Each sync worker handles one request at a time and closes every connection,
so the front end serves --workers requests at once; its backend options reach
the app through the environment.
"""

import _backend_client
import gunicorn_app
from apps import backend_tasks
from iolab.contract import parse_args


def add_arguments(parser):
    gunicorn_app.add_arguments(parser)
    _backend_client.add_arguments(parser)


def main():
    args = _backend_client.check_arguments(parse_args(__doc__, add_arguments))
    gunicorn_app.serve(args, "apps.flask_app:application", env={
        backend_tasks.BROKER_ENV: args.broker or "",
        _backend_client.QUEUE_LIMIT_ENV: str(args.queue_limit),
        _backend_client.TIMEOUT_MS_ENV: str(args.timeout_ms),
    })


if __name__ == "__main__":
    main()
