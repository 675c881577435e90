"""A client process's side of a run.

The clock every process shares, rows of finished requests, and frames to the parent.
"""

import asyncio
import concurrent.futures
import itertools
import threading
import time
from typing import IO, Any

from . import wire

FLUSH_EVERY_S = 0.05  # how often finished requests travel to the parent: live plots want 5 Hz or more


class Recorder:
    """What one client process measured: a row per finished request, how many are in flight now, the errors' names.

    Time zero is one instant shared by every client process of a run (the parent
    picks it once all are ready), so their rows merge without shifting.
    """

    def __init__(self, out: IO[bytes], go: concurrent.futures.Future[float], process: int = 0,
                 processes: int = 1) -> None:
        self.out = out
        self.go = go  # a concurrent.futures.Future that the parent's go line resolves to time zero
        self.rows = wire.RowBuffer()
        self.add = self.rows.add  # the hot path: clients call recorder.add((...)) with a wire.Row
        self.in_flight = 0
        self.time_zero = time.perf_counter()
        self.error_names: list[str | None] = [None]  # index = the code in a row's error field; 0 is no error
        self._codes: dict[str, int] = {}
        self._lock = threading.Lock()
        # Connection numbers unique across the run's processes: this one takes process, process + processes, ...
        self.connection_numbers = itertools.count(process, processes)

    def now(self) -> float:
        return time.perf_counter() - self.time_zero

    def error_code(self, kind: str) -> int:
        """The number a row carries for an error of `kind` ("timeout", "refused", ...)."""
        code = self._codes.get(kind)
        if code is None:
            with self._lock:
                code = self._codes.setdefault(kind, len(self.error_names))
                if code == len(self.error_names):
                    self.error_names.append(kind)
        return code

    def new_connection(self) -> int:
        return next(self.connection_numbers)

    def _ready(self) -> None:
        wire.write_frame(self.out, wire.READY)

    def wait_for_go(self) -> None:
        """Tell the parent this process is set up, then sleep until the run's time zero (threads)."""
        self._ready()
        self.time_zero = self.go.result()
        time.sleep(max(0.0, self.time_zero - time.perf_counter()))

    async def wait_for_go_async(self) -> None:
        """Tell the parent this process is set up, then sleep until the run's time zero (event loops)."""
        self._ready()
        self.time_zero = await asyncio.wrap_future(self.go)
        # An event loop's timer may fire up to a millisecond early (libuv counts whole milliseconds): sleep the last
        # bit blocking, so that no request leaves before time zero.
        await asyncio.sleep(max(0.0, self.time_zero - time.perf_counter() - 0.002))
        time.sleep(max(0.0, self.time_zero - time.perf_counter()))

    def flush(self) -> None:
        with self._lock:
            rows = self.rows.take()
            wire.write_frame(
                self.out, wire.ROWS, rows, t=self.now(), in_flight=self.in_flight, error_names=self.error_names
            )

    async def flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_EVERY_S)
            self.flush()

    def done(self, report: dict[str, Any] | None = None) -> None:
        """The last rows, then the done frame; `report`: the totals of a kind that counts instead of keeping rows."""
        self.flush()
        if report is None:
            wire.write_frame(self.out, wire.DONE, t=self.now())
        else:
            wire.write_frame(self.out, wire.DONE, t=self.now(), report=report)
