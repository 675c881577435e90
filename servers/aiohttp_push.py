"""One aiohttp process pushing messages to WebSocket and SSE subscribers.

Routes besides the contract's `/`:
  /ws                    a WebSocket subscriber (aiohttp's WebSocketResponse)
  /sse                   a server-sent-events subscriber (a StreamResponse, text/event-stream)
  /publish?size=B&how=H  one message of B bytes to every subscriber; H is await (each `await send_str`,
                         or `await write`, in turn) or tasks (a task per subscriber)
  /stats                 subscribers by transport, RSS, CPU, messages published, subscribers dropped
A subscriber whose unsent bytes pass --max-buffer-kib is dropped at its next message; with how=await,
so is one whose send takes longer than --send-timeout-s.
"""

import asyncio
import json
import time

from aiohttp import web

import _push
import aiohttp_app
from iolab.contract import HELLO_BODY, BadParameter, parse_args

HOWS = ("await", "tasks")


class Hub:
    def __init__(self, args):
        self.args = args
        self.cap = args.max_buffer_kib * 1024
        self.subscribers = {}  # response -> (kind, transport); send order = subscription order
        self.counts = _push.Counts()
        self.stuck = set()  # tasks still waiting for a slow subscriber's buffer to drain (how=tasks)

    def by_transport(self):
        counts = {"ws": 0, "sse": 0, "poll": 0}
        for kind, _ in self.subscribers.values():
            counts[kind] += 1
        return counts

    def buffered(self):
        return sum(transport.get_write_buffer_size() for _, transport in self.subscribers.values()
                   if transport is not None)

    def drop(self, response):
        """Cut a subscriber off: counted once; its handler sees the connection end and leaves."""
        entry = self.subscribers.pop(response, None)
        if entry is not None:
            self.counts.dropped += 1
            if entry[1] is not None:
                entry[1].abort()

    def too_far_behind(self, response):
        _, transport = self.subscribers.get(response, (None, None))
        if transport is not None and transport.get_write_buffer_size() > self.cap:
            self.drop(response)
            return True
        return False

    async def send(self, response, kind, text, event):
        if kind == "ws":
            await response.send_str(text)
        else:
            await response.write(event)

    async def send_if_keeping_up(self, response, kind, text, event):
        if not self.too_far_behind(response):
            await self.send(response, kind, text, event)

    async def publish(self, size, how):
        self.counts.published += 1
        seq = self.counts.published
        text = _push.payload(seq, size)
        event = _push.sse_event(text)
        subscribers = list(self.subscribers.items())
        wall, cpu = time.perf_counter(), time.thread_time()
        if how == "await":
            for response, (kind, _) in subscribers:
                if response not in self.subscribers or self.too_far_behind(response):
                    continue
                try:
                    await asyncio.wait_for(self.send(response, kind, text, event), self.args.send_timeout_s)
                except TimeoutError:
                    self.drop(response)
                except (ConnectionError, RuntimeError):
                    continue  # gone meanwhile; its handler takes it off the list
        else:  # tasks: each writes its frame at its first step, then waits for its own buffer only
            tasks = [asyncio.create_task(self.send_if_keeping_up(response, kind, text, event))
                     for response, (kind, _) in subscribers]
            for task in tasks:
                task.add_done_callback(self.forget)
            self.stuck.update(tasks)
            await asyncio.sleep(0)  # one turn of the loop: every task has run to its write
        return _push.publish_answer(seq, len(subscribers), how, time.perf_counter() - wall, time.thread_time() - cpu)

    def forget(self, task):
        self.stuck.discard(task)
        if not task.cancelled():
            task.exception()  # a dropped subscriber's send fails: seen here, not logged as never retrieved


def json_answer(data):
    return web.Response(text=json.dumps(data) + "\n", content_type="application/json")


def make_app(args):
    hub = Hub(args)

    async def hello(request):
        return web.Response(text=HELLO_BODY, content_type="text/plain")

    async def websocket(request):
        # compress defaults to True (aiohttp/web_ws.py:118): off unless asked for, as on the other servers.
        response = web.WebSocketResponse(compress=args.compression == "on")
        await response.prepare(request)
        hub.subscribers[response] = ("ws", request.transport)
        try:
            async for _ in response:  # subscribers only listen; this ends when the connection does
                pass
        finally:
            hub.subscribers.pop(response, None)
        return response

    async def events(request):
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        hub.subscribers[response] = ("sse", request.transport)
        try:
            await asyncio.Event().wait()  # until the subscriber goes: the runner cancels this handler then
        finally:
            hub.subscribers.pop(response, None)

    async def publish(request):
        size, how = _push.parse_publish({key: request.query.getall(key)[-1] for key in request.query}, HOWS)
        return web.Response(text=await hub.publish(size, how), content_type="application/json")

    async def stats(request):
        return json_answer(hub.counts.stats(hub.by_transport(), hub.buffered()))

    async def not_found(request):
        return web.Response(text=f"404 no route for {request.path}\n", status=404, content_type="text/plain")

    @web.middleware
    async def bad_parameters_are_400s(request, handler):
        try:
            return await handler(request)
        except BadParameter as error:
            return web.Response(text=f"400 {error}\n", status=400, content_type="text/plain")

    app = web.Application(middlewares=[bad_parameters_are_400s])
    app.router.add_get("/", hello)
    app.router.add_get("/ws", websocket)
    app.router.add_get("/sse", events)
    app.router.add_get("/publish", publish)
    app.router.add_get("/stats", stats)
    app.router.add_route("*", "/{anything:.*}", not_found)
    return app


async def main():
    args = _push.check_options(parse_args(__doc__.splitlines()[0], lambda parser: _push.add_options(parser, HOWS)))
    # handler_cancellation: an SSE handler learns that its subscriber left by being cancelled
    # (aiohttp/web_server.py:21 has it False by default, and nothing else tells a StreamResponse).
    await aiohttp_app.serve(make_app(args), args, handler_cancellation=True)


if __name__ == "__main__":
    asyncio.run(main())
