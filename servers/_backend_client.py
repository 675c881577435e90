"""How lesson 10's front ends call the backend.

Refuse when the queue is over its limit or Redis is gone, send a task, wait with a timeout.
"""

import contextlib
import os
from urllib.parse import parse_qs

import redis
from celery import Celery
from celery.exceptions import TimeoutError as CeleryTimeout

from apps import backend_tasks
from iolab.contract import MAX_MS, BadParameter, check_loopback_url, parse_ms

HOWS = ("wait", "forget", "pool", "await")  # each front end answers the ones it can, a 400 for the others
TASKS = {"wait": backend_tasks.WAIT_TASK, "cpu": backend_tasks.CPU_TASK}
QUEUE_LIMIT_ENV = "IOLAB_QUEUE_LIMIT"
TIMEOUT_MS_ENV = "IOLAB_BACKEND_TIMEOUT_MS"
DEFAULT_TIMEOUT_MS = 10_000
CHECK_TIMEOUT_S = 0.5  # how long a queue check may wait on Redis before the answer is "unreachable"


class Refused(Exception):
    """The backend could not be used; `status` and the one-line `reason` are the answer the client gets."""

    def __init__(self, status, reason):
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


def add_arguments(parser):
    """The options every front end takes for its backend."""
    parser.add_argument("--broker", default=None, help="the lab's Redis: redis://127.0.0.1:PORT/0")
    parser.add_argument(
        "--queue-limit", type=int, default=0,
        help="answer 503 when the broker's queue holds more tasks than this (0: no limit)",
    )
    parser.add_argument(
        "--timeout-ms", type=int, default=DEFAULT_TIMEOUT_MS,
        help="how long a handler waits for a task's result before it answers 504",
    )


def check_broker(url):
    """A redis:// URL on a loopback address (the front ends' and the worker's --broker), or a clear refusal."""
    try:
        return check_loopback_url(url, "--broker", "redis", "/0")
    except ValueError as error:
        raise SystemExit(str(error)) from None


def check_arguments(args):
    """Refuse a broker off the loopback, or a limit or timeout out of range, by name."""
    if args.broker is not None:
        check_broker(args.broker)
    if not 0 <= args.queue_limit <= 10_000_000:
        raise SystemExit(f"--queue-limit must be between 0 and 10000000, got {args.queue_limit}")
    if not 1 <= args.timeout_ms <= MAX_MS:
        raise SystemExit(f"--timeout-ms must be between 1 and {MAX_MS}, got {args.timeout_ms}")
    return args


def backend_query(query_string):
    """(ms, how, work) from `ms=N&how=...&work=wait|cpu`; a BadParameter names what was wrong."""
    query = parse_qs(query_string, keep_blank_values=True)
    ms = parse_ms(query.get("ms", [None])[0])
    how = query.get("how", ["wait"])[0]
    if how not in HOWS:
        raise BadParameter(f"how must be one of {', '.join(HOWS)}, got {how!r}")
    work = query.get("work", ["wait"])[0]
    if work not in TASKS:
        raise BadParameter(f"work must be one of {', '.join(TASKS)}, got {work!r}")
    return ms, how, work


class Backend:
    """One front end's way to the worker pool: through Redis, as Celery's client."""

    def __init__(self, broker_url, queue_limit=0, timeout_ms=DEFAULT_TIMEOUT_MS):
        self.broker_url = broker_url
        self.queue_limit = queue_limit
        self.timeout_s = timeout_ms / 1000
        if broker_url:
            backend_tasks.configure(broker_url)
            self.redis = redis.Redis.from_url(
                broker_url, socket_timeout=CHECK_TIMEOUT_S, socket_connect_timeout=CHECK_TIMEOUT_S
            )
            # Sending with the app would also subscribe this process to the task's result, which a
            # fire-and-forget or an awaiting handler never reads: this second app keeps no results.
            self.publisher = Celery("publisher")
            self.publisher.conf.update(
                broker_url=broker_url, broker_connection_timeout=1.0, task_publish_retry=False,
                broker_connection_retry_on_startup=False,
                broker_transport_options={"socket_timeout": 5.0, "socket_connect_timeout": 1.0},
            )

    @classmethod
    def from_environment(cls):
        """For a WSGI app under gunicorn, whose options arrive through the environment."""
        return cls(
            os.environ.get(backend_tasks.BROKER_ENV) or None,
            int(os.environ.get(QUEUE_LIMIT_ENV) or 0),
            int(os.environ.get(TIMEOUT_MS_ENV) or DEFAULT_TIMEOUT_MS),
        )

    def admit(self):
        """Refuse at once when there is no broker, it is unreachable, or its queue is over the limit."""
        if not self.broker_url:
            raise Refused(503, "no backend: this server was started without --broker")
        try:
            waiting = self.redis.llen(backend_tasks.QUEUE)
        except redis.RedisError as error:
            raise Refused(503, f"broker unreachable at {self.broker_url}: {one_line(error)}") from None
        if self.queue_limit and waiting >= self.queue_limit:
            raise Refused(503, f"queue full: {waiting} tasks waiting, the limit is {self.queue_limit}")
        return waiting

    def publish(self, work, ms, keep_result):
        """Send one task; its id. keep_result=False: the worker stores no result (fire and forget)."""
        self.admit()
        try:
            if keep_result:
                return self.publisher.send_task(TASKS[work], args=[ms]).id
            return self.publisher.send_task(TASKS[work], args=[ms], ignore_result=True).id
        except Exception as error:  # kombu wraps connection errors; a full Redis answers OOM
            raise refusal(self.broker_url, error) from None

    def wait(self, work, ms):
        """Send a task and block this thread until its result arrives or the timeout passes (what .get() does)."""
        self.admit()
        try:
            result = backend_tasks.app.send_task(TASKS[work], args=[ms])
        except Exception as error:
            raise refusal(self.broker_url, error) from None
        try:
            return result.get(timeout=self.timeout_s)
        except CeleryTimeout:
            with contextlib.suppress(Exception):
                result.forget()  # stop listening for it; the task itself still runs (Celery cannot take it back)
            raise Refused(504, f"no result within {self.timeout_s:g} s (the backend's timeout)") from None
        except Exception as error:
            raise refusal(self.broker_url, error) from None


def refusal(broker_url, error):
    """The 503 for an error while talking to the broker: full (Redis's memory cap) or gone."""
    text = one_line(error)
    if "OOM" in text or "maxmemory" in text:
        return Refused(503, f"broker full: Redis refused the task at its memory cap ({text})")
    return Refused(503, f"broker unreachable at {broker_url}: {text}")


def one_line(error):
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]
