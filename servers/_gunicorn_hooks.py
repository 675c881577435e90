"""gunicorn's settings file for gunicorn_app.py.

Each worker says when it is ready, so LISTENING means all of them are.
"""

import os

READY_FD = "IOLAB_WORKER_READY_FD"  # the write end of the wrapper's pipe, inherited through the arbiter


def post_worker_init(worker):
    """gunicorn calls this in each worker once the app is loaded, just before the worker starts accepting."""
    fd = os.environ.get(READY_FD)
    if fd:
        try:
            os.write(int(fd), b"+")
        except OSError:
            pass  # the wrapper stopped listening once it had heard from all of them: a replacement worker
