"""Section 6: a WebSocket and a long poll through nginx.

A WebSocket opens through nginx only if nginx passes the Upgrade and
Connection headers on. proxy_read_timeout cuts a connection whose upstream
sends nothing for that long: an idle WebSocket, a parked long poll (504). A
heartbeat (a ping the server answers with a pong) keeps the WebSocket alive.
"""

import base64
import json
import os
import socket
import threading
import time
import urllib.request

from iolab import registry, servers

PROXY = "nginx_ws_proxy"
UPSTREAM = "tornado_push"
WATCH_TIMES = 2  # each idle connection is watched for 2 × the timeout: long enough to tell nginx's cut from ours
PINGS_PER_TIMEOUT = 3  # the heartbeat pings three times per timeout, so one late ping cannot let it lapse


def handshake(port, path="/ws"):
    """A WebSocket opening handshake by hand (RFC 6455, 4.1): the status line and the Upgrade header answered."""
    key = base64.b64encode(os.urandom(16)).decode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        began = time.monotonic()
        sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
        took = time.monotonic() - began
    lines = head.split(b"\r\n\r\n", 1)[0].decode(errors="replace").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    return {"status_line": lines[0], "status": int(lines[0].split()[1]) if len(lines[0].split()) > 1 else None,
            "upgrade": headers.get("upgrade"), "handshake_ms": took * 1000}


def idle_websocket(port, watch_s, ping_every_s=None):
    """Open a WebSocket through the proxy and send nothing (or only pings): how long until it is closed?"""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    # ping_interval=None: no heartbeat at all; otherwise a ping every ping_every_s, answered by the server's pong.
    with connect(f"ws://127.0.0.1:{port}/ws", compression=None, open_timeout=10, close_timeout=1,
                 ping_interval=ping_every_s, ping_timeout=watch_s) as ws:
        opened = time.monotonic()
        try:
            while time.monotonic() - opened < watch_s:
                ws.recv(timeout=watch_s - (time.monotonic() - opened))
        except TimeoutError:
            return {"open_after_s": time.monotonic() - opened, "closed": False, "ping_every_s": ping_every_s}
        except ConnectionClosed as closed:
            return {"open_after_s": time.monotonic() - opened, "closed": True, "ping_every_s": ping_every_s,
                    "why": str(closed)}
    return {"open_after_s": time.monotonic() - opened, "closed": False, "ping_every_s": ping_every_s}


def idle_poll(port, watch_s):
    """A long poll for a message that never comes, through the proxy: who ends it, and when?"""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as answer:
        cursor = json.load(answer)["published"]  # every message so far is seen: the poll waits for the next
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET /poll?cursor={cursor} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        began = time.monotonic()
        sock.settimeout(watch_s)
        try:
            first = sock.recv(4096)
        except TimeoutError:
            first = b""
        after = time.monotonic() - began
    words = first.split(b"\r\n", 1)[0].split()
    return {"status": int(words[1]) if len(words) > 1 else None, "after_s": after}


def in_threads(**calls):
    """Run the calls (name → function) side by side, so the idle watches overlap; {name: what each returned}."""
    found = {}

    def run(name, call):
        try:
            found[name] = call()
        except Exception as error:  # reported, not raised: the section goes on with the others
            found[name] = {"error": f"{type(error).__name__}: {error}"}

    threads = [threading.Thread(target=run, args=item) for item in calls.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found


def missing():
    """Why this section cannot run here (nginx or the push server missing), or None."""
    return registry.missing(PROXY, UPSTREAM)


def run(read_timeout_s=1):
    """Section 6's experiment: the handshake with and without the headers, then three idle connections side by side."""
    reason = missing()
    if reason:
        return {"skipped": reason}
    watch_s = WATCH_TIMES * read_timeout_s
    result = {"read_timeout_s": read_timeout_s, "watch_s": watch_s, "upgrade": {}}
    with servers.serve(PROXY, upstream=UPSTREAM, upgrade_headers="off", read_timeout_s=read_timeout_s) as plain:
        result["upgrade"]["off"] = handshake(plain.port)
    with servers.serve(PROXY, upstream=UPSTREAM, upgrade_headers="on", read_timeout_s=read_timeout_s) as proxy:
        result["upgrade"]["on"] = handshake(proxy.port)
        result |= in_threads(
            idle_ws=lambda: idle_websocket(proxy.port, watch_s),
            heartbeat=lambda: idle_websocket(proxy.port, watch_s, read_timeout_s / PINGS_PER_TIMEOUT),
            idle_poll=lambda: idle_poll(proxy.port, watch_s),
        )
    return result


def table(result):
    """What the notebook prints: each case, what came back, and when."""
    if "skipped" in result:
        return f"skipped: {result['skipped']}"
    lines = [f"handshake, Upgrade headers {side:>3}: {result['upgrade'][side]['status_line']}" for side in ("on", "off")]
    ws, beat, poll = result["idle_ws"], result["heartbeat"], result["idle_poll"]
    for name, row in (("idle WebSocket", ws), (f"WebSocket with a ping every {beat.get('ping_every_s', 0):.2f} s", beat)):
        if "error" in row:
            lines.append(f"{name}: {row['error']}")
        else:
            state = "closed" if row["closed"] else "still open"
            lines.append(f"{name}: {state} after {row['open_after_s']:.2f} s")
    if "error" in poll:
        lines.append(f"idle long poll: {poll['error']}")
    else:
        lines.append(f"idle long poll: status {poll['status']} after {poll['after_s']:.2f} s")
    return "\n".join(lines)


def add_claims(claims, result):
    """Section 6's claims: the headers decide the handshake; nginx's timer, not ours, ends an idle connection."""
    if "skipped" in result:
        claims.skip("a WebSocket and a long poll through nginx", result["skipped"])
        return
    timeout, watch = result["read_timeout_s"], result["watch_s"]
    on, off = result["upgrade"]["on"], result["upgrade"]["off"]
    claims.check("with the Upgrade headers, the WebSocket opens through nginx: 101", on["status"] == 101,
                 on["status_line"], "", f"with the headers, nginx answered {on['status_line']!r}")
    claims.check("without them, the upstream sees a plain GET and refuses it", off["status"] not in (101, None),
                 off["status_line"], "", f"without the headers, nginx answered {off['status_line']!r}")
    ws = result["idle_ws"]
    if "error" in ws or not ws["closed"]:
        claims.check(f"an idle WebSocket is cut at proxy_read_timeout = {timeout} s", False, "", "",
                     f"the idle WebSocket was not cut within {watch} s: {ws}")
    else:
        claims.nearer(f"an idle WebSocket is cut at proxy_read_timeout = {timeout} s, not when we stop watching",
                      ws["open_after_s"], timeout, watch, "s", ".2f")
    beat = result["heartbeat"]
    claims.check(f"a ping every {timeout / PINGS_PER_TIMEOUT:.2f} s keeps it open for {watch} s",
                 "error" not in beat and not beat["closed"], beat.get("why") or beat.get("error") or "open", "",
                 f"the WebSocket with a heartbeat: {beat}")
    poll = result["idle_poll"]
    if "error" in poll or poll["status"] is None:
        claims.check("an idle long poll gets 504 at proxy_read_timeout", False, "", "", f"the idle long poll: {poll}")
    else:
        claims.check("an idle long poll gets nginx's 504 Gateway Time-out", poll["status"] == 504,
                     f"status {poll['status']}", "", f"the idle long poll got {poll['status']}")
        claims.nearer(f"nginx ends the idle long poll at proxy_read_timeout = {timeout} s",
                      poll["after_s"], timeout, watch, "s", ".2f")
