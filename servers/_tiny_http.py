"""Just enough HTTP for lesson 05's teaching steps.

Find the end of a request, route it, format the answer.

The steps differ only in how they wait for sockets; this file is the part they
share, so each step shows nothing but its way of doing IO. It reads requests
with step 4's strict parser (scratch/hardening.py: bodies, size limits, and a
400 for bytes that break HTTP's grammar), so that even a teaching step answers
hostile bytes with an error rather than a smuggled 200.
"""

import socket
import time
from urllib.parse import parse_qs

from iolab.contract import (
    BODY_TIMEOUT_S,
    HEAD_TIMEOUT_S,
    REASONS,
    BadParameter,
    announce,
    burn_cpu,
    die_with_parent,
    exit_on_sigterm,
    parse_args,
    parse_ms,
)
from scratch.hardening import MAX_HEADER_BYTES, BadRequest, keeps_alive, parse_request

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
    """(request, rest) if buffer holds a whole request, body included, else (None, buffer): the rest has not arrived.

    A request that breaks the protocol comes back as its BadRequest, which route() answers with its status.
    """
    if END_OF_HEAD not in buffer and len(buffer) <= MAX_HEADER_BYTES:
        return None, buffer  # the head is not all here yet: nothing to parse (the busy loop asks often)
    unread = bytearray(buffer)
    try:
        request = parse_request(unread)  # takes the request off the front of `unread`
    except BadRequest as error:
        return error, b""  # where the next request would start cannot be told: the connection ends here
    if request is None:
        return None, buffer
    return request, bytes(unread)


def route(request, can_wait=False):
    """Answer a request. Sleeping and CPU work happen right here, blocking the caller.

    /async-sleep asks the caller to wait: it returns an Answer with wait_s set,
    and the caller must send it only after wait_s seconds, without blocking.
    A step that has no way to do that passes can_wait=False and the route is a 404.
    """
    if isinstance(request, BadRequest):
        return Answer(request.status, f"{request.status} {request}")
    path, query = request.path, request.query
    keep_alive = keeps_alive(request)
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


def query_ms(query):
    return parse_ms(parse_qs(query).get("ms", [None])[-1])


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


class Deadline:
    """The time a blocking server gives one client to send its request: the head, then the body (step 1's hardening).

    Without a deadline, one silent client would stop a blocking server for good; a per-recv() timeout is not
    enough either, since a client sending a byte every few seconds would reset it each time. Used as a context
    manager around the reads: a client that times out with half a request sent gets a 408 before the error goes on.
    """

    def __init__(self, connection):
        self.connection = connection
        self.at = time.monotonic() + HEAD_TIMEOUT_S
        self.waiting_for_body = False
        self.half_sent = False

    def __enter__(self):
        return self

    def arm(self, buffer):
        """Give the next recv() only what is left of the deadline, for the request `buffer` holds so far."""
        if not self.waiting_for_body and END_OF_HEAD in buffer:
            self.waiting_for_body = True
            self.at += BODY_TIMEOUT_S  # the head is in: the body gets its own time
        self.half_sent = bool(buffer)
        self.connection.settimeout(max(self.at - time.monotonic(), 0.001))

    def __exit__(self, kind, error, traceback):
        if kind is not None and issubclass(kind, TimeoutError) and self.half_sent:
            # Half a request and then too slow: say so before hanging up.
            too_slow = Answer(408, "408 the request did not arrive in time")
            self.connection.sendall(format_answer(too_slow))
        return False  # the error goes on: the server drops this client
