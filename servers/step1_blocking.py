"""Step 1 of lesson 05: a blocking server that serves one connection at a time.

Read this one first. It is the simplest server there is: accept a connection,
recv() until the request is complete, send the answer, close, repeat. Every
call blocks, so while it waits for one client, every other client waits too,
queued by the kernel in the listen backlog. A client that sends half a request
and then thinks for a while holds everyone up.

It answers one request per connection and then closes it (Connection: close).
With keep-alive, one client could keep the only thread for as long as it
liked, and nobody else would ever be served.

Next: step2_busy_wait.py stops waiting on any single client.
"""


import time

import _tiny_http
from iolab.contract import BODY_TIMEOUT_S, HEAD_TIMEOUT_S, log


def serve_forever(listener):
    while True:
        connection, address = listener.accept()  # blocks until someone connects
        with connection:
            try:
                serve_one_request(connection)
            except OSError as error:  # a timeout or a reset: this client is gone, serve the next
                log(f"step1: dropped {address[0]}:{address[1]}: {error}")


def serve_one_request(connection):
    buffer = b""
    # Without a deadline, one silent client would stop this server for good; a per-recv() timeout
    # is not enough either, since a client sending a byte every few seconds would reset it each time.
    deadline = time.monotonic() + HEAD_TIMEOUT_S
    waiting_for_body = False
    while True:
        request, _ = _tiny_http.split_request(buffer)
        if request is not None:
            break
        if not waiting_for_body and _tiny_http.END_OF_HEAD in buffer:
            waiting_for_body = True
            deadline += BODY_TIMEOUT_S  # the head is in: the body gets its own time
        connection.settimeout(max(deadline - time.monotonic(), 0.001))
        # recv() blocks until this client sends more. Everyone else is waiting
        # in the listen backlog, and will go on waiting until this client is done.
        try:
            chunk = connection.recv(4096)
        except TimeoutError:
            if buffer:  # half a request and then too slow: say so before hanging up
                too_slow = _tiny_http.Answer(408, "408 the request did not arrive in time")
                connection.sendall(_tiny_http.format_answer(too_slow))
            raise
        if not chunk:
            return  # the client hung up before finishing its request
        buffer += chunk
    # /async-sleep is not served (can_wait=False): this server has no way to wait without blocking.
    answer = _tiny_http.route(request, can_wait=False)
    answer.keep_alive = False  # one request per connection, whatever the client asked for
    connection.sendall(_tiny_http.format_answer(answer))


def main():
    listener = _tiny_http.listen(__doc__.splitlines()[0])
    with listener:
        serve_forever(listener)


if __name__ == "__main__":
    main()
