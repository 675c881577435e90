"""One client process of a load run.

Takes its share of the run, waits for the parent's go, runs its client, reports.

Started by iolab.load as `python -m iolab.clients.process SPEC`, where SPEC is
the run's spec as JSON (LoadSpec.to_process: the shared fields, the kind and its
options) plus this process's index and the number of processes.
Its stdout carries frames (iolab.clients.wire), its stdin the parent's go; what
the client returns (a kind that counts instead of keeping rows) goes in its
done frame as `report`. It dies with its parent as every child of the lab does
(contract.die_with_parent).
"""

import asyncio
import concurrent.futures
import importlib
import json
import os
import sys
import threading

from ..contract import die_with_parent
from . import kinds, wire
from .recorder import Recorder

EVENT_LOOPS = ("auto", "uvloop", "asyncio")


def split(total, parts, index):
    """The index-th of `parts` near-equal shares of `total` (the first ones one larger when it does not divide)."""
    return total // parts + (1 if index < total % parts else 0)


def share_of(spec):
    """This process's users (a range of the run's user numbers) and its requests."""
    process, processes = spec["process"], spec["processes"]
    first = sum(split(spec["concurrency"], processes, i) for i in range(process))
    users = range(first, first + split(spec["concurrency"], processes, process))
    return {"users": users, "requests": split(spec["requests"], processes, process)}


def new_event_loop(choice="auto"):
    """uvloop when installed (or asked for), else asyncio's own loop: the one place a client picks its loop."""
    if choice in ("auto", "uvloop"):
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                raise
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def listen_to_parent():
    """A future for the parent's go (the run's time zero); end of file on stdin before the go fails it."""
    go = concurrent.futures.Future()

    def watch():
        # os.read, not sys.stdin: a buffered read would hold a lock that interpreter shutdown then waits for.
        pending = b""
        while chunk := os.read(0, 4096):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                time_zero = wire.parse_go(line.decode())
                if time_zero is not None and not go.done():
                    go.set_result(time_zero)
        if not go.done():
            go.set_exception(EOFError("the parent closed this client's stdin before the go"))

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    return go


def main():
    die_with_parent()
    spec = json.loads(sys.argv[1])
    frames = sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries frames only; a stray print must not break one
    recorder = Recorder(frames, listen_to_parent(), spec["process"], spec["processes"])
    info = kinds.get(spec["kind"])
    client = getattr(importlib.import_module(f"{__package__}.{info.module}"), info.entry)  # (spec, share, recorder)
    share = share_of(spec)
    if info.threads:
        report = client(spec, share, recorder)
    else:
        loop = new_event_loop(spec["event_loop"])
        try:
            report = loop.run_until_complete(client(spec, share, recorder))
        finally:
            loop.close()
    recorder.done(report)


if __name__ == "__main__":
    main()
