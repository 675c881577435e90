"""gevent's pywsgi.WSGIServer running apps/flask_app.py, a greenlet per connection, monkey-patched unless --patch no.

gevent must patch the standard library before anything else imports it, so
this file looks for `--patch no` on its command line before its imports. With
the patch, time.sleep, sockets (redis-py's included) and threading become
cooperative: a handler that waits lets every other greenlet run, and Celery's
`.get()` waits on a gevent event. Without it, a wait blocks the one thread
that runs every greenlet: the server serves one request at a time.
"""

import sys


def wants_patch(argv):
    """False when the command line says `--patch no` (read before argparse, which needs the patched modules)."""
    pairs = zip(argv, argv[1:] + [""])
    return not any(word == "--patch=no" or (word == "--patch" and following == "no") for word, following in pairs)


PATCHED = wants_patch(sys.argv)
if PATCHED:
    from gevent import monkey

    monkey.patch_all()

import _backend_client  # noqa: E402  (after the patch, on purpose)
import _wrapper  # noqa: E402
from _backend_client import Backend  # noqa: E402
from apps.flask_app import create_app  # noqa: E402
from iolab.contract import die_with_parent, parse_args  # noqa: E402


def add_arguments(parser):
    _backend_client.add_arguments(parser)
    parser.add_argument(
        "--patch", choices=["yes", "no"], default="yes",
        help="no: leave the standard library unpatched, so every blocking call blocks the whole server",
    )


def main():
    args = _backend_client.check_arguments(parse_args(__doc__, add_arguments))
    die_with_parent()
    listener = _wrapper.bind_listener(args.host, args.port)  # backlog 1024; gevent's own default is 128
    _wrapper.serve_wsgi_on_gevent(listener, create_app(Backend(args.broker, args.queue_limit, args.timeout_ms)))


if __name__ == "__main__":
    main()
