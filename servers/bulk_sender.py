"""threaded_app with one route more: /bytes?n=N sends N bytes, with the TCP congestion control a query names.

Lesson 14's sender. The sender's congestion control decides how a transfer grows and how it meets loss (the
receiver's has no say), so it is set here, on each answer's socket (TCP_CONGESTION), never on the client.
Everything else is threaded_app's: one thread per connection, the strict parser, TCP_NODELAY on.
"""

import socket
from urllib.parse import parse_qs, urlsplit

from iolab.contract import BadParameter, announce, die_with_parent, exit_on_sigterm, parse_args, parse_whole
from threaded_app import LabHandler, LabHTTPServer

MAX_BYTES = 64 * 2**20  # the largest answer: bounded, like every run in the lab
CHUNK = b"x" * 65536
CONGESTION = ("reno", "cubic", "bbr")  # the algorithms Linux builds in by default; others may be absent
# Each 64 kB write of an answer must finish within this (the idle timeout, 30 s, would cut it short). Under the
# heaviest loss lesson 14 sets, 10 % each way on a 200 ms link, Reno moves about 12 kB a second: a write takes
# 5 s, and a segment lost again and again waits its doubling timeouts, 25 s after six losses in a row.
WRITE_TIMEOUT_S = 90.0


class BulkHandler(LabHandler):
    def do_GET(self):
        url = urlsplit(self.path)
        if url.path != "/bytes":
            return super().do_GET()
        query = parse_qs(url.query)
        try:
            size = parse_whole(query.get("n", [None])[-1], "n", "bytes", MAX_BYTES, ", e.g. ?n=1000000")
            congestion = query.get("cc", ["bbr"])[-1]
            if congestion not in CONGESTION:
                raise BadParameter(f"cc must be one of {list(CONGESTION)}, got {congestion!r}")
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
        except BadParameter as error:
            return self.answer(400, f"400 {error}")
        except OSError as error:  # an algorithm this kernel lacks, or may not let this user choose
            return self.answer(400, f"400 cc={congestion} refused here: {error.strerror}")
        self.send_bytes(size)

    def send_bytes(self, size):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self.connection.settimeout(WRITE_TIMEOUT_S)
        left = size
        while left:
            piece = CHUNK[:min(left, len(CHUNK))]
            self.wfile.write(piece)
            left -= len(piece)


def main():
    args = parse_args(__doc__)
    die_with_parent()
    exit_on_sigterm()
    server = LabHTTPServer((args.host, args.port), BulkHandler)
    announce(*server.server_address[:2])
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
