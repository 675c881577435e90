"""The far end of the IO-model programs.

Connect, wait for "go", send each payload at its moment, report when.
"""

# Runs as its own process (standard library and iolab.contract only), so the peer's timing never waits for the
# application's GIL. Usage: python peer.py PORT DELAYS_MS PAYLOAD_BYTES
# (DELAYS_MS comma separated, one connection per delay).
# Protocol: on each connection send its index (2 bytes); read the application's
# CLOCK_MONOTONIC "go" time (8-byte double) from connection 0; send connection i's
# payload at go + delay_i; print one JSON line [[send_start, send_end], ...] in
# monotonic seconds; wait for every connection to close, then exit.

import json
import socket
import struct
import sys
import time

TIMEOUT_S = 15.0  # every wait is bounded: a lost application never leaves this process behind


def main(port, delays_ms, payload_bytes):
    payload = (b"data is here! " * (payload_bytes // 14 + 1))[:payload_bytes]
    connections = []
    for index in range(len(delays_ms)):
        conn = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        conn.sendall(struct.pack("!H", index))
        connections.append(conn)
    go = b""
    while len(go) < 8:
        chunk = connections[0].recv(8 - len(go))
        if not chunk:
            return
        go += chunk
    (go_at,) = struct.unpack("!d", go)
    sent = [None] * len(connections)
    for index in sorted(range(len(connections)), key=lambda i: delays_ms[i]):
        time.sleep(max(0.0, go_at + delays_ms[index] / 1000 - time.monotonic()))
        start = time.monotonic()
        connections[index].sendall(payload)
        sent[index] = [start, time.monotonic()]
    print(json.dumps(sent), flush=True)
    for conn in connections:
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass
        conn.close()


if __name__ == "__main__":
    from iolab.contract import die_with_parent

    die_with_parent()
    main(int(sys.argv[1]), [float(d) for d in sys.argv[2].split(",")], int(sys.argv[3]))
