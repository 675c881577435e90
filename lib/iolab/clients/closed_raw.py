"""Closed loop on raw connections.

Each user sends its next request the moment its last answer is in (or a think time later); the lab's fastest client.

No coroutine, future or timer per request: an answer arrives in the connection's
data_received, is recorded, and the next request is written from there. Request
timeouts are found by one sweep over the users a few times per timeout.
"""

import asyncio
from typing import Any

from .. import http1
from .raw_connection import RawConnection, RawRun
from .recorder import Recorder
from .shares import Share
from .wire import NO_ERROR


class ClosedLoop(RawRun):
    """One process's share of the users, and the bounds they share: requests left and the duration."""

    def __init__(self, spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
        super().__init__(spec, recorder)
        self.spec = spec
        self.keep_alive = spec["keep_alive"]
        self.payload = http1.get_request(spec["url"], spec["keep_alive"])
        self.requests = share["requests"]
        self.issued = 0
        self.max_duration_s = spec["max_duration_s"]
        self.think_s = spec.get("think_s", 0.0)
        self.users = [User(number, self) for number in share["users"]]
        self.active = len(self.users)
        self.finished = self.loop.create_future()

    async def run(self) -> None:
        if self.spec.get("connect_first"):
            # Every user connects before the go: the handshakes are done, and the server can take (and a lab can
            # count) every connection before the run begins.
            await asyncio.gather(*(user.open() for user in self.users))
        await self.recorder.wait_for_go_async()
        flusher = asyncio.create_task(self.recorder.flush_periodically())
        sweeper = asyncio.create_task(self.sweep(self.users))
        now = self.recorder.now()
        for index, user in enumerate(self.users):
            if self.think_s:
                # Users who think start spread over one think time, as users who arrived at random would be.
                self.loop.call_later(self.think_s * index / len(self.users), user.thought)
            else:
                user.next(now)
        if self.active:
            await self.finished
        sweeper.cancel()
        flusher.cancel()

    def user_stopped(self) -> None:
        self.active -= 1
        if not self.active and not self.finished.done():
            self.finished.set_result(None)


class User(RawConnection):
    """One user: its own connection (a new one per request without keep-alive), one request at a time."""

    __slots__ = ("number", "start")
    run: ClosedLoop

    def __init__(self, number: int, run: ClosedLoop) -> None:
        self.number = number
        self.run = run
        self.reader = None
        self.connection = -1
        self.start: float | None = None  # when the request in flight was sent; None when there is none
        self.attempt = 0  # counts requests, so a connect that finishes after its request failed is dropped

    def next(self, now: float) -> None:
        run = self.run
        if run.issued >= run.requests or now >= run.max_duration_s:
            run.user_stopped()
            if self.reader is not None:
                self.reader.transport.close()
                self.reader = None
            return
        run.issued += 1
        run.recorder.in_flight += 1
        self.attempt += 1
        self.start = now
        self.write(run.payload)

    def answered(self, status: int, length: int, closes: bool, body: bytes | None) -> None:
        start = self.start
        reader = self.reader
        if start is None or reader is None:
            self.broken(http1.ProtocolError("an answer to a request never sent"))
            return
        run = self.run
        recorder = run.recorder
        now = reader.read_at - recorder.time_zero
        recorder.add((start, start, now, status, length, NO_ERROR, self.number, self.connection))
        if closes or not run.keep_alive:
            reader.transport.close()
            self.reader = None
        elif not run.think_s and run.issued < run.requests and now < run.max_duration_s:
            # Every answer but the last few: the next request leaves at once on this connection. This is next()
            # for that one case, inline: the client's CPU per request is what the lab compares with wrk's.
            run.issued += 1
            self.attempt += 1
            self.start = now
            reader.transport.write(run.payload)
            return
        recorder.in_flight -= 1
        self.start = None
        self.after(now)

    def after(self, now: float) -> None:
        """Send the next request now, or after the run's think time."""
        if self.run.think_s:
            self.run.loop.call_later(self.run.think_s, self.thought)
        else:
            self.next(now)

    def thought(self) -> None:
        self.next(self.run.recorder.now())

    def in_flight(self) -> bool:
        return self.start is not None

    def fail(self, kind: str) -> None:
        """Record the request in flight as an error of `kind`, drop its connection, and go on to the next."""
        run = self.run
        recorder = run.recorder
        now = recorder.now()
        start = now if self.start is None else self.start  # always in flight here: the sweep and the reader check
        recorder.add((start, start, now, 0, 0, recorder.error_code(kind), self.number, self.connection))
        recorder.in_flight -= 1
        self.start = None
        self.drop()
        self.after(now)


async def run(spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
    await ClosedLoop(spec, share, recorder).run()
