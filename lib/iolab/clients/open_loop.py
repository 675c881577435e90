"""Open loop: requests leave on a schedule.

A fixed rate or Poisson arrivals, whatever the answers do, with at most `concurrency` outstanding.

Each request has an intended send time from the schedule and an actual one. When
all connections are busy, the next request waits for one and leaves late: its
latency measured from the intended time includes that wait, the one measured
from the actual send does not. The gap between them is coordinated omission.
"""

import asyncio
import collections
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .. import http1
from .raw_connection import RawConnection, RawRun
from .recorder import Recorder
from .shares import Share
from .wire import NO_ERROR


def schedule(kind: str, rate_rps: float, requests: int, max_duration_s: float, *, process: int = 0,
             processes: int = 1, seed: int | None = None) -> Iterator[tuple[int, float]]:
    """(user, intended send time) of this process's requests: its 1/processes share of the run's schedule.

    Fixed: the run sends every 1/rate s, and process p takes every processes-th
    send from the p-th on. Poisson: each process draws its own arrivals at
    rate/processes, and arrivals merged from independent Poisson streams are
    Poisson at the full rate. `user` numbers every arrival once across the run.
    """
    if kind == "fixed":
        for k in range(requests):
            intended = (k * processes + process) / rate_rps
            if intended >= max_duration_s:
                return
            yield k * processes + process, intended
    else:
        draw = random.Random(None if seed is None else seed * 1000 + process).expovariate
        intended = 0.0
        for k in range(requests):
            intended += draw(rate_rps / processes)
            if intended >= max_duration_s:
                return
            yield k * processes + process, intended


class Waker(threading.Thread):
    """Sleeps until the next intended send, then wakes the event loop to send it.

    The loop's own timers wake it up to a millisecond late (epoll and libuv count
    in milliseconds); a thread's timed wait is good to tens of microseconds.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None], time_zero: float) -> None:
        super().__init__(name="open-loop-waker", daemon=True)
        self.loop = loop
        self.callback = callback
        self.time_zero = time_zero
        self.target: float | None = None  # the next intended send, in the run's time; None: nothing to wait for
        self.changed = threading.Condition()
        self.stopped = False

    def wake_at(self, intended: float) -> None:
        with self.changed:
            if self.target is None or intended < self.target:
                self.target = intended
                self.changed.notify()

    def stop(self) -> None:
        with self.changed:
            self.stopped = True
            self.changed.notify()

    def run(self) -> None:
        with self.changed:
            while not self.stopped:
                if self.target is None:
                    self.changed.wait()
                    continue
                delay = self.time_zero + self.target - time.perf_counter()
                if delay > 0:
                    self.changed.wait(delay)  # returns early if an earlier target comes in
                    continue
                self.target = None
                self.loop.call_soon_threadsafe(self.callback)


class Slot(RawConnection):
    """One connection and the one request it may carry at a time."""

    __slots__ = ("user", "intended", "start")
    run: "OpenLoop"

    def __init__(self, run: "OpenLoop") -> None:
        self.run = run
        self.reader = None
        self.connection = -1
        self.user = -1
        self.intended = 0.0  # when the schedule meant the request in flight to leave
        self.start: float | None = None  # when the request in flight left; None when the slot is free
        self.attempt = 0

    def send(self, user: int, intended: float, now: float) -> None:
        run = self.run
        run.recorder.in_flight += 1
        self.user, self.intended, self.start = user, intended, now
        self.attempt += 1
        self.write(run.payload)

    def answered(self, status: int, length: int, closes: bool, body: bytes | None) -> None:
        run = self.run
        recorder = run.recorder
        now = recorder.now()
        if self.start is None or self.reader is None:
            self.broken(http1.ProtocolError("an answer to a request never sent"))
            return
        recorder.add((self.intended, self.start, now, status, length, NO_ERROR, self.user, self.connection))
        if closes or not run.keep_alive:
            self.reader.transport.close()
            self.reader = None
        self.release()

    def in_flight(self) -> bool:
        return self.start is not None

    def fail(self, kind: str) -> None:
        """Record the request in flight as an error of `kind`, drop its connection, and free the slot."""
        recorder = self.run.recorder
        code, now = recorder.error_code(kind), recorder.now()
        start = now if self.start is None else self.start  # always in flight here: the sweep and the reader check
        recorder.add((self.intended, start, now, 0, 0, code, self.user, self.connection))
        self.drop()
        self.release()

    def release(self) -> None:
        self.run.recorder.in_flight -= 1
        self.start = None
        self.run.free.append(self)
        self.run.send_due()


class OpenLoop(RawRun):
    """One process's schedule and connections: sends what is due on free connections, and wakes for the next."""

    def __init__(self, spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
        super().__init__(spec, recorder)
        self.keep_alive = spec["keep_alive"]
        self.payload = http1.get_request(spec["url"], spec["keep_alive"])
        self.schedule = schedule(
            spec["schedule"], spec["rate_rps"], share["requests"], spec["max_duration_s"],
            process=spec["process"], processes=spec["processes"], seed=spec.get("seed"),
        )
        self.upcoming = next(self.schedule, None)
        self.slots = [Slot(self) for _ in share["users"]]
        self.free = collections.deque(self.slots)
        self.finished = self.loop.create_future()
        self.waker: Waker | None = None

    async def run(self) -> None:
        if self.keep_alive:
            await asyncio.gather(*(slot.open() for slot in self.slots))
        await self.recorder.wait_for_go_async()
        self.waker = waker = Waker(self.loop, self.send_due, self.recorder.time_zero)
        waker.start()
        flusher = asyncio.create_task(self.recorder.flush_periodically())
        sweeper = asyncio.create_task(self.sweep(self.slots))
        try:
            self.send_due()
            await self.finished
        finally:
            waker.stop()
            sweeper.cancel()
            flusher.cancel()
            for slot in self.slots:
                if slot.reader is not None:
                    slot.reader.transport.close()

    def send_due(self) -> None:
        now = self.recorder.now()
        while self.free and self.upcoming is not None and self.upcoming[1] <= now:
            user, intended = self.upcoming
            self.free.popleft().send(user, intended, now)
            self.upcoming = next(self.schedule, None)
        if self.upcoming is None:
            if len(self.free) == len(self.slots) and not self.finished.done():
                self.finished.set_result(None)
        elif self.free and self.waker is not None:
            self.waker.wake_at(self.upcoming[1])
        # else every connection is busy: the next answer frees one and calls send_due



async def run(spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
    await OpenLoop(spec, share, recorder).run()
