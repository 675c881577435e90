"""Section 3: SIGTERM with requests in flight.

Each server without a drain and with one.
An open loop sends /async-sleep?ms=R at X a second, on a fixed schedule, for `seconds`; at the end of its
sending, SIGTERM reaches the server. By Little's law about L = X·R requests are in flight then.
"""

import math
import os
import signal
import time

from iolab import neighbours
from iolab.load import start_load
from iolab.servers import serve

from . import model

TIMEOUT_S = 10


def sigterm_during_load(name, rate, hold_ms, seconds, route="/async-sleep", **options):
    """Start `name` with `options`, load `route` with holds of `hold_ms`, SIGTERM it when the schedule has sent its
    last request.

    Returns each request's (sent, ended, answered) on the load's clock, when the signal left, how long the
    server took to exit after it, and what else held the CPUs meanwhile."""
    with neighbours.watching() as watch, serve(name, **options) as server:
        run = start_load(f"{server.url}{route}?ms={hold_ms}", kind="open", rate_rps=rate, schedule="fixed",
                         requests=int(rate * seconds), concurrency=int(rate * hold_ms / 1000) + 20,
                         timeout_s=TIMEOUT_S)
        try:
            signalled = run.sleep_until(seconds)
            os.kill(server.pid, signal.SIGTERM)
            exited = wait_exit(server.process)
            result = run.wait(timeout=TIMEOUT_S + 5)
        finally:
            run.stop()
    calls = [(s.start, s.end, s.status == 200) for s in result.samples]
    return {"calls": calls, "signalled_s": signalled, "exit_s": exited, "neighbours": watch.found.as_dict()}


def wait_exit(process, timeout_s=TIMEOUT_S):
    """Seconds until `process` exits (it was just signalled), or None if it is still there after timeout_s."""
    began = time.perf_counter()
    while process.poll() is None:
        if time.perf_counter() - began > timeout_s:
            return None
        time.sleep(0.002)
    return time.perf_counter() - began


def summarize(how, run, rate, hold_ms, drain_ms, spared_ms):
    """The row a run keeps: requests sent before the signal, those in flight at it, those that failed.

    Without a drain, the requests that fail are those sent before the signal and still in flight when the server
    stops answering, `spared_ms` = (soonest, latest) after the signal: sent in the last R − spared before it, at X a
    second on a fixed schedule, so X·(R − spared) of them, give or take one at each end; a request's time lies
    between R and the longest any took."""
    signalled = run["signalled_s"]
    before = [(sent, ended, ok) for sent, ended, ok in run["calls"] if sent < signalled]
    answered = [ended - sent for sent, ended, ok in before if ok]
    return {"how": how, "drain_ms": drain_ms, "rate": rate, "hold_ms": hold_ms, "sent": len(before),
            "little_L": rate * hold_ms / 1000,
            "in_flight": model.in_flight_at([(sent, ended) for sent, ended, _ in before], signalled),
            "failed": sum(1 for *_, ok in before if not ok),
            "longest_ms": max(answered, default=hold_ms / 1000) * 1000,
            "exit_ms": None if run["exit_s"] is None else run["exit_s"] * 1000, "spared_ms": list(spared_ms),
            "neighbours": run.get("neighbours")}


UVICORN_WAIT_MS = 100  # uvicorn's shutdown sleeps 0.1 s before its graceful timeout starts (uvicorn/server.py)
SLACK = 20  # threads or connections beyond L = X·R, so no request waits for one


def runs(rate, hold_ms, drain_ms):
    """Each server's runs: (server, route, the setting as its flag reads, {option: value} without a drain, with one).

    Tornado's --drain-ms is ours. uvicorn's --timeout-graceful-shutdown is in seconds. gunicorn's --graceful-timeout
    is in whole seconds, so the drain rounds up; its workers are one gthread worker with a thread for each request
    in flight and some to spare (a sync worker holds one request, so L of them would need L processes)."""
    threads = int(rate * hold_ms / 1000) + SLACK
    graceful_s = math.ceil(drain_ms / 1000)
    return [("service_app", "/async-sleep", "--drain-ms", {"drain_ms": 0}, {"drain_ms": drain_ms}),
            ("uvicorn_drain", "/async-sleep", "--timeout-graceful-shutdown", {"timeout_graceful_shutdown": 0},
             {"timeout_graceful_shutdown": drain_ms / 1000}),
            ("gunicorn_drain", "/sync-sleep", "--graceful-timeout",
             {"worker_class": "gthread", "threads": threads, "graceful_timeout": 0},
             {"worker_class": "gthread", "threads": threads, "graceful_timeout": graceful_s})]


def spared(server, exit_ms):
    """The window after SIGTERM in which requests in flight still get their answers, without a drain: uvicorn's
    0.1 to 0.2 s; for the others, until they exited (Tornado at once; gunicorn's arbiter sends SIGKILL right after
    SIGTERM when its graceful timeout is 0)."""
    return (UVICORN_WAIT_MS, 2 * UVICORN_WAIT_MS) if server == "uvicorn_drain" else (0.0, exit_ms or 0.0)


def measure(rate, hold_ms, seconds, drain_ms):
    """Tornado's service_app, uvicorn and gunicorn, each without a drain and with one of drain_ms: a row each.

    Without a drain, our Tornado answers nothing after SIGTERM once the signal is handled (within its measured time
    to exit). uvicorn notices the signal on its next tick (every 0.1 s), then sleeps 0.1 s before its timeout of 0
    starts (uvicorn/server.py, main_loop and shutdown): it still answers for 0.1 to 0.2 s. gunicorn's arbiter with a
    graceful timeout of 0 sends its workers SIGTERM then SIGKILL at once (gunicorn/arbiter.py, Arbiter.stop)."""
    rows = []
    for server, route, flag, cut, drained in runs(rate, hold_ms, drain_ms):
        for options in (cut, drained):
            run = sigterm_during_load(server, rate, hold_ms, seconds, route=route, **options)
            value = options[flag[2:].replace("-", "_")]
            drain = value if flag == "--drain-ms" else value * 1000  # the others' settings are in seconds
            row = summarize(f"{server}, {flag} {value:g}", run, rate, hold_ms, drain,
                            spared(server, (run["exit_s"] or 0.0) * 1000))
            rows.append(row | {"server": server})
    return rows
