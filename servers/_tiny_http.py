"""Just enough HTTP for lesson 05's teaching steps.

Find the end of a request, route it, format the answer.

The steps differ only in how they wait for sockets; this file is the part they
share, so each step shows nothing but its way of doing IO. It is deliberately
naive (no request bodies, no header limits): step 4, scratch_app.py, is the
server that speaks HTTP properly.
"""

import socket
import time
from urllib.parse import parse_qs

from iolab.contract import BadParameter, announce, burn_cpu, die_with_parent, exit_on_sigterm, parse_args, parse_ms

END_OF_HEAD = b"\r\n\r\n"


def listen(description, blocking=True):
    """The server contract's start-up, the same for every step: arguments, parent watch, a listening socket, LISTENING."""
    args = parse_args(description)
    die_with_parent()
    exit_on_sigterm()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.create_server((args.host, args.port), family=family, backlog=1024)
    listener.setblocking(blocking)
    announce(*listener.getsockname()[:2])
    return listener


class Answer:
    """What a route decided: a status and a text, and how long to wait first without blocking (0 for most)."""

    def __init__(self, status, text, wait_s=0.0, keep_alive=False):
        self.status = status
        self.text = text
        self.wait_s = wait_s
        self.keep_alive = keep_alive  # may the connection carry another request after this answer?


def split_request(buffer):
    """(head, rest) if buffer holds a whole request head, else (None, buffer): the rest has not arrived."""
    end = buffer.find(END_OF_HEAD)
    if end < 0:
        return None, buffer
    return buffer[:end], buffer[end + len(END_OF_HEAD) :]


def route(head, can_wait=False):
    """Answer a request head. Sleeping and CPU work happen right here, blocking the caller.

    /async-sleep asks the caller to wait: it returns an Answer with wait_s set,
    and the caller must send it only after wait_s seconds, without blocking.
    A step that has no way to do that passes can_wait=False and the route is a 404.
    """
    request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[1].startswith("/"):
        return Answer(400, f"400 request line must be 'METHOD /target HTTP/1.1', got {request_line[:80]!r}")
    path, _, query = parts[1].partition("?")
    keep_alive = wants_keep_alive(head, parts[2])
    try:
        if path == "/":
            return Answer(200, "hello world", keep_alive=keep_alive)
        if path == "/sync-sleep":
            ms = query_ms(query)
            time.sleep(ms / 1000)
            return Answer(200, f"slept {ms} ms blocking the server", keep_alive=keep_alive)
        if path == "/cpu":
            ms = query_ms(query)
            burn_cpu(ms)
            return Answer(200, f"burned {ms} ms of CPU", keep_alive=keep_alive)
        if path == "/async-sleep" and can_wait:
            ms = query_ms(query)
            return Answer(200, f"waited {ms} ms without blocking", wait_s=ms / 1000, keep_alive=keep_alive)
    except BadParameter as error:
        return Answer(400, f"400 {error}", keep_alive=keep_alive)
    return Answer(404, f"404 no route for {path}", keep_alive=keep_alive)


def wants_keep_alive(head, version):
    """HTTP/1.1 keeps the connection unless told 'close'; HTTP/1.0 closes unless told 'keep-alive' (ab -k)."""
    head = head.lower()
    if version == "HTTP/1.0":
        return b"connection: keep-alive" in head
    return b"connection: close" not in head


def query_ms(query):
    return parse_ms(parse_qs(query).get("ms", [None])[-1])


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found"}


def format_answer(answer):
    """The bytes of an HTTP/1.1 response, Content-Length included so the client knows where it ends."""
    body = (answer.text + "\n").encode()
    connection = "keep-alive" if answer.keep_alive else "close"
    head = (
        f"HTTP/1.1 {answer.status} {REASONS[answer.status]}\r\n"
        "Content-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {connection}\r\n\r\n"
    )
    return head.encode() + body
