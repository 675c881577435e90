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

import concurrent.futures
import importlib
import json
import os
import sys
import threading
from typing import Any

from ..contract import die_with_parent
from . import kinds, wire
from .event_loops import new_event_loop
from .recorder import Recorder
from .shares import share_of


def listen_to_parent() -> concurrent.futures.Future[float]:
    """A future for the parent's go (the run's time zero); end of file on stdin before the go fails it."""
    go: concurrent.futures.Future[float] = concurrent.futures.Future()

    def watch() -> None:
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


def main() -> None:
    die_with_parent()
    spec: dict[str, Any] = json.loads(sys.argv[1])
    frames = sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries frames only; a stray print must not break one
    recorder = Recorder(frames, listen_to_parent(), spec["process"], spec["processes"])
    info = kinds.get(spec["kind"])
    client = importlib.import_module(f"{__package__}.{info.module}").run  # run(spec, share, recorder)
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
