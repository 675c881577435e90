"""The client process that holds subscribers open and answers its parent over a pipe.

The held mode of the client kind `subscribers`, started by held_subscribers.Held:

    python -m iolab.clients.holder URL TRANSPORT N on|off TIMEOUT_S    # READY N (or FAILED why), then the pipe

It connects N subscribers of one transport one after another (subscribers.py's
protocols, so the server's send order is theirs), says READY, then answers one
JSON line per command until its stdin closes: `wait SEQ TIMEOUT_S`, `cpu`,
`add K`, `repoll` and `all`. It dies with its parent.
"""

import asyncio
import contextlib
import json
import sys
import time
from typing import Any, cast

from .. import environment
from ..contract import die_with_parent
from .subscribers import PollSubscriber, Subscriber, Subscriptions

POLLS_PARK_S = 0.05  # after the last long poll is sent: it reaches the server and parks before we say we hold it


class Holder(Subscriptions):
    """The client process's subscribers, the deliveries they recorded, and the pipe that answers the caller."""

    repoll_at_once = False  # the caller's `repoll` sends the next polls

    def __init__(self, url: str, transport: str, compression: bool, timeout_s: float) -> None:
        super().__init__(url, transport, compression, timeout_s)
        self.held = 0  # subscribed and not failed: the count a message must reach to be complete
        self.rows: list[tuple[int, int, float, float]] = []  # (user, seq, publish time, arrival), monotonic
        self.counts: dict[int, int] = {}  # seq -> deliveries so far
        self.complete: dict[int, asyncio.Future[float]] = {}  # seq -> the client's CPU when its last one arrived

    def delivered(self, subscriber: Subscriber, seq: int, t: float, size: int, now: float) -> None:
        self.rows.append((subscriber.user, seq, t, now + self.clock_offset))
        self.counts[seq] = self.counts.get(seq, 0) + 1
        if self.counts[seq] == self.held:  # the last one: the client's CPU now is what this message cost it
            done = self.complete.setdefault(seq, self.loop.create_future())
            if not done.done():
                done.set_result(time.process_time())

    async def add(self, k: int) -> str | None:
        """k more subscribers, each subscribed before the next; None, or what went wrong with the first that failed."""
        for _ in range(k):
            subscriber = await self.connect(len(self.subscribers))
            if subscriber.ended:
                return f"subscriber {subscriber.user} could not subscribe: {', '.join(sorted(self.lost))}"
            self.held += 1
        if self.transport_name == "poll":
            await asyncio.sleep(POLLS_PARK_S)
        return None

    def wait_answer(self, seq: int) -> dict[str, Any]:
        got = sorted((i, (r - t) * 1000) for i, s, t, r in self.rows if s == seq)
        done = self.complete[seq]
        return {"deliveries": [d for _, d in got], "cpu_s": done.result() if done.done() else time.process_time()}

    async def serve_pipe(self) -> None:
        """Answer the caller's commands, one JSON line each, until it closes the pipe."""
        reader = asyncio.StreamReader()
        await self.loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := (await reader.readline()).decode().split():
            if line[0] == "add":
                problem = await self.add(int(line[1]))
                reply({"error": problem} if problem else {"held": self.held})
            elif line[0] == "cpu":
                reply({"cpu_s": time.process_time()})
            elif line[0] == "repoll" and self.transport_name != "poll":
                reply({"error": f"repoll is for long polls; these subscribers are {self.transport_name}"})
            elif line[0] == "repoll":
                for subscriber in cast(list[PollSubscriber], self.subscribers):  # transport "poll": all are
                    if not subscriber.ended:
                        subscriber.poll()
                reply({"cpu_s": time.process_time()})
            elif line[0] == "all":
                reply({"rows": [{"index": i, "seq": s, "t": t, "received": r, "delivery_ms": (r - t) * 1000}
                                for i, s, t, r in self.rows]})
            elif line[0] == "wait":
                seq = int(line[1])
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.complete.setdefault(seq, self.loop.create_future())),
                                           float(line[2]))
                reply(self.wait_answer(seq))
            else:
                reply({"error": f"unknown command {line[0]!r}: add, cpu, repoll, all or wait"})


def reply(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def hold(url: str, transport: str, n: int, compression: bool, timeout_s: float) -> None:
    holder = Holder(url, transport, compression, timeout_s)
    problem = await holder.add(n)
    print(f"FAILED {problem}" if problem else f"READY {n}", flush=True)
    if not problem:
        await holder.serve_pipe()
    for subscriber in holder.subscribers:
        subscriber.close()


def main(argv: list[str]) -> None:
    die_with_parent()
    url, transport, n, compression, timeout_s = argv[0], argv[1], int(argv[2]), argv[3] == "on", float(argv[4])
    problem = environment.file_limit_reason(n)
    if problem:
        print(f"FAILED {problem}", flush=True)
        return
    asyncio.run(hold(url, transport, n, compression, timeout_s))


if __name__ == "__main__":
    main(sys.argv[1:])
