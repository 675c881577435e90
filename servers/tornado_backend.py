"""Tornado in front of lesson 10's slow backend.

The contract's routes and /backend, which waits blocking, forgets, waits in k threads or awaits.

`/backend?ms=N&how=H&work=W` sends a task that waits (`work=wait`, a slow API)
or burns CPU (`work=cpu`) for N ms to the Celery worker pool, through Redis:

- `how=wait`: `.get()` on the loop's own thread, as the article did: the loop
  stops until the answer comes;
- `how=forget`: send and answer at once with the task's id;
- `how=pool`: send and `.get()` on one of `--threads` k threads, awaited;
- `how=await`: send, then await the result from Redis without blocking.

It answers 503 with a one-line reason when the queue is over `--queue-limit`
or Redis is gone, 504 when no result comes within `--timeout-ms`.
"""

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import redis.asyncio
import tornado.httpserver
import tornado.netutil
import tornado.web

import _backend_client
from _backend_client import Backend, Refused
from _wrapper import count_between
from iolab.contract import BadParameter, announce, die_with_parent, exit_on_sigterm, parse_args
from tornado_app import AsyncSleep, Cpu, Instant, LabHandler, NotFound, SyncSleep

MAX_THREADS = 1024
RESULT_KEY = "celery-task-meta-{}"  # where Celery's Redis backend stores a result and publishes it


class BackendCall(LabHandler):
    """The article's handler: hand the work to the backend, and wait for its answer, or not."""

    async def get(self):
        ms, how, work = _backend_client.backend_query(self.request.query)
        backend = self.settings["backend"]
        try:
            if how == "wait":  # the article's way: the loop waits too
                answer = f"{work} {backend.wait(work, ms)} ms done (waited, blocking the loop)"
            elif how == "forget":
                answer = f"queued {backend.publish(work, ms, keep_result=False)}"
            elif how == "pool":
                pool = self.settings["pool"]
                done = await asyncio.get_running_loop().run_in_executor(pool, backend.wait, work, ms)
                answer = f"{work} {done} ms done (waited in a thread of {pool._max_workers})"
            else:
                task_id = backend.publish(work, ms, keep_result=True)
                answer = f"{work} {await self.await_result(task_id, backend)} ms done (awaited)"
        except Refused as refused:
            self.set_status(refused.status)
            answer = f"{refused.status} {refused.reason}"
        self.answer(answer)

    async def await_result(self, task_id, backend):
        """Subscribe to the task's result channel, then read its key (in case it came first), then await the message."""
        key = RESULT_KEY.format(task_id)
        client = self.settings["redis"]
        try:
            async with asyncio.timeout(backend.timeout_s), client.pubsub() as pubsub:
                await pubsub.subscribe(key)
                meta = await client.get(key)
                while meta is None:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
                    meta = message and message["data"]
        except TimeoutError:
            raise Refused(504, f"no result within {backend.timeout_s:g} s (the backend's timeout)") from None
        except redis.RedisError as error:
            raise Refused(503, f"broker unreachable at {backend.broker_url}: {_backend_client.one_line(error)}") from None
        meta = json.loads(meta)
        if meta.get("status") != "SUCCESS":
            raise Refused(502, f"the task ended {meta.get('status')}: {meta.get('result')}")
        return meta["result"]

    def _handle_request_exception(self, error):
        if isinstance(error, BadParameter):
            self.send_error(400, exc_info=(type(error), error, None))
        else:
            super()._handle_request_exception(error)


def add_arguments(parser):
    _backend_client.add_arguments(parser)
    parser.add_argument(
        "--threads", type=count_between(1, MAX_THREADS), default=4,
        help="k, the threads that wait for results in how=pool",
    )


def make_app(args):
    backend = Backend(args.broker, args.queue_limit, args.timeout_ms)
    client = None
    if args.broker:
        client = redis.asyncio.Redis.from_url(args.broker, socket_connect_timeout=_backend_client.CHECK_TIMEOUT_S)
    return tornado.web.Application(
        [(r"/", Instant), (r"/sync-sleep", SyncSleep), (r"/async-sleep", AsyncSleep), (r"/cpu", Cpu),
         (r"/backend", BackendCall)],
        default_handler_class=NotFound,
        log_function=lambda handler: None,
        backend=backend,
        redis=client,
        pool=ThreadPoolExecutor(args.threads, thread_name_prefix="backend-wait"),
    )


async def main():
    parser_args = _backend_client.check_arguments(parse_args(__doc__, add_arguments))
    die_with_parent()
    exit_on_sigterm()
    sockets = tornado.netutil.bind_sockets(parser_args.port, address=parser_args.host, backlog=1024)
    server = tornado.httpserver.HTTPServer(make_app(parser_args))
    server.add_sockets(sockets)
    announce(*sockets[0].getsockname()[:2])
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
