"""Lesson 14's runs: the server on the link's far side (or on loopback), the client as a child in the near side.

Where the link cannot be built here, `why_no_link()` says why, and only what loopback can show runs.
"""

import json
import statistics
import subprocess
import sys
from contextlib import contextmanager

from iolab import servers

SERVER = "tornado_app"  # the lab's own event-loop server, the same under the contract on either side of the link
CHILD_TIMEOUT_S = 120.0  # a whole section's exchanges; a stuck link fails the cell, it never hangs the kernel


def why_no_link():
    """None where this user can build a link here, else one sentence why not."""
    try:
        from iolab import link
    except ImportError:
        return "this copy of the lab has no iolab.link, the module that builds the link"
    return link.why_not()


@contextmanager
def built(rtt_ms, loss_percent, rate_mbit):
    """The link (a client namespace, a server namespace, the delay line between), torn down however the block ends."""
    from iolab import link
    with link.build(link.LinkSpec(rtt_ms=rtt_ms, loss_percent=loss_percent, rate_mbit=rate_mbit)) as path:
        yield path


def serving(path=None):
    """tornado_app in the link's server namespace, or on loopback when `path` is None."""
    return servers.serve(SERVER, link=path) if path is not None else servers.serve(SERVER)


def exchanges(what, server, path=None, **sizes):
    """Run the exchanges client (`what`: round_trips or nagle) against `server` in the link's client namespace (or
    here, on loopback): its figures."""
    argv = [sys.executable, "-m", "iolab.lessons.network.exchanges", what, "--host", server.host,
            "--port", str(server.port), *[f"--{name.replace('_', '-')}={value}" for name, value in sizes.items()]]
    if path is not None:
        argv = path.argv("client", argv)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {what} client failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def round_trips(path, repeats, n):
    """Section 1 on the link: connects and requests, and n requests three ways."""
    with serving(path) as server:
        return exchanges("round_trips", server, path, repeats=repeats, n=n)


def nagle(path, exchanges_count):
    """Section 6 on the link, or on loopback where `path` is None."""
    with serving(path) as server:
        return exchanges("nagle", server, path, repeats=exchanges_count)


def median_ms(seconds):
    return statistics.median(seconds) * 1000


def spread_ms(seconds):
    """The middle half's width (the upper quartile less the lower), in ms: this run's noise on one figure."""
    quartiles = statistics.quantiles(seconds, n=4, method="inclusive")
    return (quartiles[2] - quartiles[0]) * 1000

