"""The subscribers kind held open, asked over a pipe: the driving process's side.

The client kind `subscribers` (subscribers.py) runs bounded: its subscribers wait for so many messages, then it
reports. A lesson that reads each message as it goes needs them held instead, while it publishes, measures the
server and stops a process: `Held(url, "ws", 1000)` starts a client process (holder.py) holding 1000 subscribers
of one transport (subscribers.py's protocols, connected one after another, so the server's send order is theirs)
and returns once all are subscribed. The caller then asks it over a pipe, one JSON line each way: `wait SEQ`
(every subscriber's delivery of message SEQ, in send order, and the client's CPU when the last one arrived),
`cpu`, `add K`, `repoll` (long polls ask again only when told, so a message's answers and the re-polls are
measured apart) and `all`. Every wait is bounded; the process dies with its parent.
"""

import contextlib
import json
from typing import IO, Any, TypedDict, cast

from .. import children, environment
from . import holder
from .subscribers import TRANSPORTS

CONNECT_S = 60.0  # every subscriber connected within this, 10,000 included
ANSWER_S = 60.0  # the most the caller waits for an answer on the pipe
MOST = 20_000  # subscribers one process may hold


class Answer(TypedDict, total=False):
    """One JSON line from the client process (holder.py's reply): what the command asked for, or why not."""

    error: str  # any command it could not do
    held: int  # add K: the subscribers held now
    cpu_s: float  # cpu, repoll, wait SEQ: the client's CPU seconds
    deliveries: list[float]  # wait SEQ: each subscriber's delivery in ms, in send order
    rows: list[dict[str, Any]]  # all: every delivery so far


class Held:
    """`with Held(url, "ws", 1000) as subscribers:` a client process holding 1000 WebSocket subscribers."""

    last_cpu_s: float  # the client's CPU when the last delivery of the message wait_for waited for arrived

    def __init__(self, url: str, transport: str, n: int, compression: bool = False,
                 timeout_s: float = CONNECT_S) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {list(TRANSPORTS)}, got {transport!r}")
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MOST:
            raise ValueError(f"n must be a whole number of subscribers from 1 to {MOST:,}, got {n!r}")
        problem = environment.file_limit_reason(n)  # raised here, so the client process inherits it
        if problem:
            raise ValueError(problem)
        self.n, self.transport = n, transport
        self.process = children.spawn(
            children.python("-m", holder.__name__, url, transport, n, "on" if compression else "off", timeout_s),
            stdin=children.subprocess.PIPE)
        # Both its pipes are open: commands go in, one JSON line each; answers come out.
        self._commands, self._answers = cast(IO[bytes], self.process.stdin), cast(IO[bytes], self.process.stdout)
        try:
            line = self._line(timeout_s + ANSWER_S)
        except BaseException:
            self.close()
            raise
        if not line.startswith("READY"):
            self.close()
            raise RuntimeError(f"the {transport} subscribers of {url} did not all subscribe: {line}")

    @property
    def pid(self) -> int:
        return self.process.pid

    def _line(self, timeout_s: float) -> str:
        said = children.read_until(self._answers, b"\n", timeout_s)
        if not said.endswith(b"\n"):
            raise RuntimeError(f"the subscribers' client said {said[-200:]!r} and then nothing within {timeout_s} s"
                               f" (exit status {self.process.poll()})")
        return said.decode().strip()

    def ask(self, command: str, timeout_s: float = ANSWER_S) -> Answer:
        self._commands.write(f"{command}\n".encode())
        self._commands.flush()
        answer: Answer = json.loads(self._line(timeout_s))
        if "error" in answer:
            raise RuntimeError(f"the subscribers' client, asked {command!r}: {answer['error']}")
        return answer

    def cpu_s(self) -> float:
        """The client's own CPU seconds so far, as it reads them."""
        return self.ask("cpu")["cpu_s"]

    def wait_for(self, seq: int, timeout_s: float = ANSWER_S) -> list[float]:
        """Every subscriber's delivery of message `seq` in ms, in send order, once all have it (or `timeout_s` has
        passed: then fewer); `last_cpu_s` holds the client's CPU when the last one arrived."""
        found = self.ask(f"wait {seq} {timeout_s}", timeout_s + 5)
        self.last_cpu_s = found["cpu_s"]
        return found["deliveries"]

    def add(self, k: int) -> int:
        """k more subscribers, connected after those already held; returns how many are held now."""
        self.n = self.ask(f"add {k}", CONNECT_S + ANSWER_S)["held"]
        return self.n

    def repoll(self) -> float:
        """Long polls only: every subscriber sends its next poll now. The client's CPU when all were sent."""
        return self.ask("repoll")["cpu_s"]

    def deliveries(self) -> list[dict[str, Any]]:
        """Every delivery so far: {index, seq, t, received, delivery_ms}."""
        return self.ask("all")["rows"]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._commands.close()
        self.process.kill()
        self.process.wait()
        self._answers.close()

    def __enter__(self) -> "Held":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
