"""Lesson 05's measurements of a running server.

A half-sent request, a blocked loop, CPU while idle, the loop's trace, and a fair throughput race.
"""

import selectors
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from iolab import contract, load, metrics, neighbours, usage
from iolab.contract import check_loopback
from iolab.http1 import AnswerReader, get_request

TIMEOUT_S = 10.0


def _address(url):
    parts = urlsplit(url)
    check_loopback(parts.hostname or "")
    return parts.hostname, parts.port


def _timed_get(address, path):
    """Seconds until `path` is answered on a fresh connection, with its body."""
    began = time.perf_counter()
    with socket.create_connection(address, timeout=TIMEOUT_S) as sock:
        sock.sendall(get_request(path, keep_alive=False))
        body = AnswerReader(sock).body()
    return time.perf_counter() - began, body


def half_sent_wait_s(url, finish_after_s=0.5):
    """How long `/` waits while another client has sent half a request and finishes it `finish_after_s` later."""
    address = _address(url)
    with socket.create_connection(address, timeout=TIMEOUT_S) as dawdler:
        dawdler.sendall(b"GET / HTTP/1.1\r\nHost: la")
        time.sleep(0.05)  # let the server take it in (a blocking server now waits in recv)
        finisher = threading.Timer(finish_after_s, dawdler.sendall, args=(b"b\r\nConnection: close\r\n\r\n",))
        finisher.start()
        try:
            waited, body = _timed_get(address, "/")
        finally:
            finisher.join()
        AnswerReader(dawdler).body()
    if body != "hello world\n":
        raise RuntimeError(f"/ answered {body!r}")
    return waited


def blocked_wait_s(url, blocking_path="/sync-sleep?ms=300", gap_s=0.05):
    """How long `/` waits when sent `gap_s` after a request for `blocking_path` on another connection."""
    address = _address(url)
    with socket.create_connection(address, timeout=TIMEOUT_S) as blocker:
        blocker.sendall(get_request(blocking_path, keep_alive=False))
        time.sleep(gap_s)
        waited, _ = _timed_get(address, "/")
        AnswerReader(blocker).body()
    return waited


def pipelined_wait_s(url, first_path="/async-sleep?ms=300"):
    """Send `first_path` and `/` in one write on one connection; seconds until `/` is answered."""
    with socket.create_connection(_address(url), timeout=TIMEOUT_S) as sock:
        began = time.perf_counter()
        sock.sendall(get_request(first_path) + get_request("/", keep_alive=False))
        answers = AnswerReader(sock)
        answers.body()
        if answers.body() != "hello world\n":
            raise RuntimeError("the second pipelined answer was not /'s")
        return time.perf_counter() - began


def cpu_demand_percent(pid, seconds=1.0):
    """(CPU used, time queued for a CPU) as percent of `seconds`, for process `pid`.

    psutil's cpu_percent alone undercounts a spinning process on a shared
    machine: it wants a whole core but gets only what the scheduler gives it.
    The queued time (None where the kernel does not say) is the rest of its demand.
    """
    process = psutil.Process(pid)
    queued_before = usage.queued_ns(pid)
    used_before = sum(process.cpu_times()[:2])
    began = time.perf_counter()
    time.sleep(seconds)
    used = sum(process.cpu_times()[:2]) - used_before
    queued_after = usage.queued_ns(pid)
    elapsed = time.perf_counter() - began
    queued = None if queued_before is None or queued_after is None else (queued_after - queued_before) / 1e9
    return used / elapsed * 100, None if queued is None else queued / elapsed * 100


def slow_callback_warnings(stderr_text):
    """[(callback, ms), ...] for every slow-callback warning the loop wrote to stderr."""
    return contract.parse_slow_callbacks(stderr_text)


def read_trace(path):
    """The loop's iterations as dicts (t, select_ms, callbacks_ms, events, ready, timers), oldest first."""
    return contract.parse_trace(Path(path).read_text())


def hello_burst(url, requests=2000, connections=10):
    """A closed-loop burst of `/` from this process: (began, ended) on time.monotonic(), and requests per second.

    Timed here rather than in a load process, so a trace can be cut to exactly
    the burst: no client start-up before it, no connection teardown inside it.
    """
    address = _address(url)
    payload = get_request("/")
    body = b"hello world\n"  # every answer to / ends with it, so counting it counts answers
    socks = [socket.create_connection(address, timeout=TIMEOUT_S) for _ in range(connections)]
    selector = selectors.DefaultSelector()
    try:
        tails = {}
        began = time.monotonic()
        for sock in socks:
            sock.sendall(payload)
            selector.register(sock, selectors.EVENT_READ)
            tails[sock] = b""
        sent, answered = connections, 0
        while answered < sent:
            ready = selector.select(TIMEOUT_S)
            if not ready:
                raise TimeoutError(f"no answer from {url} for {TIMEOUT_S} s")
            for key, _ in ready:
                data = tails[key.fileobj] + key.fileobj.recv(65536)
                count = data.count(body)
                tails[key.fileobj] = data[data.rfind(body) + len(body):] if count else data
                answered += count
                for _ in range(min(count, requests - sent)):
                    key.fileobj.sendall(payload)
                    sent += 1
        ended = time.monotonic()
    finally:
        selector.close()
        for sock in socks:
            sock.close()
    return began, ended, answered / (ended - began)


def _overlap_ms(start, duration_s, window_start, window_end):
    return max(0.0, min(start + duration_s, window_end) - max(start, window_start)) * 1000


def trace_summary(iterations, start=None, end=None):
    """Where the loop's time went in the window [start, end), and how many sockets each wakeup brought.

    The window is the whole trace by default. Each iteration's select() and callback intervals are clipped to the window,
    so a long idle select() before the window does not count inside it.
    """
    if start is None:
        last = iterations[-1]
        start, end = iterations[0]["t"], last["t"] + (last["select_ms"] + last["callbacks_ms"]) / 1000
    select_ms = callbacks_ms = 0.0
    woken = []
    for it in iterations:
        selected = it["t"] + it["select_ms"] / 1000
        select_ms += _overlap_ms(it["t"], it["select_ms"] / 1000, start, end)
        callbacks_ms += _overlap_ms(selected, it["callbacks_ms"] / 1000, start, end)
        if start <= selected < end:
            woken.append(it)
    busy = [it for it in woken if it["events"]]
    return {
        "iterations": len(woken),
        "events": sum(it["events"] for it in woken),
        "max_events": max((it["events"] for it in woken), default=0),
        "mean_events_when_woken": sum(it["events"] for it in busy) / len(busy) if busy else 0.0,
        "select_ms": select_ms,
        "callbacks_ms": callbacks_ms,
        "select_share": select_ms / (select_ms + callbacks_ms) if select_ms + callbacks_ms else 0.0,
    }


def alternating_rps(urls, requests, concurrency, repetitions, client="raw", timeout_s=10.0, max_duration_s=60.0):
    """{name: [rps, ...]} with runs alternating between the servers, so drift on a noisy machine hits both alike."""
    rps = {name: [] for name in urls}
    for repetition in range(repetitions):
        # Alternate who goes first too: the second run of a pair may find a warmer or a busier machine.
        order = list(urls) if repetition % 2 == 0 else list(reversed(urls))
        for name in order:
            result = load.run_load(
                urls[name], requests=requests, concurrency=concurrency, kind=f"closed_{client}",
                timeout_s=timeout_s, max_duration_s=max_duration_s,
            )
            summary = metrics.summarize(result)
            if summary.errors:
                raise RuntimeError(f"{name}: {summary.errors} errors in a hello-world run: {summary.error_kinds}")
            rps[name].append(summary.rps)
    return rps


def step_profile(server, can_wait=True, idle_s=1.0, users=8, wait_ms=200, finish_after_s=0.5):
    """What one server can and cannot do: what a half-sent request costs everyone else, how long
    `users` simultaneous waits of `wait_ms` take, and the CPU it burns with no client at all; and what else held
    the CPUs meanwhile (`neighbours`)."""
    with neighbours.watching() as watch:
        cpu_percent, queued_percent = cpu_demand_percent(server.pid, idle_s)
        profile = {
            "half_sent_wait_ms": half_sent_wait_s(server.url, finish_after_s) * 1000,
            "waits_ms": None,
            "idle_cpu_percent": cpu_percent,
            "idle_queued_percent": queued_percent,
        }
        if can_wait:
            samples = load.fire_staggered([server.url + f"/async-sleep?ms={wait_ms}"] * users, gap_s=0.0,
                                          timeout_s=TIMEOUT_S)
            if any(sample.status != 200 for sample in samples):
                raise RuntimeError(f"/async-sleep failed on {server.name}: {[s.status or s.error for s in samples]}")
            profile["waits_ms"] = (max(s.end for s in samples) - min(s.start for s in samples)) * 1000
    return profile | {"neighbours": watch.found.as_dict() if watch.found else None}
