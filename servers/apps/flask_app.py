"""The Flask app lesson 10's gevent and gunicorn front ends run: the contract's routes and /backend (wait or forget)."""

import time

from flask import Flask, Response, request

import _backend_client
from _backend_client import Backend, Refused
from iolab.contract import HELLO_BODY, BadParameter, burn_cpu, parse_ms

FLASK_HOWS = ("wait", "forget")  # a WSGI handler has no event loop to await on, and no pool of its own


def text(body, status=200):
    """Plain text with a Content-Length (Flask sets it for a str body)."""
    return Response(body, status=status, mimetype="text/plain")


def sleep_is_cooperative():
    """True under gevent's monkey-patching, where time.sleep lets every other greenlet run."""
    try:
        from gevent import monkey
    except ImportError:
        return False
    return monkey.is_module_patched("time")


def create_app(backend):
    app = Flask(__name__)

    @app.errorhandler(BadParameter)
    def bad_parameter(error):
        return text(f"400 {error}\n", 400)

    @app.errorhandler(404)
    def not_found(error):
        return text(f"404 no route for {request.path}\n", 404)

    @app.route("/")
    def hello():
        return text(HELLO_BODY)

    @app.route("/sync-sleep")
    def sync_sleep():
        ms = parse_ms(request.args.get("ms"))
        time.sleep(ms / 1000)
        return text(f"slept {ms} ms\n")

    @app.route("/async-sleep")
    def async_sleep():
        if not sleep_is_cooperative():
            return not_found(None)  # nothing here waits without blocking: no gevent patching
        ms = parse_ms(request.args.get("ms"))
        time.sleep(ms / 1000)  # gevent's time.sleep: this greenlet waits, the others run
        return text(f"waited {ms} ms without blocking (a greenlet)\n")

    @app.route("/cpu")
    def cpu():
        ms = parse_ms(request.args.get("ms"))
        burn_cpu(ms)
        return text(f"burned {ms} ms of CPU\n")

    @app.route("/backend")
    def backend_call():
        ms, how, work = _backend_client.backend_query(request.query_string.decode())
        if how not in FLASK_HOWS:
            raise BadParameter(f"how must be one of {', '.join(FLASK_HOWS)} on this server, got {how!r}")
        try:
            if how == "wait":  # .get(): under gevent only this greenlet waits; in a sync worker, the whole worker
                return text(f"{work} {backend.wait(work, ms)} ms done (waited)\n")
            return text(f"queued {backend.publish(work, ms, keep_result=False)}\n")
        except Refused as refused:
            return text(f"{refused.status} {refused.reason}\n", refused.status)

    return app


_built = []


def application(environ, start_response):
    """gunicorn's entry point: the app is built on the first request, in the worker, from the environment."""
    if not _built:
        _built.append(create_app(Backend.from_environment()))
    return _built[0](environ, start_response)
