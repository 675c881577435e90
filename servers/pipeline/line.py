"""The line of one pipelining connection: answers that wait, requests held back, and RFC 9112's rule for unsafe methods.

Mixed into pipeline_app's PipelinedHTTP, whose teaching lines call these. Answers leave in the order their
requests came, so an answer that must wait (/async-sleep) holds back the ready ones behind it: head-of-line
blocking. Requests are started as they are parsed, several of them waiting at once, with two exceptions:

* at most --max-waiting requests wait at once; the rest are held, parsed but not started;
* RFC 9112, section 9.3.2: a server may process pipelined requests in parallel only if they all have safe
  methods (GET, HEAD, OPTIONS, TRACE). A request with any other method (POST, PUT, DELETE, PATCH...) changes
  something, and a client that pipelined it expects it to act after every request ahead of it and before every
  one behind. So it starts only once every answer ahead of it has been written, and nothing behind it starts
  until its own answer has been written.
"""

import asyncio
from collections import deque

# RFC 9110, section 9.2.1: the methods that only read. Any other, even one we do not know, may change something.
SAFE_METHODS = frozenset({b"GET", b"HEAD", b"OPTIONS", b"TRACE"})


class Wait:
    """The place in line of an answer that is not ready yet."""

    __slots__ = ("make_answer", "answer", "timer")

    def __init__(self, make_answer):
        self.make_answer = make_answer
        self.answer = None
        self.timer = None


class InLine:
    """The waits, the held requests and the unsafe method's turn, for PipelinedHTTP."""

    def __init__(self):
        self.ready = []  # answers that go with the next write: nothing ahead of them is waiting
        self.blocked = deque()  # answers behind one that waits (a Wait), in request order
        self.held = deque()  # requests parsed but not started yet, in order
        self.waiting = 0  # Waits not over yet
        self.alone = False  # an unsafe request has started and its answer has not been written yet

    def may_start(self, request):
        """True if `request` may start now: a free place to wait, and no unsafe request ahead or running."""
        if self.alone or self.waiting >= self.settings.max_waiting:
            return False
        # An unsafe request waits until every answer ahead of it has left (RFC 9112, 9.3.2).
        return request.method in SAFE_METHODS or not (self.ready or self.blocked)

    def start_held(self):
        """After a write, or a wait's end: start the held requests that may start now, in order."""
        if not (self.ready or self.blocked):
            self.alone = False  # every answer owed has been written, an unsafe request's too
        while self.held and self.may_start(self.held[0]):
            self.start(self.held.popleft())

    def wait(self, seconds, make_answer):
        """An answer the loop fills in later (/async-sleep). It keeps its place in line meanwhile."""
        wait = Wait(make_answer)
        self.waiting += 1
        wait.timer = asyncio.get_running_loop().call_later(seconds, self.wait_over, wait)
        return wait

    def wait_over(self, wait):
        wait.answer = wait.make_answer()
        self.waiting -= 1
        while self.blocked:  # the answers behind it go now, up to the next one still waiting
            first = self.blocked[0]
            if type(first) is Wait:
                if first.answer is None:
                    break
                first = first.answer
            self.ready.append(first)
            self.blocked.popleft()
        self.start_held()  # a safe request held for a place to wait may start now; an unsafe one waits for the write
        self.write_ready()
