"""Section 7: your own browser tab as a subscriber.

It reaches the server through jupyter-server-proxy.

The kernel finds the Jupyter server it runs under, and prints a link to
/proxy/<port>/page: the page subscribes by WebSocket and EventSource, and
echoes each message it gets. The server notes when each echo arrived
(GET /echoes), on the clock the publish used. Where the proxy or a browser
is missing, this section says so and goes on.
"""

import html
import importlib.util
import json
import os
import time
import urllib.error
import urllib.request

from iolab import registry, servers

SERVER = "tornado_push"
PAGE = "page"
HUB_PREFIX = "JUPYTERHUB_SERVICE_PREFIX"  # set by JupyterHub (and so on Binder): the user's server's base URL
PROBE_TIMEOUT_S = 5.0


def jupyter_server(runtime_dir=None):
    """The Jupyter server this kernel runs under (its info: url, base_url, token, pid), or None and the reason."""
    try:
        from jupyter_server.serverapp import list_running_servers
    except ImportError:
        return None, "jupyter_server is not installed here"
    found = list(list_running_servers(runtime_dir))
    if not found:
        return None, "no Jupyter server is running here (this notebook runs without one, e.g. under papermill)"
    # A kernel is its server's child; with several servers running, that tells ours apart.
    ours = [info for info in found if info.get("pid") == os.getppid()]
    return (ours or found)[0], None


def proxy_link(port, runtime_dir=None):
    """Where a browser opens this server's page through jupyter-server-proxy, and whether the proxy answers there.

    Returns a dict: "page" (a path from the Jupyter server's root, for a link in the notebook), "base_url",
    "checked" (what a request through the proxy gave) and "missing" (why the page cannot be reached, or None).
    """
    found = {"port": port, "page": None, "base_url": None, "checked": None, "missing": None}
    if importlib.util.find_spec("jupyter_server_proxy") is None:
        found["missing"] = "jupyter-server-proxy is not installed (pip install jupyter-server-proxy)"
        return found
    prefix = os.environ.get(HUB_PREFIX)
    info, why = jupyter_server(runtime_dir)
    if prefix:  # JupyterHub's proxy sits in front: the hub's prefix is the one the browser sees
        found["base_url"] = prefix if prefix.endswith("/") else prefix + "/"
    elif info:
        found["base_url"] = info.get("base_url", "/")
    else:
        found["missing"] = why
        return found
    found["page"] = f"{found['base_url']}proxy/{port}/{PAGE}"
    if info and not prefix:
        found["checked"] = probe(info, port)
        if not found["checked"].startswith("200"):
            found["missing"] = f"the proxy did not pass a request on to port {port}: {found['checked']}"
    return found


def probe(info, port):
    """Ask the Jupyter server for the lab server's `/` through the proxy, as a browser would: the status and body."""
    url = f"{info['url'].rstrip('/')}/proxy/{port}/"
    request = urllib.request.Request(url, headers={"Authorization": f"token {info.get('token', '')}"})
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as answer:
            return f"{answer.status} {answer.read(64).decode(errors='replace').strip()}"
    except urllib.error.HTTPError as error:
        return f"{error.code} {error.reason}"
    except OSError as error:
        return f"no answer: {error}"


class Link:
    """The page's link as the notebook shows it (an object with _repr_html_: no display library needed here)."""

    def __init__(self, found):
        self.found = found

    def __repr__(self):
        if self.found.get("missing"):
            return f"No page to open here: {self.found['missing']}. The section goes on without your browser."
        return f"Open {self.found['page']} in a new tab of this browser."

    def _repr_html_(self):
        if self.found.get("missing"):
            return f"<p>{html.escape(repr(self))}</p>"
        page = html.escape(self.found["page"], quote=True)
        return f'<p><a href="{page}" target="_blank">Open your subscriber page</a> ({page}, in a new tab).</p>'


def begin():
    """Start the push server; returns it (None where it cannot run) and the facts of its page's link (proxy_link)."""
    reason = registry.missing(SERVER)
    if reason:
        return None, {"missing": reason}
    server = servers.start(SERVER)
    return server, proxy_link(server.port)


def get_json(server, path):
    with urllib.request.urlopen(server.url + path, timeout=PROBE_TIMEOUT_S) as answer:
        return json.load(answer)


def wait_for_page(server, wait_s):
    """Wait up to `wait_s` for a browser to subscribe (the server counts a WebSocket and an EventSource)."""
    deadline = time.monotonic() + wait_s
    while True:
        counts = get_json(server, "/stats").get("subscribers", {})
        if counts.get("ws", 0) and counts.get("sse", 0):
            return counts
        if time.monotonic() >= deadline:
            return counts
        time.sleep(0.2)


def echo_time(echo):
    """The server's monotonic time when an echo arrived, whatever the server calls that field."""
    for key in ("received", "received_s", "monotonic", "t"):
        if isinstance(echo.get(key), (int, float)):
            return echo[key]
    return None


def read_echoes(server):
    """The echoes the server holds: a list of dicts with at least "seq" and the time it got them."""
    found = get_json(server, "/echoes")
    return found.get("echoes", []) if isinstance(found, dict) else found


def run(server, link=None, messages=5, every_s=0.2, wait_s=0.0, size=256):
    """Publish `messages` messages and read the page's echoes: the round trip of each, from publish to echo.

    `wait_s` is how long to wait for a browser to open the page first (0: use it only if it is already open);
    no wait where `link` (begin's) says no browser can reach the page.
    """
    if server is None:
        return {"skipped": f"the server {SERVER!r} cannot run here"}
    if link and link.get("missing"):
        return {"skipped": f"no browser can reach the page here: {link['missing']}"}
    counts = wait_for_page(server, wait_s)
    if not (counts.get("ws") and counts.get("sse")):
        return {"skipped": f"no browser subscribed (WebSocket {counts.get('ws', 0)}, EventSource"
                           f" {counts.get('sse', 0)}): open the page above, then run this cell again",
                "subscribers": counts}
    already = {echo.get("seq") for echo in read_echoes(server)}
    published = {}
    for _ in range(messages):
        published_at = time.monotonic()  # CLOCK_MONOTONIC is the machine's: the server's echo times use it too
        seq = get_json(server, f"/publish?size={size}")["seq"]
        published[seq] = published_at
        time.sleep(every_s)
    deadline = time.monotonic() + max(2.0, every_s * messages)
    while time.monotonic() < deadline:
        echoes = [e for e in read_echoes(server) if e.get("seq") in published and e.get("seq") not in already]
        if len(echoes) >= 2 * messages:  # one echo per message from each of the page's two subscriptions
            break
        time.sleep(0.1)
    rows = [{"seq": e["seq"], "via": e.get("via"),
             "round_trip_ms": None if echo_time(e) is None else (echo_time(e) - published[e["seq"]]) * 1000}
            for e in echoes]
    return {"messages": messages, "size": size, "subscribers": counts, "echoes": rows,
            "echoed": sorted({row["seq"] for row in rows}), "published": sorted(published)}


def table(result):
    """One line per message: the round trip of each echo of it, from the publish to the echo's arrival."""
    if "skipped" in result:
        return f"skipped: {result['skipped']}"
    lines = []
    for seq in result["published"]:
        times = sorted(row["round_trip_ms"] for row in result["echoes"]
                       if row["seq"] == seq and row["round_trip_ms"] is not None)
        echoes = " and ".join(f"{ms:.1f}" for ms in times)
        lines.append(f"message {seq}: " + (f"echoed after {echoes} ms" if times else "no echo came back"))
    return "\n".join(lines)


def add_claims(claims, result):
    """Section 7's claims: the page got every message, and each echo came back after its publish."""
    if "skipped" in result:
        claims.skip("your browser received every message", result["skipped"])
        return
    missing = sorted(set(result["published"]) - set(result["echoed"]))
    claims.check(f"your browser echoed all {result['messages']} messages", not missing,
                 f"{len(result['echoed'])} of {result['messages']}", "",
                 f"no echo came back for the messages {missing}")
    times = [row["round_trip_ms"] for row in result["echoes"] if row["round_trip_ms"] is not None]
    if times:
        # One clock on both ends: an echo before its publish would mean the clocks differ, not a fast browser.
        claims.check("each echo arrived after its publish (one clock, the machine's)", min(times) > 0,
                     f"{min(times):.1f} to {max(times):.1f} ms", "> 0 ms",
                     f"an echo arrived {min(times):.1f} ms after its publish")
