"""Lesson 14's runs: the server on the link's far side (or on loopback), the client as a child in the near side.

Where the link cannot be built here, `why_no_link()` says why, and only what loopback can show runs. Each run keeps,
under "neighbours", what else held the CPUs while it ran (iolab.neighbours): the servers, the clients and the delay
line are all this kernel's children, so their CPU counts as ours.
"""

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager

from iolab import children, link, neighbours, servers

from .parameters import SLOW_CLIENTS_PER_WORKER

SERVER = "tornado_app"  # the lab's own event-loop server, the same under the contract on either side of the link
SENDER = "bulk_sender"  # threaded_app with /bytes?n=&cc=: the sender's congestion control set per answer
BBR_FLOWS = 3  # BBR's transfers at once in section 4: each may send a few MB a second through the delay line
CONNECTS_AT_ONCE = 10  # section 4's connects in flight at once: a lost SYN's second holds one of them, not the run
# Section 2's slow clients download answers one after another until the short requests beside them are done.
MOST_DOWNLOADS = 50
SHORT_REQUESTS = 3  # short requests timed beside the slow clients, one after another
CHILD_TIMEOUT_S = 120.0  # a whole section's exchanges; a stuck link fails the cell, it never hangs the kernel


def why_no_link():
    """None where this user can build a link here, else one sentence why not."""
    return link.why_not()


@contextmanager
def built(rtt_ms, loss_percent, rate_mbit):
    """The link (a client namespace, a server namespace, the delay line between), torn down however the block ends."""
    with link.build(link.LinkSpec(rtt_ms=rtt_ms, loss_percent=loss_percent, rate_mbit=rate_mbit)) as path:
        yield path


class Lab:
    """The link for the whole lesson (None where it cannot be built, with why), kept open across the notebook's cells
    and closed by close(); the kernel's death takes it down too (its namespaces are held by its children)."""

    def __init__(self, plan):
        self.missing = why_no_link()
        self.path = None
        self.stack = ExitStack()
        self.opened = time.monotonic()
        if self.missing is None:
            self.path = self.stack.enter_context(built(plan.rtt_ms, 0.0, None))

    def usage(self):
        """The delay line's CPU seconds and packets since it started, and the wall time: None without the link."""
        if self.path is None:
            return None
        cpu_s, packets, dropped = self.path.delay_line_usage()
        return {"cpu_s": cpu_s, "packets": packets, "dropped": dropped, "wall_s": time.monotonic() - self.opened}

    def close(self):
        self.stack.close()


@contextmanager
def watched(found):
    """Read the neighbours over the block into `found` (a run's figures, a dict) under "neighbours"."""
    with neighbours.watching() as watch:
        yield found
    found["neighbours"] = watch.found.as_dict()


def serving(path=None, name=SERVER):
    """A lab server in the link's server namespace, or on loopback when `path` is None."""
    return servers.serve(name, link=path)  # servers.start runs it here when link is None


def exchanges(what, server, path=None, side="client", **sizes):
    """Run the exchanges client (`what`: round_trips, nagle, transfers...) against `server` in one of the link's
    namespaces (`side`: the client's, or the server's own, beside the server) or here, on loopback: its figures."""
    argv = children.python("-m", "iolab.lessons.network.exchanges", what, "--host", server.host, "--port",
                           server.port, *[f"--{name.replace('_', '-')}={value}" for name, value in sizes.items()])
    if path is not None:
        argv = path.argv(side, argv)
    done = children.run(argv, CHILD_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"the {what} client failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def round_trips(path, repeats, n):
    """Section 1: connects and requests, and n requests three ways, on the link and then on loopback (where the
    round trip is next to nothing, so what is left is the server's and the client's own time)."""
    found = {}
    for where, on in (("link", path), ("loopback", None)):
        with watched({}) as run, serving(on) as server:
            run |= exchanges("round_trips", server, on, repeats=repeats, n=n)
        found[where] = run
    return found


def nagle(path, exchanges_count):
    """Section 6 on the link, or on loopback where `path` is None."""
    with watched({}) as run, serving(path) as server:
        run |= exchanges("nagle", server, path, repeats=exchanges_count)
    return run


def slow_start(path, sizes, repeats):
    """Section 3 on the link: each size fetched `repeats` times on new connections, a Reno sender: seconds, under
    "sizes"."""
    with watched({}) as run, serving(path, SENDER) as server:
        run["sizes"] = exchanges("transfers", server, path, sizes=",".join(map(str, sizes)), repeats=repeats,
                                 cc="reno")
    return run


def loss(path, loss_percent, size, flows, connects):
    """Section 4 on the link at `loss_percent`: `flows` transfers of `size` bytes from Reno and as many from CUBIC,
    all at once, then BBR's, then `connects` connects; the link is clean again afterwards."""
    path.set(loss_percent=loss_percent)
    try:
        with watched({}) as run, serving(path, SENDER) as server:
            # Reno's and CUBIC's flows side by side: the link has no rate to share and its losses are random, so they
            # do not slow each other; only the loss does. BBR's, many times faster, go after them, fewer, so that
            # the delay line is never what limits a flow.
            def transfers(congestion, count):
                return exchanges("transfers", server, path, sizes=size, repeats=count, cc=congestion,
                                 at_once=count)[str(size)]
            with ThreadPoolExecutor(2) as pool:
                reno, cubic = pool.map(transfers, ("reno", "cubic"), (flows, flows))
            bbr = transfers("bbr", BBR_FLOWS)
            times = exchanges("connects", server, path, repeats=connects, at_once=CONNECTS_AT_ONCE)
    finally:
        path.set(loss_percent=0.0)
    return {"loss_percent": loss_percent, "size": size, "transfer_s": {"reno": reno, "cubic": cubic, "bbr": bbr},
            "connect_s": times, "neighbours": run["neighbours"]}


def slow_servers(workers):
    """Section 2's three servers: w sync workers alone; the same w behind nginx (w upstreams of one worker each, on
    the server's own loopback); one Tornado loop. Each as the lab runs it, in the link's server namespace."""
    return {"gunicorn alone": ("gunicorn_app", {"workers": workers}),
            "nginx in front": ("nginx_proxy", {"upstream": "gunicorn_app", "upstreams": workers}),
            "Tornado": ("tornado_app", {})}


def slow_clients(path, rate_mbit, size, workers, repeats):
    """Section 2 on the link at `rate_mbit`: for each server, SLOW_CLIENTS_PER_WORKER × w clients download `size`
    bytes again and again while a client beside the server sends short requests, each on a new connection (and
    first without them). On Tornado, first `repeats` downloads alone: the rate the link delivers. The link has no
    rate afterwards."""
    path.set(rate_mbit=rate_mbit)
    try:
        found = {"rate_mbit": rate_mbit, "size": size, "workers": workers, "servers": {}}
        for name, (server_name, options) in slow_servers(workers).items():
            with watched({}) as run, servers.serve(server_name, link=path, **options) as server:
                # The link's own rate, measured on the server that needs no worker for it.
                alone = repeats if server_name == SERVER else 0
                run |= beside_slow_clients(server, path, size, workers, alone)
            found["servers"][name] = run
        found["alone_s"] = found["servers"]["Tornado"].pop("alone_s")
    finally:
        path.set(rate_mbit=None)
    return found


def client_argv(what, server, **options):
    return children.python("-m", "iolab.lessons.network.exchanges", what, "--host", server.host, "--port",
                           server.port, *[f"--{name.replace('_', '-')}={value}" for name, value in options.items()])


def beside_slow_clients(server, path, size, workers, alone):
    """Short requests to `server` from its own side, alone; then `alone` downloads one at a time, and slow clients
    downloading while the short requests run again (the slow clients stop once those are done)."""
    clients = SLOW_CLIENTS_PER_WORKER * workers
    short = path.spawn("server", client_argv("requests", server, repeats=SHORT_REQUESTS, wait_for=clients),
                       stderr=subprocess.PIPE)
    slow = None
    try:
        short_alone = json.loads(children.read_until(short.stdout, b"\n", CHILD_TIMEOUT_S) or b"null")
        slow = path.spawn("client", client_argv("downloads", server, sizes=size, at_once=clients, alone=alone,
                                                repeats=MOST_DOWNLOADS), stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        said, short_err = short.communicate(timeout=CHILD_TIMEOUT_S)
    finally:
        if slow is not None:
            out, slow_err = slow.communicate(timeout=CHILD_TIMEOUT_S)  # closes its stdin: the slow clients stop
        short.kill()
    for process, err, what in ((short, short_err, "short requests"), (slow, slow_err, "downloads")):
        if process.returncode != 0:
            raise RuntimeError(f"the {what} client failed ({process.returncode}): {err.decode().strip()[-800:]}")
    return {"short_alone_s": short_alone, "short_s": json.loads(said.splitlines()[-1]),
            "clients": clients} | json.loads(out.splitlines()[-1])
