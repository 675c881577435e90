"""Lesson 12's teaching-size broadcasters, run on real sockets.

What each does when one subscriber stops reading.
"""

import asyncio
import socket

from iolab import push_floor
from iolab.lessons.long_lived import broadcasters


def pairs(count):
    """`count` connected socket pairs: (server side, non-blocking; subscriber side)."""
    made = [socket.socketpair() for _ in range(count)]
    for server, _ in made:
        server.setblocking(False)
    return made


def read_all(sock, size):
    sock.settimeout(2)
    data = b""
    while len(data) < size:
        data += sock.recv(size - len(data))
    return data


def test_encode_once_sends_the_same_frame_to_each_and_keeps_a_stopped_ones_bytes_in_order():
    made = pairs(3)
    backlog = {}
    try:
        frame = push_floor.ws_frame(b"x" * 60_000)
        sends = 0
        while not backlog:  # nobody reads the first subscriber: its kernel buffer fills
            broadcasters.encode_once([made[0][0]], "x" * 60_000, backlog)
            sends += 1
            assert sends < 1000, "a socket pair that never fills"
        broadcasters.encode_once([server for server, _ in made], "y" * 10, backlog)
        small = push_floor.ws_frame(b"y" * 10)
        assert read_all(made[1][1], len(small)) == small and read_all(made[2][1], len(small)) == small
        assert bytes(backlog[made[0][0]]).endswith(small) and made[1][0] not in backlog
        waiting = bytes(backlog[made[0][0]])
        taken = read_all(made[0][1], sends * len(frame) + len(small) - len(waiting))
        assert taken + waiting == frame * sends + small  # what the kernel took, then the rest: every byte, in order
    finally:
        for server, reader in made:
            server.close()
            reader.close()


def test_await_each_holds_everyone_behind_a_stopped_subscriber():
    async def run():
        made = pairs(2)
        streams = [await asyncio.open_connection(sock=server) for server, _ in made]
        writers = [writer for _, writer in streams]
        big = push_floor.ws_frame(b"z" * 60_000)
        try:
            with_no_reader = asyncio.ensure_future(broadcasters.await_each(writers, big * 20))
            await asyncio.sleep(0.2)
            stuck = not with_no_reader.done()
            made[1][1].setblocking(False)
            try:
                second_got = made[1][1].recv(1 << 20)
            except BlockingIOError:
                second_got = b""
            with_no_reader.cancel()
            return stuck, second_got
        finally:
            for writer in writers:
                writer.close()
            for _, reader in made:
                reader.close()

    stuck, second_got = asyncio.run(run())
    assert stuck and second_got == b"", "the second subscriber got bytes while the first was stopped"
