"""Two broadcasters at teaching size: awaiting, and encode-once.

`tornado_push` runs the same steps inside Tornado (`how=await` and `how=frame`), with Tornado's own streams in
place of the writers, sockets and backlog here. The lesson's tests run these two on real sockets.
"""

import asyncio
import socket
from collections.abc import Iterable

from iolab import push_floor


async def await_each(writers: Iterable[asyncio.StreamWriter], frame: bytes) -> None:
    """Send to each subscriber in turn; go on to the next only once few of this one's bytes are left unsent."""
    for writer in writers:
        writer.write(frame)
        await writer.drain()


def encode_once(sockets: Iterable[socket.socket], text: str, backlog: dict[socket.socket, bytearray]) -> None:
    """Build the frame once, then write the same bytes to every subscriber's (non-blocking) socket, waiting for
    none."""
    frame = push_floor.ws_frame(text.encode())  # the one piece of work every subscriber shares
    for sock in sockets:
        if backlog.get(sock):
            backlog[sock] += frame  # older bytes still wait for this one: the new ones go behind them
            continue
        try:
            sent = sock.send(frame)
        except BlockingIOError:
            sent = 0
        if sent < len(frame):
            backlog.setdefault(sock, bytearray()).extend(frame[sent:])  # the loop sends these when it can
