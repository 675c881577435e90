"""An event loop built from scratch.

A selector, timers on a heap and a queue of ready callbacks (Tornado's IOLoop in miniature).
"""

import collections
import heapq
import selectors
import sys
import time
import traceback

from iolab.contract import slow_callback_line, trace_record

# The only two things a selector can watch a socket for.
EVENT_READ = selectors.EVENT_READ
EVENT_WRITE = selectors.EVENT_WRITE

# The selectors the loop can wait on, by the system call each makes. select() and poll() hand the kernel every
# watched descriptor on every call, and select() takes none numbered FD_SETSIZE (1024) or above; epoll keeps the
# list in the kernel between calls and returns the ready ones only.
SELECTORS = {"epoll": "EpollSelector", "poll": "PollSelector", "select": "SelectSelector"}

TRACE_FLUSH_EVERY_S = 0.1  # while busy, a reader sees the trace at most this late (and at once when the loop sleeps)
TRACE_MAX_ITERATIONS = 200_000  # about 20 MB of JSON lines; tracing stops there, serving does not


class Timer:
    """A callback due at a moment on the loop's clock. cancel() leaves it in the heap; the loop skips it."""

    __slots__ = ("when", "callback", "args", "cancelled")

    def __init__(self, when, callback, args):
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self):
        # Removing it from the middle of the heap would cost O(n); skipping it later costs nothing.
        self.cancelled = True

    def __lt__(self, other):
        return self.when < other.when


class EventLoop:
    """One thread, one selector: wait for sockets or the next timer, then run what is ready.

    Everything that happens in the server is a callback run by run_once(). A
    callback must return quickly: while one runs, no other socket is served and
    no timer fires. The loop times every callback and warns on stderr when one
    blocks it for longer than `slow_callback_s`, like asyncio's debug mode.
    """

    def __init__(self, slow_callback_s=0.1, trace_path=None, selector=None):
        # DefaultSelector is the best the platform has: epoll on Linux, kqueue on macOS. Lesson 07 names the others.
        self.selector = getattr(selectors, SELECTORS[selector])() if selector else selectors.DefaultSelector()
        self.slow_callback_s = slow_callback_s
        self._ready = collections.deque()  # (callback, args) to run on the next iteration
        self._timers = []  # a heap of Timer, earliest first
        self._stopping = False
        self._trace = IterationTrace(trace_path) if trace_path else None

    def time(self):
        """The loop's clock: monotonic, so timers ignore changes to the wall clock."""
        return time.monotonic()

    # --- file descriptors: what we want to hear about, and whom to call --------------

    def register(self, fileobj, events, callback):
        """Call callback(events) whenever fileobj is ready for any of `events`."""
        self.selector.register(fileobj, events, callback)

    def modify(self, fileobj, events, callback):
        """Change the interest set: one epoll_ctl system call, so only call it when it changes."""
        self.selector.modify(fileobj, events, callback)

    def unregister(self, fileobj):
        self.selector.unregister(fileobj)

    # --- callbacks not tied to a socket -------------------------------------------

    def call_soon(self, callback, *args):
        """Run callback(*args) on the next iteration, after the sockets that are ready now."""
        self._ready.append((callback, args))

    def call_later(self, delay_s, callback, *args):
        """Run callback(*args) once `delay_s` seconds have passed; returns a Timer you can cancel()."""
        return self.call_at(self.time() + delay_s, callback, *args)

    def call_at(self, when, callback, *args):
        timer = Timer(when, callback, args)
        heapq.heappush(self._timers, timer)
        return timer

    # --- running ------------------------------------------------------------------

    def run_forever(self):
        self._stopping = False
        try:
            while not self._stopping:
                self.run_once()
        finally:
            if self._trace:
                self._trace.close()

    def stop(self):
        """Finish the current iteration, then return from run_forever()."""
        self._stopping = True

    def close(self):
        self.selector.close()

    def run_once(self):
        """One iteration: select, then run socket callbacks, due timers and ready callbacks."""
        # How long may select() sleep? Not at all if callbacks are waiting; until the
        # next timer if there is one; otherwise until a socket wakes us up.
        if self._ready:
            timeout = 0
        elif self._timers:
            timeout = max(0.0, self._timers[0].when - self.time())
        else:
            timeout = None

        if self._trace and timeout != 0:
            self._trace.flush()  # we may sleep a while: let a reader see everything up to now

        began = self.time()
        events = self.selector.select(timeout)  # the only place the loop waits
        selected = self.time()

        for key, mask in events:
            self._run(key.data, (mask,))

        # Timers whose moment has come join the ready queue, in the order they were due.
        now = self.time()
        while self._timers and self._timers[0].when <= now:
            timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                self._ready.append((timer.callback, timer.args))

        # Run only what is ready now. Callbacks scheduled by these callbacks wait for
        # the next iteration, so a callback that keeps rescheduling itself cannot
        # starve the sockets.
        ready = len(self._ready)
        for _ in range(ready):
            callback, args = self._ready.popleft()
            self._run(callback, args)

        if self._trace:
            self._trace.record(began, selected, self.time(), len(events), ready, len(self._timers))

    def _run(self, callback, args):
        """This is the only place where callbacks are actually called."""
        started = self.time()
        try:
            callback(*args)
        except Exception:
            # One broken callback must not take the server down: report it and go on.
            print(f"exception in callback {describe(callback)}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        took = self.time() - started
        if took >= self.slow_callback_s:
            print(slow_callback_line(describe(callback), took), file=sys.stderr, flush=True)


def describe(callback):
    """A readable name for a callback: the method's qualified name and the object it is bound to."""
    name = getattr(callback, "__qualname__", repr(callback))
    owner = getattr(callback, "__self__", None)
    return f"{name} of {owner!r}" if owner is not None else name


class IterationTrace:
    """One JSON line per loop iteration: when it began, how long select() waited, how long callbacks ran.

    "t" is time.monotonic() at the start of the iteration. On Linux that clock is
    shared by every process on the machine, so a notebook can line the trace up
    with its own time.monotonic() readings.
    """

    def __init__(self, path):
        self.file = open(path, "w", buffering=1 << 16)
        self.iterations = 0
        self.unflushed = False
        self.last_flush = time.monotonic()

    def record(self, began, selected, finished, events, callbacks, timers):
        if self.iterations >= TRACE_MAX_ITERATIONS:
            return
        self.iterations += 1
        self.file.write(trace_record(began, selected, finished, events, callbacks, timers) + "\n")
        self.unflushed = True
        if finished - self.last_flush >= TRACE_FLUSH_EVERY_S:
            self.flush()

    def flush(self):
        if self.unflushed:
            self.file.flush()
            self.unflushed = False
            self.last_flush = time.monotonic()

    def close(self):
        self.file.close()
