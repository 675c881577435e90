"""Step 5 of lesson 05: handlers written as coroutines.

They run by a small Future and Task on the hand-built loop.

Read step4_event_loop.py (step 4) first. Its /async-sleep hands the loop a callback
that sends the answer later, so whatever a handler does after a wait has to
live in another function. What this adds: a handler can be a generator that
yields a Future wherever it must wait, and goes on from that very line once the
future is done. A Task drives it: it runs the generator up to its next
`yield`, asks the future to call back when it is done, and then runs it on.

That is all `await` is. In lessons 00 to 03, `await asyncio.sleep(1)` in a
Tornado handler is this `yield sleep(loop, 1)`: asyncio's Task sends the
coroutine on when the future it awaits is done, and `async def` makes the
generator. The loop, the stream and the HTTP connection are step 4's, unchanged.
"""

from iolab.contract import BadParameter, die_with_parent, exit_on_sigterm, parse_args
from scratch.loop import EventLoop
from step4_event_loop import LabRoutes, query_ms, serve


class Future:
    """A result that is not there yet: whoever needs it asks to be called back when it is."""

    def __init__(self):
        self.done = False
        self.result = None
        self.error = None  # the exception, if the work behind it failed
        self.callbacks = []

    def add_done_callback(self, callback):
        if self.done:
            callback(self)
        else:
            self.callbacks.append(callback)

    def set_result(self, result, error=None):
        self.done, self.result, self.error = True, result, error
        for callback in self.callbacks:
            callback(self)


class Task(Future):
    """Runs a coroutine to its next `yield future`, and on from there when that future is done.

    A Task is a Future too, done when the coroutine returns (its result is what
    the coroutine returned) or raises (its error is the exception).
    """

    def __init__(self, coroutine):
        super().__init__()
        self.coroutine = coroutine
        self.step(None)

    def step(self, value):
        try:
            future = self.coroutine.send(value)  # run the coroutine up to its next yield
        except StopIteration as returned:
            self.set_result(returned.value)
        except Exception as error:
            self.set_result(None, error)
        else:
            # The coroutine is paused at its yield; the loop goes on serving others meanwhile.
            future.add_done_callback(lambda future: self.step(future.result))


def sleep(loop, seconds):
    """A future that the loop's timer completes `seconds` from now."""
    future = Future()
    loop.call_later(seconds, future.set_result, None)
    return future


class CoroutineRoutes(LabRoutes):
    """Step 4's routes, with handler B written as a coroutine."""

    def async_sleep(self, request, reply):
        """Handler B: a Task runs the coroutine, and its outcome is the answer."""
        task = Task(self.sleep_then_answer(request))
        task.add_done_callback(lambda task: answer(task, reply))

    def sleep_then_answer(self, request):
        ms = query_ms(request)
        yield sleep(self.loop, ms / 1000)  # wait without blocking: the Task runs us on from here when the timer fires
        return 200, f"waited {ms} ms without blocking\n"


def answer(task, reply):
    """Reply with what the handler's coroutine returned; a coroutine that raised is answered as step 4 answers a handler."""
    if task.error is None:
        reply(*task.result)
    elif isinstance(task.error, BadParameter):  # a bad ?ms=
        reply(400, f"400 {task.error}\n")
    else:
        reply(500, "500 the handler raised an exception; see the server's stderr\n")
        raise task.error  # the loop prints it on stderr


def main():
    args = parse_args(__doc__.splitlines()[0])
    die_with_parent()
    exit_on_sigterm()
    loop = EventLoop()
    serve(loop, CoroutineRoutes(loop), args.host, args.port)


if __name__ == "__main__":
    main()
