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


import _tiny_http
from iolab.contract import log


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
    # A client too slow to send its request gets a 408 and is dropped (_tiny_http.Deadline), so that one
    # silent client cannot hold the only thread for good.
    with _tiny_http.Deadline(connection) as deadline:
        while True:
            request, _ = _tiny_http.split_request(buffer)
            if request is not None:
                break
            deadline.arm(buffer)
            # recv() blocks until this client sends more. Everyone else is waiting
            # in the listen backlog, and will go on waiting until this client is done.
            chunk = connection.recv(4096)
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
