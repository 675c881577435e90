"""A Tornado service that watches its own event loop: lesson 15's lag, drain and pool.

Besides the contract's routes it answers:
- /window?ms=S&block_ms=b&period_ms=Δ&heartbeat_ms=H opens a measured window of S ms: a blocker holds the loop b ms
  every Δ ms, and a heartbeat, due at random times H ms apart on average, records how late each beat ran;
- /pool?ms=T&timeout_ms=t&safe=0|1 holds one slot of a pool of --pool slots for T ms, under a deadline of t ms;
  safe=0 releases it on the line after the wait, safe=1 in `async with`;
- /stats this server's figures as JSON (the window's beats and blocks, the pool's free slots and holds).
On SIGTERM it exits at once (--drain-ms 0), or stops accepting and waits up to --drain-ms for its requests in flight.
"""

import asyncio
import json
import os
import random
import signal
import time

import tornado.httpserver
import tornado.netutil
import tornado.web

from iolab.contract import BadParameter, announce, die_with_parent, parse_args, parse_ms
from tornado_app import STATS, AsyncSleep, Cpu, Instant, SyncSleep
from tornado_app import LabHandler as CommonHandler

# The contract's routes are tornado_app's, counted in its STATS; this service adds its own figures to them.
# Times are time.monotonic(), the clock of the loop and of the lab's load clients (perf_counter is the same one).
STATS.update({"beats": [], "blocks": [], "window": None,
              "pool_size": 0, "pool_free": 0, "holding": 0, "most_holding": 0, "holds_ms": [], "cancelled": 0})
POOL = asyncio.Semaphore(1)
MAX_BEATS = 200_000  # a window of a minute at a beat every 0.3 ms: far above what the lesson asks


def heartbeat(loop, due):
    """One beat: how late the loop ran it (the lag), recorded with the time it was due."""
    STATS["beats"].append((due, loop.time() - due))


def block(loop, ms):
    """The blocking call: time.sleep holds the loop's only thread, so nothing else runs meanwhile."""
    began = loop.time()
    time.sleep(ms / 1000)
    STATS["blocks"].append((began, loop.time()))


def open_window(seconds, block_ms, period_ms, heartbeat_ms):
    """Schedule the window's blocks on a grid of Δ, and its beats at random times (a Poisson process) drawn now."""
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.02
    end = start + seconds
    STATS.update(beats=[], blocks=[], window=(start, end))
    if block_ms:
        for k in range(int(seconds * 1000 // period_ms)):
            loop.call_at(start + k * period_ms / 1000, block, loop, block_ms)
    due = start + random.expovariate(1000 / heartbeat_ms)
    while due < end and len(STATS["beats"]) + 1 < MAX_BEATS:
        loop.call_at(due, heartbeat, loop, due)
        due += random.expovariate(1000 / heartbeat_ms)


async def hold_leaky(ms):
    """A slot taken and given back on the line after the wait: a cancellation in between keeps it forever."""
    await POOL.acquire()
    STATS["holding"] += 1
    STATS["most_holding"] = max(STATS["most_holding"], STATS["holding"])
    began = time.monotonic()
    await asyncio.sleep(ms / 1000)
    STATS["holds_ms"].append((time.monotonic() - began) * 1000)
    STATS["holding"] -= 1
    POOL.release()


async def hold_safe(ms):
    """The same, with `async with`: the slot goes back however the block ends, a cancellation included."""
    async with POOL:
        STATS["holding"] += 1
        STATS["most_holding"] = max(STATS["most_holding"], STATS["holding"])
        began = time.monotonic()
        try:
            await asyncio.sleep(ms / 1000)
            STATS["holds_ms"].append((time.monotonic() - began) * 1000)
        finally:
            STATS["holding"] -= 1


class LabHandler(CommonHandler):
    """tornado_app's handler (plain-text answers, one-line 400s, the in-flight count the drain waits on), with a
    query value of any name and an answer of any status."""

    def ms(self, name="ms"):
        return parse_ms(self.get_query_argument(name, None), name)

    def answer(self, text, status=200):
        self.set_status(status)
        super().answer(text)


class Window(LabHandler):
    def get(self):
        seconds, block_ms, period_ms = self.ms() / 1000, self.ms("block_ms"), self.ms("period_ms")
        heartbeat_ms = self.ms("heartbeat_ms")
        if not heartbeat_ms or not seconds or (block_ms and block_ms >= period_ms):
            raise BadParameter("ms and heartbeat_ms must be above 0, and block_ms below period_ms")
        open_window(seconds, block_ms, period_ms, heartbeat_ms)
        self.answer(json.dumps({"window": STATS["window"]}))


class Pool(LabHandler):
    async def get(self):
        ms, timeout_ms = self.ms(), self.ms("timeout_ms")
        hold = hold_safe if self.get_query_argument("safe", "0") == "1" else hold_leaky
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await hold(ms)
        except TimeoutError:
            STATS["cancelled"] += 1
            self.answer(f"504 cancelled after {timeout_ms} ms", 504)
            return
        self.answer(f"held a slot {ms} ms")


class Stats(tornado.web.RequestHandler):
    """This server's figures, as JSON; not counted in them. ?reset=1 empties the pool's holds afterwards."""

    def get(self):
        STATS["pool_free"] = POOL._value  # asyncio.Semaphore keeps its free slots there
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(STATS) + "\n")
        if self.get_query_argument("reset", "0") == "1":
            STATS.update(holds_ms=[], most_holding=STATS["holding"], cancelled=0)


class NotFound(LabHandler):
    def prepare(self):
        super().prepare()
        self.answer(f"404 no route for {self.request.path}", 404)


def make_app():
    return tornado.web.Application(
        [(r"/", Instant), (r"/sync-sleep", SyncSleep), (r"/async-sleep", AsyncSleep), (r"/cpu", Cpu),
         (r"/window", Window), (r"/pool", Pool), (r"/stats", Stats)],
        default_handler_class=NotFound,
        log_function=lambda handler: None,  # an access log line would cost more than the handlers
    )


async def drain(server, drain_s):
    """Stop accepting, wait until no request is in flight or drain_s has passed, then close what is left."""
    server.stop()
    deadline = time.monotonic() + drain_s
    while STATS["requests_in_flight"] and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    await server.close_all_connections()


def on_sigterm(server, drain_s, stopped):
    """Without a drain, leave at once: the requests in flight lose their connections."""
    if not drain_s:
        os._exit(0)  # as a process killed mid-request would: the kernel closes its connections
    asyncio.get_running_loop().create_task(drain(server, drain_s)).add_done_callback(lambda _: stopped.set())


async def main():
    def add_arguments(parser):
        parser.add_argument("--pool", type=int, default=8, help="slots in the pool of /pool (default 8)")
        parser.add_argument("--drain-ms", type=int, default=0, help="how long SIGTERM waits for requests in flight")

    args = parse_args(__doc__.splitlines()[0], add_arguments)
    if not 1 <= args.pool <= 1000 or not 0 <= args.drain_ms <= 60_000:
        raise SystemExit("--pool must be between 1 and 1000, --drain-ms between 0 and 60000")
    die_with_parent()
    global POOL
    POOL = asyncio.Semaphore(args.pool)
    STATS["pool_size"] = args.pool
    sockets = tornado.netutil.bind_sockets(args.port, address=args.host)
    server = tornado.httpserver.HTTPServer(make_app())
    server.add_sockets(sockets)
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm, server, args.drain_ms / 1000, stopped)
    announce(*sockets[0].getsockname()[:2])
    await stopped.wait()


if __name__ == "__main__":
    asyncio.run(main())
