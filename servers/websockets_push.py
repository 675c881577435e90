"""The websockets library's server pushing to WebSocket subscribers.

Routes besides the contract's `/` (every plain HTTP route is answered in process_request, which the
library calls before the handshake; it closes the connection after each such answer):
  /ws                    a WebSocket subscriber
  /publish?size=B&how=H  one message of B bytes to every subscriber; H is broadcast (websockets.broadcast():
                         written to every connection without waiting) or await (each `await send` in turn)
  /stats                 subscribers, RSS, CPU, messages published, subscribers dropped
A subscriber whose unsent bytes pass --max-buffer-kib is dropped; with how=await, so is one whose send
takes longer than --send-timeout-s. The library's own keepalive stays on (a ping every 20 s, closed
without a pong within 20 s more: websockets/asyncio/server.py:513-514), so a stopped subscriber is also
dropped by it.
"""

import asyncio
import json
import signal
import socket
import time
from urllib.parse import parse_qs, urlsplit

import websockets
from websockets.asyncio.server import ServerConnection, serve
from websockets.protocol import State

import _push
from iolab.contract import HELLO_BODY, BadParameter, announce, die_with_parent, parse_args

HOWS = ("broadcast", "await")


class Hub:
    def __init__(self, args):
        self.args = args
        self.cap = args.max_buffer_kib * 1024
        self.subscribers = {}  # connection -> None; send order = subscription order
        self.counts = _push.Counts()

    def buffered(self):
        return sum(connection.transport.get_write_buffer_size() for connection in self.subscribers)

    def drop(self, connection):
        """Cut a subscriber off, counted once; its handler sees the connection end and leaves."""
        if connection in self.subscribers:
            del self.subscribers[connection]
            self.counts.dropped += 1
            connection.transport.abort()

    def check(self, connection):
        if connection.transport.get_write_buffer_size() > self.cap:
            self.drop(connection)

    async def subscriber(self, connection):
        self.subscribers[connection] = None
        try:
            await connection.wait_closed()
        finally:
            self.subscribers.pop(connection, None)

    async def publish(self, size, how):
        self.counts.published += 1
        seq = self.counts.published
        text = _push.payload(seq, size)
        subscribers = list(self.subscribers)
        wall, cpu = time.perf_counter(), time.thread_time()
        if how == "broadcast":
            websockets.broadcast(subscribers, text)
            for connection in subscribers:
                self.check(connection)
        else:
            for connection in subscribers:
                if connection not in self.subscribers:
                    continue
                try:
                    await asyncio.wait_for(connection.send(text), self.args.send_timeout_s)
                except TimeoutError:
                    self.drop(connection)
                except websockets.ConnectionClosed:
                    continue
        return _push.publish_answer(seq, len(subscribers), how, time.perf_counter() - wall, time.thread_time() - cpu)

    async def route(self, connection, request):
        """Answer plain HTTP here; return None to let /ws go on to the WebSocket handshake."""
        parts = urlsplit(request.path)
        if parts.path == "/ws":
            return None
        if parts.path == "/":
            return connection.respond(200, HELLO_BODY)
        if parts.path == "/publish":
            query = {key: values[-1] for key, values in parse_qs(parts.query, keep_blank_values=True).items()}
            try:
                size, how = _push.parse_publish(query, HOWS)
            except BadParameter as error:
                return connection.respond(400, f"400 {error}\n")
            return json_response(connection, await self.publish(size, how))
        if parts.path == "/stats":
            stats = self.counts.stats({"ws": len(self.subscribers), "sse": 0, "poll": 0}, self.buffered())
            return json_response(connection, json.dumps(stats) + "\n")
        return connection.respond(404, f"404 no route for {parts.path}\n")


class OneRequestFirst(ServerConnection):
    """Feed the library only the first request's head before the handshake.

    The library parses whatever follows a request as WebSocket frames (websockets/server.py:635), so a
    pipelined second request broke the connection before the first was answered. A WebSocket client sends
    nothing before the 101 (RFC 6455 4.1), and a plain HTTP answer here closes the connection, so the bytes
    after the first head are never anyone's.
    """

    seen = b""

    def data_received(self, data):
        if self.protocol.state is State.CONNECTING:
            if self.seen is None:
                return
            end = (self.seen + data).find(b"\r\n\r\n")
            if end >= 0:
                data = data[: max(0, end + 4 - len(self.seen))]
                self.seen = None
            else:
                self.seen += data
        super().data_received(data)


def json_response(connection, text):
    response = connection.respond(200, text)
    del response.headers["Content-Type"]
    response.headers["Content-Type"] = "application/json"
    return response


async def main():
    args = _push.check_options(parse_args(__doc__.splitlines()[0], lambda parser: _push.add_options(parser, HOWS)))
    die_with_parent()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.create_server((args.host, args.port), family=family, backlog=1024)
    hub = Hub(args)
    # compression defaults to "deflate" (websockets/asyncio/server.py:494): None turns it off, as on the others.
    async with serve(hub.subscriber, sock=listener, process_request=hub.route, create_connection=OneRequestFirst,
                     compression="deflate" if args.compression == "on" else None,
                     close_timeout=1.0):  # at SIGTERM, a stopped subscriber holds the exit up this long, not 10 s
        stopping = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
        announce(*listener.getsockname()[:2])
        await stopping.wait()


if __name__ == "__main__":
    asyncio.run(main())
