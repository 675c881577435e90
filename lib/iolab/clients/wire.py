"""What crosses the pipe between a client process and iolab.load.

The row of one request, frames of rows, the start signal.
"""

import functools
import json
import struct
import sys
from array import array
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# One finished request, in this order on the wire; read by name on the other end (rows["start"]).
# Times are seconds since the run's time zero, which every client process of a run shares.
FIELDS = (
    "intended",  # when the schedule meant to send it (the same as start in a closed loop)
    "start",  # when it was actually sent (or its connection began to open)
    "end",  # when its answer, or its error, came
    "status",  # the HTTP status, 0 when no answer came
    "bytes",  # the answer's body length
    "error",  # 0, or a code for the kind of error, named in the frame's error_names
    "user",  # who sent it: a closed loop's user, an open loop's arrival, a pipelined connection's user
    "connection",  # which connection carried it, unique within the run
)
# A row as a client hands it over: one tuple in FIELDS' order. Built inline at every answer, the clients' hot path,
# so a plain tuple rather than a named one (whose constructor is a Python call).
Row = tuple[float, float, float, int, int, int, int, int]
ROW_STRUCT = struct.Struct("<" + "d" * len(FIELDS))  # all float64, little-endian
NO_ERROR = 0


@functools.cache
def row_dtype() -> "np.dtype":
    """The numpy dtype of a row, for the parent. Client processes never import numpy: it adds a fifth of a second to
    every start."""
    import numpy as np

    return np.dtype([(name, "<f8") for name in FIELDS])


class RowBuffer:
    """Rows of finished requests, kept as one flat list of numbers until the next frame: adding is every client's hot
    path, and a list's extend is cheaper than any per-row object."""

    def __init__(self) -> None:
        self._values: list[float] = []
        self._extend = self._values.extend

    def add(self, row: Row) -> None:
        """Record one finished request: its FIELDS, in order (a test writes a row and reads it back by name)."""
        # One extend of a tuple is one step under the GIL: threads adding at once never interleave a row.
        self._extend(row)

    def take(self) -> tuple[int, bytes]:
        """(count, bytes) of the rows added so far, and forget them (safe while other threads keep adding)."""
        size = len(self._values)
        size -= size % len(FIELDS)
        taken = array("d", self._values[:size])
        del self._values[:size]
        if sys.byteorder == "big":
            taken.byteswap()  # the wire is little-endian
        return size // len(FIELDS), taken.tobytes()


# --- Frames: a one-line JSON header, then header["rows"] rows packed by ROW_STRUCT-----------------------

READY, ROWS, DONE = "ready", "rows", "done"


def write_frame(out: IO[bytes], kind: str, rows: tuple[int, bytes] = (0, b""), **header: Any) -> None:
    """Write one frame, `rows` being RowBuffer.take()'s (count, bytes), and flush it: the parent reads frames as
    they come, for live plots."""
    count, payload = rows
    out.write(json.dumps({"kind": kind, "rows": count, **header}).encode() + b"\n" + payload)
    out.flush()


def read_frame(stream: IO[bytes]) -> "tuple[dict[str, Any], np.ndarray] | None":
    """The next (header, rows) from a binary stream, rows a numpy array of row_dtype(), read by field name
    (rows["start"]); None at the stream's end (the client process has exited)."""
    import numpy as np

    line = stream.readline()
    if not line:
        return None
    header = json.loads(line)
    size = header["rows"] * ROW_STRUCT.size
    payload = stream.read(size) if size else b""
    if len(payload) < size:
        return None  # cut short: the process was killed mid-frame
    return header, np.frombuffer(payload, dtype=row_dtype())


# --- The parent's side of the start: every process gets ready, then all start at one instant ------

GO = "go"


def go_line(time_zero: float) -> bytes:
    """Tells a ready client process to start at `time_zero`, a time.perf_counter() value (CLOCK_MONOTONIC on Linux,
    one clock for every process on the machine)."""
    return f"{GO} {time_zero!r}\n".encode()


def parse_go(line: str) -> float | None:
    """The time zero in a go line, or None if the line is something else."""
    word, _, value = line.strip().partition(" ")
    return float(value) if word == GO else None
