"""The subscribers kind held open and asked over a pipe.

The client kind `subscribers` (subscribers.py) runs bounded: its subscribers wait for so many messages, then it
reports. A lesson that reads each message as it goes needs them held instead, while it publishes, measures the
server and stops a process: `Held(url, "ws", 1000)` starts a client process holding 1000 subscribers of one
transport (subscribers.py's protocols, connected one after another, so the server's send order is theirs) and
returns once all are subscribed. The caller then asks it over a pipe, one JSON line each way: `wait SEQ` (every
subscriber's delivery of message SEQ, in send order, and the client's CPU when the last one arrived), `cpu`,
`add K`, `repoll` (long polls ask again only when told, so a message's answers and the re-polls are measured
apart) and `all`. Every wait is bounded; the process dies with its parent.

    python -m iolab.clients.held_subscribers URL TRANSPORT N on|off TIMEOUT_S    # READY N, then the pipe
"""

import asyncio
import contextlib
import json
import sys
import time

from .. import children, environment
from ..contract import die_with_parent
from .subscribers import TRANSPORTS, Subscriptions

CONNECT_S = 60.0  # every subscriber connected within this, 10,000 included
ANSWER_S = 60.0  # the most the caller waits for an answer on the pipe
MOST = 20_000  # subscribers one process may hold
POLLS_PARK_S = 0.05  # after the last long poll is sent: it reaches the server and parks before we say we hold it


class Held:
    """`with Held(url, "ws", 1000) as subscribers:` a client process holding 1000 WebSocket subscribers."""

    def __init__(self, url, transport, n, compression=False, timeout_s=CONNECT_S):
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {list(TRANSPORTS)}, got {transport!r}")
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MOST:
            raise ValueError(f"n must be a whole number of subscribers from 1 to {MOST:,}, got {n!r}")
        problem = environment.file_limit_reason(n)  # raised here, so the client process inherits it
        if problem:
            raise ValueError(problem)
        self.n, self.transport = n, transport
        self.process = children.spawn(
            children.python("-m", __name__, url, transport, n, "on" if compression else "off", timeout_s),
            stdin=children.subprocess.PIPE)
        try:
            line = self._line(timeout_s + ANSWER_S)
        except BaseException:
            self.close()
            raise
        if not line.startswith("READY"):
            self.close()
            raise RuntimeError(f"the {transport} subscribers of {url} did not all subscribe: {line}")

    @property
    def pid(self):
        return self.process.pid

    def _line(self, timeout_s):
        said = children.read_until(self.process.stdout, b"\n", timeout_s)
        if not said.endswith(b"\n"):
            raise RuntimeError(f"the subscribers' client said {said[-200:]!r} and then nothing within {timeout_s} s"
                               f" (exit status {self.process.poll()})")
        return said.decode().strip()

    def ask(self, command, timeout_s=ANSWER_S):
        self.process.stdin.write(f"{command}\n".encode())
        self.process.stdin.flush()
        answer = json.loads(self._line(timeout_s))
        if "error" in answer:
            raise RuntimeError(f"the subscribers' client, asked {command!r}: {answer['error']}")
        return answer

    def cpu_s(self):
        """The client's own CPU seconds so far, as it reads them."""
        return self.ask("cpu")["cpu_s"]

    def wait_for(self, seq, timeout_s=ANSWER_S):
        """Every subscriber's delivery of message `seq` in ms, in send order, once all have it (or `timeout_s` has
        passed: then fewer); `last_cpu_s` holds the client's CPU when the last one arrived."""
        found = self.ask(f"wait {seq} {timeout_s}", timeout_s + 5)
        self.last_cpu_s = found["cpu_s"]
        return found["deliveries"]

    def add(self, k):
        """k more subscribers, connected after those already held; returns how many are held now."""
        self.n = self.ask(f"add {k}", CONNECT_S + ANSWER_S)["held"]
        return self.n

    def repoll(self):
        """Long polls only: every subscriber sends its next poll now. The client's CPU when all were sent."""
        return self.ask("repoll")["cpu_s"]

    def deliveries(self):
        """Every delivery so far: {index, seq, t, received, delivery_ms}."""
        return self.ask("all")["rows"]

    def close(self):
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        self.process.kill()
        self.process.wait()
        self.process.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- The client process ------------------------------------------------------------------------------------------

class Holder(Subscriptions):
    """The client process's subscribers, the deliveries they recorded, and the pipe that answers the caller."""

    repoll_at_once = False  # the caller's `repoll` sends the next polls

    def __init__(self, url, transport, compression, timeout_s):
        super().__init__(url, transport, compression, timeout_s)
        self.held = 0  # subscribed and not failed: the count a message must reach to be complete
        self.rows, self.counts, self.complete = [], {}, {}

    def delivered(self, subscriber, seq, t, size, now):
        self.rows.append((subscriber.user, seq, t, now + self.clock_offset))
        self.counts[seq] = self.counts.get(seq, 0) + 1
        if self.counts[seq] == self.held:  # the last one: the client's CPU now is what this message cost it
            done = self.complete.setdefault(seq, self.loop.create_future())
            if not done.done():
                done.set_result(time.process_time())

    async def add(self, k):
        """k more subscribers, each subscribed before the next; None, or what went wrong with the first that failed."""
        for _ in range(k):
            subscriber = await self.connect(len(self.subscribers))
            if subscriber.ended:
                return f"subscriber {subscriber.user} could not subscribe: {', '.join(sorted(self.lost))}"
            self.held += 1
        if self.transport_name == "poll":
            await asyncio.sleep(POLLS_PARK_S)
        return None

    def wait_answer(self, seq):
        got = sorted((i, (r - t) * 1000) for i, s, t, r in self.rows if s == seq)
        done = self.complete[seq]
        return {"deliveries": [d for _, d in got], "cpu_s": done.result() if done.done() else time.process_time()}

    async def serve_pipe(self):
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
                for subscriber in self.subscribers:
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


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def hold(url, transport, n, compression, timeout_s):
    holder = Holder(url, transport, compression, timeout_s)
    problem = await holder.add(n)
    print(f"FAILED {problem}" if problem else f"READY {n}", flush=True)
    if not problem:
        await holder.serve_pipe()
    for subscriber in holder.subscribers:
        subscriber.close()


def main(argv):
    die_with_parent()
    url, transport, n, compression, timeout_s = argv[0], argv[1], int(argv[2]), argv[3] == "on", float(argv[4])
    problem = environment.file_limit_reason(n)
    if problem:
        print(f"FAILED {problem}", flush=True)
        return
    asyncio.run(hold(url, transport, n, compression, timeout_s))


if __name__ == "__main__":
    main(sys.argv[1:])
