"""One Tornado process pushing messages to WebSocket, SSE and long-poll subscribers.

Routes besides the contract's `/`:
  /ws                  a WebSocket subscriber (tornado.websocket.WebSocketHandler)
  /sse                 a server-sent-events subscriber (text/event-stream, a flush per event)
  /poll?cursor=K       a long poll, as Tornado's chat demo builds it: answers the messages after K
                       (one payload a line), or parks on a Condition until the next one
  /publish?size=B&how=H  one message of B bytes to every subscriber; H is loop (write_message, not
                       awaited: the chat demo), await (each send awaited in turn), frame (the frame
                       encoded once, the same bytes written to every stream) or floor (the floor itself:
                       iolab.push_floor.send_to_all over the WebSocket subscribers' sockets, nothing else)
  /stats               subscribers by transport, RSS, CPU, messages published, subscribers dropped, and
                       this thread's CPU when it last answered a long poll
  /page                servers/push_page.html, the page a student's browser opens
  POST /echo, /echoes  the page's echo of each message it received, with our receive time
A subscriber whose unsent bytes pass --max-buffer-kib is dropped; with how=await, so is one
whose send takes longer than --send-timeout-s.
"""

import asyncio
import json
import time
from pathlib import Path

import tornado.httpserver
import tornado.iostream
import tornado.locks
import tornado.netutil
import tornado.web
import tornado.websocket

import _push
from iolab import push_floor
from iolab.contract import HELLO_BODY, BadParameter, announce, die_with_parent, exit_on_sigterm, parse_args

HOWS = ("loop", "await", "frame", "floor")
PAGE = Path(__file__).with_name("push_page.html")


class Hub:
    """Every subscriber in the order it subscribed (a dict keeps insertion order), and the long polls' messages."""

    def __init__(self, args):
        self.args = args
        self.cap = args.max_buffer_kib * 1024
        self.subscribers = {}  # handler -> ("ws" or "sse", its IOStream); send order = subscription order
        self.counts = _push.Counts()
        self.kept = []  # the last KEPT_FOR_POLLS (seq, payload) for long polls
        self.new_message = tornado.locks.Condition()  # the chat demo's: every parked poll waits on it
        self.polls_parked = 0
        self.poll_answered_cpu_s = 0.0  # thread_time() as the last long poll was answered: the end of a poll's path
        self.echoes = []

    def by_transport(self):
        counts = {"ws": 0, "sse": 0, "poll": self.polls_parked}
        for kind, _ in self.subscribers.values():
            counts[kind] += 1
        return counts

    def buffered(self):
        return sum(len(target._write_buffer) for _, target in self.subscribers.values())

    def drop(self, handler):
        """Close a subscriber that fell too far behind; it is counted, and its on_close takes it off the list."""
        if self.subscribers.pop(handler, None) is not None:
            self.counts.dropped += 1
        stream(handler).close()

    def check(self, handler):
        if unsent(handler) > self.cap:
            self.drop(handler)

    def next_message(self, size):
        """The next message's seq and payload, kept for the long polls that ask after it."""
        self.counts.published += 1
        seq = self.counts.published
        text = _push.payload(seq, size)
        self.kept = (self.kept + [(seq, text)])[-_push.KEPT_FOR_POLLS:]
        return seq, text

    async def publish(self, size, how):
        seq, text = self.next_message(size)
        subscribers, parked = list(self.subscribers.items()), self.polls_parked
        wall, cpu = time.perf_counter(), time.thread_time()
        if how == "floor":
            cpu_s = self.floor(text, subscribers)
        elif how == "loop":
            event = _push.sse_event(text)
            for handler, (kind, _) in subscribers:
                try:
                    if kind == "ws":
                        # The chat demo's broadcast: the future write_message returns is dropped, not awaited.
                        handler.write_message(text)
                    else:
                        handler.write(event)
                        handler.flush()
                except (tornado.websocket.WebSocketClosedError, tornado.iostream.StreamClosedError):
                    continue
                self.check(handler)
        elif how == "await":
            event = _push.sse_event(text)
            for handler, (kind, _) in subscribers:
                if handler not in self.subscribers:
                    continue  # dropped or gone while we waited on one before it
                try:
                    if kind == "ws":
                        sent = handler.write_message(text)
                    else:
                        handler.write(event)
                        sent = handler.flush()  # the issue's `await self.flush()`
                    await asyncio.wait_for(sent, self.args.send_timeout_s)
                except (tornado.websocket.WebSocketClosedError, tornado.iostream.StreamClosedError):
                    continue
                except TimeoutError:
                    self.drop(handler)
        else:  # frame: each transport's bytes built once, written as they are to every stream
            frames = {"ws": _push.ws_frame(text.encode()), "sse": chunk(_push.sse_event(text))}
            for handler, (kind, target) in subscribers:
                data = frames[kind]
                # One send() straight to the socket when nothing waits before these bytes: IOStream.write would
                # make a Future and queue them first (tornado/iostream.py:519-557), most of a broadcast's cost.
                # _write_buffer._size is what IOStream's len() reads (iostream.py:121-124); socket is None once
                # closed (iostream.py:1164-1166). Whatever the kernel does not take queues in IOStream, in order.
                if target._write_buffer._size == 0 and target.socket is not None:
                    try:
                        sent = target.socket.send(data)
                    except BlockingIOError:
                        sent = 0
                    except OSError:
                        continue  # the connection is gone; its close callback takes it off the list
                    if sent == len(data):
                        continue
                    data = data[sent:]
                self.queue(handler, target, data)
        if how != "floor":
            cpu_s = time.thread_time() - cpu
        # Long polls: the chat demo's notify_all; each parked handler answers when the loop wakes it.
        self.new_message.notify_all()
        return _push.publish_answer(seq, len(subscribers) + parked, how, time.perf_counter() - wall, cpu_s,
                                    cpu_at_start_s=cpu)

    def floor(self, text, subscribers):
        """The floor at this moment, to these subscribers: one bare send() of one frame to each WebSocket's socket
        (push_floor.send_to_all, the loop the lesson shows). Only that loop is timed; a subscriber whose stream
        still holds bytes, and every SSE one, gets the frame through its stream afterwards, in order."""
        frame = _push.ws_frame(text.encode())
        bare, queued = [], []
        for handler, (kind, target) in subscribers:
            ready = kind == "ws" and target._write_buffer._size == 0 and target.socket is not None
            (bare if ready else queued).append((handler, kind, target))
        sockets = [target.socket for _, _, target in bare]
        cpu = time.thread_time()
        try:
            push_floor.send_to_all(sockets, frame)
        except OSError as error:  # a full kernel buffer: the floor is measured only where every subscriber reads
            raise RuntimeError(f"the floor needs every subscriber's kernel buffer free; one send failed: {error}") from error
        cpu_s = time.thread_time() - cpu
        event = chunk(_push.sse_event(text))
        for handler, kind, target in queued:
            self.queue(handler, target, frame if kind == "ws" else event)
        return cpu_s

    def queue(self, handler, target, data):
        try:
            target.write(data)
        except tornado.iostream.StreamClosedError:
            return
        self.check(handler)

    def since(self, cursor):
        return [text for seq, text in self.kept if seq > cursor]


def stream(handler):
    """The IOStream under a subscriber: a WebSocket's or an SSE response's."""
    if isinstance(handler, tornado.websocket.WebSocketHandler):
        return handler.ws_connection.stream
    return handler.request.connection.stream


def unsent(handler):
    # Bytes written to the stream and not yet taken by the kernel: IOStream keeps no public count of them.
    # tornado/iostream.py:546 compares len(self._write_buffer) with max_write_buffer_size the same way.
    try:
        return len(stream(handler)._write_buffer)
    except AttributeError:  # a WebSocket whose connection is already gone
        return 0


def chunk(data):
    """`data` as one HTTP/1.1 chunk: Tornado sends an SSE response chunked (no Content-Length), so must we."""
    return b"%x\r\n%s\r\n" % (len(data), data)


class Base(tornado.web.RequestHandler):
    def initialize(self, hub):
        self.hub = hub

    def answer(self, text, status=200, content_type="text/plain"):
        self.set_status(status)
        self.set_header("Content-Type", content_type)
        self.finish(text)

    def query(self):
        return {key: self.get_query_argument(key) for key in self.request.query_arguments}


class Hello(Base):
    def get(self):
        self.answer(HELLO_BODY)


class WebSocket(tornado.websocket.WebSocketHandler):
    def initialize(self, hub):
        self.hub = hub

    def check_origin(self, origin):
        # The page comes through jupyter-server-proxy, whose origin is Jupyter's, not ours; we listen on loopback only.
        return True

    def get_compression_options(self):
        # None (Tornado's default, tornado/websocket.py:403) leaves permessage-deflate off; {} turns it on.
        return {} if self.hub.args.compression == "on" else None

    def open(self):
        self.hub.subscribers[self] = ("ws", self.ws_connection.stream)

    def on_message(self, message):
        pass  # subscribers only listen

    def on_close(self):
        self.hub.subscribers.pop(self, None)


class Events(Base):
    """Server-sent events: the headers now, then an event per message until the subscriber goes."""

    async def get(self):
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.gone = asyncio.Event()
        await self.flush()
        self.hub.subscribers[self] = ("sse", self.request.connection.stream)
        await self.gone.wait()

    def on_connection_close(self):
        self.hub.subscribers.pop(self, None)
        self.gone.set()

    def finish(self, chunk=None):
        if not self.request.connection.stream.closed():
            return super().finish(chunk)
        return None


class Poll(Base):
    """A long poll, as Tornado's chat demo: the messages after `cursor` at once, or wait on the Condition for them."""

    async def get(self):
        raw = self.get_query_argument("cursor", None)
        try:
            cursor = self.hub.counts.published if raw in (None, "") else int(raw)
        except ValueError:
            raise BadParameter(f"cursor must be a whole number (the last seq you have), got {raw!r}") from None
        messages = self.hub.since(cursor)
        while not messages:
            self.waiting = self.hub.new_message.wait()
            self.hub.polls_parked += 1
            try:
                await self.waiting
            except asyncio.CancelledError:
                return
            finally:
                self.hub.polls_parked -= 1
            messages = self.hub.since(cursor)
        if self.request.connection.stream.closed():
            return
        self.answer("\n".join(messages) + "\n")
        self.hub.poll_answered_cpu_s = time.thread_time()

    def on_connection_close(self):
        waiting = getattr(self, "waiting", None)
        if waiting is not None:
            waiting.cancel()


class Publish(Base):
    async def get(self):
        size, how = _push.parse_publish(self.query(), HOWS)
        self.answer(await self.hub.publish(size, how), content_type="application/json")


class Stats(Base):
    def get(self):
        hub = self.hub
        found = hub.counts.stats(hub.by_transport(), hub.buffered()) | {"poll_answered_cpu_s": hub.poll_answered_cpu_s}
        self.answer(json.dumps(found) + "\n", content_type="application/json")


class Page(Base):
    def get(self):
        if not PAGE.exists():
            self.answer(f"404 there is no {PAGE.name} beside this server, so there is no page to show\n", 404)
            return
        self.answer(PAGE.read_bytes(), content_type="text/html; charset=utf-8")


class Echo(Base):
    """The page posts {"seq": n} for each message it got; we keep our receive time of it."""

    def post(self):
        received = time.monotonic()
        try:
            seq = json.loads(self.request.body)["seq"]
            if isinstance(seq, bool) or not isinstance(seq, int):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            body = self.request.body[:80]
            raise BadParameter(f'the body must be JSON {{"seq": n}} with n a whole number, got {body!r}') from None
        self.hub.echoes = (self.hub.echoes + [{"seq": seq, "received": received}])[-_push.ECHOES_KEPT:]
        self.answer("ok\n")


class Echoes(Base):
    def get(self):
        self.answer(json.dumps(self.hub.echoes) + "\n", content_type="application/json")


class NotFound(Base):
    def prepare(self):
        self.answer(f"404 no route for {self.request.path}\n", 404)


def bad_parameters_are_400s(handler_class):
    def _handle_request_exception(self, error):
        if isinstance(error, BadParameter):
            self.answer(f"400 {error}\n", 400)
        else:
            super(handler_class, self)._handle_request_exception(error)

    handler_class._handle_request_exception = _handle_request_exception
    return handler_class


for _handler in (Poll, Publish, Echo):
    bad_parameters_are_400s(_handler)


def make_app(hub):
    routes = [("/", Hello), ("/ws", WebSocket), ("/sse", Events), ("/poll", Poll), ("/publish", Publish),
              ("/stats", Stats), ("/page", Page), ("/echo", Echo), ("/echoes", Echoes)]
    return tornado.web.Application([(path, handler, {"hub": hub}) for path, handler in routes],
                                   default_handler_class=NotFound, default_handler_args={"hub": hub},
                                   log_function=lambda handler: None)


async def main():
    args = _push.check_options(parse_args(__doc__.splitlines()[0], lambda parser: _push.add_options(parser, HOWS)))
    die_with_parent()
    exit_on_sigterm()
    sockets = tornado.netutil.bind_sockets(args.port, address=args.host, backlog=1024)
    server = tornado.httpserver.HTTPServer(make_app(Hub(args)))
    server.add_sockets(sockets)
    announce(*sockets[0].getsockname()[:2])
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
