"""Helpers the tests share.

A GET on a kept-alive connection, a server started by hand, waiting, a parent killed.
"""

import json
import subprocess
import sys
import textwrap
import time

import psutil

from iolab import registry, servers

GONE_WITHIN_S = 2.0  # how long a process may take to exit after its parent dies (the lab's promise)
POLL_S = 0.02


def get(connection, path):
    """(status, Content-Length header, body) of a GET on an http.client connection, which stays open for the next."""
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, response.getheader("Content-Length"), response.read().decode()


def start_by_hand(name, *args):
    """Start a server the way a student would from a terminal, without the launcher: (process, its first line)."""
    process = subprocess.Popen(
        [sys.executable, str(servers.SERVERS_DIR / registry.get(name).script), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline().strip()
    return process, line


def wait_until(condition, within_s, poll_s=POLL_S):
    """Poll `condition()` until it is true or `within_s` has passed; returns its last value."""
    deadline = time.monotonic() + within_s
    while not (met := condition()) and time.monotonic() < deadline:
        time.sleep(poll_s)
    return met


def gone(pid):
    """True once `pid` has exited (a zombie nobody has reaped yet counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until_gone(pids, within_s=GONE_WITHIN_S):
    """Wait for every pid to exit; returns the ones still running after `within_s`."""
    wait_until(lambda: all(gone(pid) for pid in pids), within_s)
    return [pid for pid in pids if not gone(pid)]


def kill_the_parent(program, within_s=GONE_WITHIN_S):
    """Run `program` (Python source) as a parent, SIGKILL it once it has printed, then see what of its children survives.

    The program starts its children, prints one JSON object with their "pids"
    (and anything else the test wants) and sleeps. Returns (that object, the pids
    still running `within_s` after the kill).
    """
    source = textwrap.dedent(program) + "\nimport time\ntime.sleep(60)\n"
    parent = subprocess.Popen([sys.executable, "-c", source], stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline()
        assert line, "the parent printed nothing"
        report = json.loads(line)
        assert report["pids"] and not any(gone(pid) for pid in report["pids"]), report
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    return report, wait_until_gone(report["pids"], within_s)


def trace_iteration(t, select_ms, callbacks_ms, events=1, ready=0):
    """One iteration of the hand-built loop's trace, as iolab.contract.trace_record writes it."""
    return {"t": t, "select_ms": select_ms, "callbacks_ms": callbacks_ms, "events": events, "ready": ready, "timers": 0}
