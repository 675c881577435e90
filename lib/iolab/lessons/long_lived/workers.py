"""Section 2: long polls on sync workers and on an event loop.

gunicorn's sync workers, against Tornado's one loop.

w sync workers hold w parked polls. Poll w+1 and a plain GET / wait in the
listen backlog until a message frees a worker: a closed system with N = w.
Tornado holds every poll and answers GET / at once. gunicorn's --timeout
kills a worker parked longer, and its log says so.
"""

import json
import os
import re
import selectors
import signal
import socket
import time

from iolab import registry, servers

GUNICORN = "gunicorn_longpoll"
TORNADO = "tornado_push"
ARBITER_TICK_S = 1.0  # gunicorn's arbiter looks at its workers once a second (arbiter.py: wait_for_signals(1.0))
READ_LIMIT_S = 30.0  # no request of this section may hang the notebook
TIMEOUT_LINE = re.compile(r"WORKER TIMEOUT \(pid:(\d+)\)")


class Request:
    """One HTTP/1.1 request on its own connection (Connection: close), read to its end without blocking others."""

    def __init__(self, port, path, what):
        self.what, self.path = what, path
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=READ_LIMIT_S)
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        self.sent = time.monotonic()
        self.sock.setblocking(False)
        self.data, self.answered = b"", None

    def status(self):
        first = self.data.split(b"\r\n", 1)[0].split()
        return int(first[1]) if len(first) > 1 and first[1].isdigit() else None

    def body(self):
        return self.data.partition(b"\r\n\r\n")[2]

    def row(self, published):
        """What the results keep: times in seconds from the request's send, and from the publish."""
        pid = None
        try:
            pid = json.loads(self.body()).get("pid")
        except (ValueError, AttributeError):
            pass
        return {"what": self.what, "status": self.status(), "pid": pid,
                "r_s": None if self.answered is None else self.answered - self.sent,
                "after_publish_s": None if self.answered is None or published is None else self.answered - published}


def read_until(requests, deadline):
    """Read every request's answer until each has ended (EOF) or `deadline` (monotonic) passes."""
    open_ = [r for r in requests if r.answered is None]
    with selectors.DefaultSelector() as selector:
        for request in open_:
            selector.register(request.sock, selectors.EVENT_READ, request)
        while open_ and time.monotonic() < deadline:
            for key, _ in selector.select(max(0.0, deadline - time.monotonic())):
                request = key.data
                try:
                    chunk = request.sock.recv(65536)
                except (ConnectionResetError, BlockingIOError):
                    chunk = b""
                if chunk:
                    request.data += chunk
                    continue
                request.answered = time.monotonic()
                selector.unregister(request.sock)
                request.sock.close()
                open_.remove(request)


def close(requests):
    for request in requests:
        request.sock.close()


def get_json(server, path):
    request = Request(server.port, path, path)
    read_until([request], time.monotonic() + READ_LIMIT_S)
    return json.loads(request.body())


def plain_ms(server, times=5):
    """The median time of GET / on an idle server: what a request costs when nothing holds it up."""
    took = []
    for _ in range(times):
        request = Request(server.port, "/", "GET /")
        read_until([request], time.monotonic() + READ_LIMIT_S)
        took.append((request.answered - request.sent) * 1000)
    return sorted(took)[len(took) // 2]


def park_then_publish(server, polls, hold_s, publish):
    """`polls` long polls and a GET /, sent in that order; after `hold_s`, one message is published.

    Returns (rows, answered before the publish, the publish's monotonic time).
    """
    cursor = get_json(server, "/stats")["published"]
    requests = [Request(server.port, f"/poll?cursor={cursor}", f"poll {i + 1}") for i in range(polls)]
    # Let every worker take its poll before the GET, so the GET queues behind them.
    time.sleep(min(0.1, hold_s / 4))
    requests.append(Request(server.port, "/", "GET /"))
    read_until(requests, requests[-1].sent + hold_s)
    early = [r.what for r in requests if r.answered is not None]
    published = time.monotonic()
    publish()
    read_until(requests, published + READ_LIMIT_S)
    close(requests)
    return [r.row(published) for r in requests], early, published


def hold_on_gunicorn(workers, hold_s, timeout_s):
    """W + 1 polls and a GET / on W sync workers, then one poll parked past gunicorn's --timeout."""
    with servers.serve(GUNICORN, workers=workers, timeout=timeout_s) as server:
        plain = plain_ms(server)
        rows, early, _ = park_then_publish(server, workers + 1, hold_s,
                                           lambda: os.kill(server.pid, signal.SIGUSR1))
        # One more poll, parked with no message to come: gunicorn's arbiter kills its worker after --timeout.
        cursor = get_json(server, "/stats")["published"]
        parked = Request(server.port, f"/poll?cursor={cursor}", "parked poll")
        read_until([parked], parked.sent + timeout_s + ARBITER_TICK_S + READ_LIMIT_S / 6)
        close([parked])
        time.sleep(0.1)  # the arbiter logs before it signals; give its line time to reach the file
        killed = TIMEOUT_LINE.findall(server.stderr_tail(200))
        log = [line for line in server.stderr_tail(200).splitlines() if "WORKER TIMEOUT" in line]
    cut_s = None if parked.answered is None else parked.answered - parked.sent
    return {"server": GUNICORN, "workers": workers, "hold_s": hold_s, "plain_ms": plain, "requests": rows,
            "answered_before_publish": early,
            "timeout": {"timeout_s": timeout_s, "cut_s": cut_s, "status": parked.status(),
                        "log": log[-1].split("] ")[-1] if log else None, "killed_pid": int(killed[-1]) if killed else None}}


def hold_on_tornado(polls, hold_s):
    """The same polls and GET / on Tornado's event loop: one process holds them all."""
    reason = missing(TORNADO)
    if reason:
        return {"server": TORNADO, "skipped": reason}
    with servers.serve(TORNADO) as server:
        plain = plain_ms(server)
        rows, early, _ = park_then_publish(server, polls, hold_s, lambda: get_json(server, "/publish?size=64"))
    return {"server": TORNADO, "hold_s": hold_s, "plain_ms": plain, "requests": rows, "answered_before_publish": early}


def missing(name):
    """Why `name` cannot run here, or None."""
    return registry.missing(name)


def run(workers=2, hold_s=0.5, timeout_s=2):
    """Section 2's experiment: the same W + 1 polls and GET / on gunicorn's W workers and on Tornado."""
    if hold_s * 2 > timeout_s:
        raise ValueError(f"hold_s must be at most half of timeout_s, so no held worker meets the timeout:"
                         f" got hold_s={hold_s}, timeout_s={timeout_s}")
    reason = missing(GUNICORN)
    if reason:
        return {"skipped": reason}
    return {"workers": workers, "hold_s": hold_s, "gunicorn": hold_on_gunicorn(workers, hold_s, timeout_s),
            "tornado": hold_on_tornado(workers + 1, hold_s)}


def table(result):
    """One line per request: the server, what it was, its status and its time, for the notebook to print."""
    lines = []
    for side in ("gunicorn", "tornado"):
        part = result.get(side, {})
        if "skipped" in part:
            lines.append(f"{side}: skipped, {part['skipped']}")
            continue
        for row in part.get("requests", []):
            r = "no answer" if row["r_s"] is None else f"{row['r_s'] * 1000:6.0f} ms"
            lines.append(f"{part['server']:<18} {row['what']:<8} {row['status']}  {r}")
    return "\n".join(lines)


def summary(result):
    """What the run showed, in sentences made from its own figures."""
    if "skipped" in result:
        return f"Skipped: {result['skipped']}."
    g, tornado = result["gunicorn"], result["tornado"]
    W, get = g["workers"], g["requests"][-1]
    lines = [f"On {W} sync workers, {len(g['answered_before_publish'])} of {W + 2} requests came back before the"
             f" publish. GET / took {get['r_s'] * 1000:.0f} ms; alone it takes {g['plain_ms']:.1f} ms."]
    if "skipped" not in tornado:
        get = tornado["requests"][-1]
        lines.append(f"On Tornado, GET / took {get['r_s'] * 1000:.1f} ms while {W + 1} polls were parked.")
    return "\n".join(lines)


def timeout_summary(result):
    """The parked poll past --timeout: when it ended, how, and gunicorn's own line about it."""
    if "skipped" in result:
        return f"Skipped: {result['skipped']}."
    t = result["gunicorn"]["timeout"]
    if t["cut_s"] is None:
        return f"The parked poll was not cut within --timeout {t['timeout_s']} s and the arbiter's tick."
    return (f"With --timeout {t['timeout_s']} s, the parked poll ended after {t['cut_s']:.2f} s with status"
            f" {t['status']}.\ngunicorn's log: {t['log']}")


def add_claims(claims, result):
    """Section 2's claims: W workers hold W polls, the rest wait for the publish; Tornado holds all; --timeout kills."""
    if "skipped" in result:
        claims.skip("sync workers hold one long poll each", result["skipped"])
        return
    g = result["gunicorn"]
    W, hold = g["workers"], g["hold_s"]
    rows = g["requests"]
    claims.check(f"gunicorn, w = {W}: none of the {W + 1} polls and the GET / answered before the publish",
                 not g["answered_before_publish"], f"{len(g['answered_before_publish'])} answered early",
                 "", f"answered before the publish on {W} sync workers: {g['answered_before_publish']}")
    pids = {row["pid"] for row in rows[:W]}
    claims.check(f"the first {W} polls were held by {W} different workers", len(pids) == W and None not in pids,
                 f"{len(pids)} workers", "", f"the first {W} polls were answered by the pids {sorted(map(str, pids))}")
    ok = all(row["status"] == 200 and row["after_publish_s"] is not None for row in rows)
    claims.check(f"all {W + 2} were answered after the publish", ok, f"statuses {[row['status'] for row in rows]}",
                 "", f"statuses after the publish: {[row['status'] for row in rows]}")
    get_row = rows[-1]
    if get_row["r_s"] is not None:
        # A closed system with N = W: the GET waits for a worker, so for the publish, hold_s after it was sent.
        claims.check(f"GET / waited for a worker: R ≥ the hold, {hold * 1000:.0f} ms", get_row["r_s"] >= hold,
                     f"{get_row['r_s'] * 1000:.0f} ms (alone: {g['plain_ms']:.1f} ms)", f"≥ {hold * 1000:.0f} ms",
                     f"GET / answered in {get_row['r_s'] * 1000:.0f} ms, before the hold of {hold * 1000:.0f} ms ended")
    t = g["timeout"]
    if t["cut_s"] is None:
        claims.check(f"gunicorn's --timeout {t['timeout_s']} s cut the parked poll", False, "no end", "",
                     f"the parked poll did not end within {t['timeout_s']} s + the arbiter's tick")
    else:
        # The arbiter kills a worker silent longer than --timeout at its next tick, a little late by its own loop's
        # work (reaping, spawning): the slack is this run's slowest answer after a publish, twice (how late this
        # machine ran a wake-up just now), and one plain request.
        slack = 2 * max(r["after_publish_s"] for r in rows) + g["plain_ms"] / 1000
        claims.within(f"gunicorn's --timeout {t['timeout_s']} s cut the parked poll within one arbiter tick",
                      t["cut_s"], t["timeout_s"], t["timeout_s"] + ARBITER_TICK_S + slack, unit="s", digits=2)
    named = f"pid {t['killed_pid']}, a held worker" if t["log"] else "no such line"
    claims.check("gunicorn's log names the killed worker: WORKER TIMEOUT",
                 t["killed_pid"] is not None and t["killed_pid"] in pids, named, "",
                 f"gunicorn's log: {t['log']!r}, the workers: {sorted(map(str, pids))}")
    tornado = result["tornado"]
    if "skipped" in tornado:
        claims.skip("Tornado holds every poll and answers GET / at once", tornado["skipped"])
        return
    early = tornado["answered_before_publish"]
    claims.check(f"Tornado answered GET / while {W + 1} polls were parked, and no poll early",
                 early == ["GET /"], f"answered before the publish: {early}", "",
                 f"Tornado answered {early} before the publish")
    ok = all(row["status"] == 200 for row in tornado["requests"])
    claims.check(f"Tornado answered all {W + 1} polls after the publish, and the GET /", ok,
                 f"statuses {[row['status'] for row in tornado['requests']]}", "",
                 f"Tornado's poll statuses: {[row['status'] for row in tornado['requests']]}")
