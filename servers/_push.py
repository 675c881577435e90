"""What the three push servers share: payloads, options, /publish's query, RSS.

Lesson 12's servers (tornado_push, aiohttp_push, websockets_push) hold subscribers
and broadcast to them. The payload is the same on all three: JSON
`{"seq": n, "t": <time.monotonic() at publish>}` padded with spaces to the size
asked for, so a subscriber's receive time minus t is its delivery time
(CLOCK_MONOTONIC is one clock for every process on Linux).
"""

import json
import os
import time

from iolab import environment
from iolab.contract import BadParameter

MIN_SIZE, MAX_SIZE = 64, 1024 * 1024  # a payload holds its JSON head; a message larger than a MiB teaches nothing more
DEFAULT_SIZE = 64
DEFAULT_MAX_BUFFER_KIB = 1024
DEFAULT_SEND_TIMEOUT_S = 10.0  # how=await: a send that has not finished in this long drops its subscriber
KEPT_FOR_POLLS = 200  # messages a long poll can still catch up on (Tornado's chat demo keeps 200 too)
ECHOES_KEPT = 10_000


def add_options(parser, hows):
    """The options every push server takes; `hows`: its broadcasters, the first the default."""
    parser.add_argument("--compression", choices=("off", "on"), default="off",
                        help="permessage-deflate on /ws (default off)")
    parser.add_argument("--max-buffer-kib", type=int, default=DEFAULT_MAX_BUFFER_KIB,
                        help=f"drop a subscriber whose unsent bytes pass this (default {DEFAULT_MAX_BUFFER_KIB})")
    parser.add_argument("--send-timeout-s", type=float, default=DEFAULT_SEND_TIMEOUT_S,
                        help="how=await: drop a subscriber whose send takes longer (default "
                             f"{DEFAULT_SEND_TIMEOUT_S:g})")
    parser.set_defaults(hows=hows)


def check_options(args):
    """Refuse option values out of range, by name; raise our own file limit so thousands of subscribers fit."""
    if not 1 <= args.max_buffer_kib <= 1024 * 1024:
        raise SystemExit(f"--max-buffer-kib must be between 1 and 1048576, got {args.max_buffer_kib}")
    if not 0.01 <= args.send_timeout_s <= 600:
        raise SystemExit(f"--send-timeout-s must be between 0.01 and 600, got {args.send_timeout_s}")
    environment.raise_file_limit()  # every subscriber is a file descriptor: the hard RLIMIT_NOFILE as our soft one
    return args


def parse_publish(query, hows):
    """(size, how) from /publish's query (a dict of the last value of each key); BadParameter names what is wrong."""
    raw = query.get("size")
    size = DEFAULT_SIZE
    if raw not in (None, ""):
        try:
            size = int(raw)
        except ValueError:
            raise BadParameter(f"size must be a whole number of bytes, got {raw!r}") from None
        if not MIN_SIZE <= size <= MAX_SIZE:
            raise BadParameter(f"size must be between {MIN_SIZE} and {MAX_SIZE} bytes, got {size}")
    how = query.get("how") or hows[0]
    if how not in hows:
        raise BadParameter(f"how must be one of {', '.join(hows)}, got {how!r}")
    return size, how


def payload(seq, size):
    """The message: its JSON head, then spaces to `size` bytes (text: a WebSocket text frame, an SSE data line)."""
    head = json.dumps({"seq": seq, "t": time.monotonic()}, separators=(",", ":"))
    return head + " " * (size - len(head))


def sse_event(text):
    """One server-sent event: a data line and the blank line that ends it (WHATWG HTML, server-sent events)."""
    return f"data: {text}\n\n".encode()


def ws_frame(data):
    """One unmasked, final text frame (RFC 6455 5.2): what a server sends, built once for every subscriber."""
    n = len(data)
    if n < 126:
        head = bytes((0x81, n))
    elif n < 1 << 16:
        head = bytes((0x81, 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((0x81, 127)) + n.to_bytes(8, "big")
    return head + data


_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE


class Counts:
    """What /stats reports besides the subscribers: messages published, subscribers dropped."""

    def __init__(self):
        self.published = 0
        self.dropped = 0

    def stats(self, subscribers, buffered):
        return {"subscribers": subscribers, "rss_bytes": rss_bytes(), "cpu_s": time.process_time(),
                "published": self.published, "dropped": self.dropped, "buffered_bytes": buffered}


def publish_answer(seq, subscribers, how, wall_s, cpu_s, **more):
    """/publish's answer: the broadcast's wall time and its thread's CPU (and any figure a server adds)."""
    return json.dumps({"seq": seq, "subscribers": subscribers, "how": how, "wall_s": wall_s, "cpu_s": cpu_s,
                       **more}) + "\n"
