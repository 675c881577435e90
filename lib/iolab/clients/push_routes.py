"""A push server's JSON routes, asked from the process that drives its subscribers.

Lesson 12's push servers count their subscribers (/stats) and broadcast a
message when asked (/publish). The subscribers themselves run in client
processes (subscribers.py, holder.py); whoever drives them (a lesson, a
benchmark, a test) publishes and waits through these, the plain way.
"""

import json
import time
import urllib.request
from typing import Any, Protocol


class RunInProgress(Protocol):
    """What wait_until_held reads of a subscribers run (an iolab.load.LoadRun)."""

    time_zero: float | None

    def done(self) -> bool: ...

    def result(self) -> Any: ...


def get_json(url: str, path: str, timeout_s: float = 10.0) -> Any:
    """GET a push server's JSON route (/stats, /publish?...) and return what it answered, decoded."""
    with urllib.request.urlopen(url.rstrip("/") + path, timeout=timeout_s) as answer:
        return json.loads(answer.read())


def counted(url: str) -> int:
    """Subscribers the server holds now, every transport together."""
    return sum(get_json(url, "/stats")["subscribers"].values())


def wait_until_held(run: RunInProgress, url: str, subscribers: int, timeout_s: float = 30.0) -> int:
    """Block until the server counts `subscribers` in all (those held before the run included) and the run's go
    has passed, so that a message published now is recorded on the run's clock; how many it holds then.

    Raises TimeoutError naming what was missing, RuntimeError if the run ended first.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        held = counted(url)
        went = run.time_zero is not None and time.perf_counter() > run.time_zero
        if held >= subscribers and went:
            return held
        if run.done():
            raise RuntimeError(f"the subscribers' run ended before it held them: {run.result().stop_reason}")
        time.sleep(0.02)
    raise TimeoutError(f"after {timeout_s} s the server counts {counted(url)} of {subscribers} subscribers"
                       f" and the run's go has{' ' if run.time_zero else ' not '}come")


def publish(url: str, size: int = 64, how: str | None = None) -> dict[str, Any]:
    """One broadcast: the server's answer {"seq", "subscribers", "how", "wall_s", "cpu_s"}."""
    answer: dict[str, Any] = get_json(url, f"/publish?size={size}" + (f"&how={how}" if how else ""))
    return answer
