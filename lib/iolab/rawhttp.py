"""HTTP/1.1 by hand over a blocking socket: GET requests as bytes, answers read back one at a time by Content-Length."""


def get_request(path, close=False):
    """The bytes of a GET for `path`; with `close`, asking the server to close the connection after answering."""
    connection = "Connection: close\r\n" if close else ""
    return f"GET {path} HTTP/1.1\r\nHost: lab\r\n{connection}\r\n".encode()


class ResponseReader:
    """Reads HTTP/1.1 answers one at a time off a socket, keeping any bytes of the next one (pipelining)."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError(f"server closed the connection with {len(self.buffer)} bytes unread")
        self.buffer += chunk

    def read(self, head_only=False):
        """(status, headers with lower-case names, body text) of the next answer; `head_only` for a HEAD's answer."""
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
        length = 0 if head_only else int(headers["content-length"])
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, headers, body.decode()

    def body(self):
        """The next answer's body text."""
        return self.read()[2]

    def closed_by_server(self, wait_s=10.0):
        """True once the server has closed its end (recv returns b'' or the connection was reset)."""
        self.sock.settimeout(wait_s)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
