"""Lesson 14's section 5: a page of small answers asked by h2load, HTTP/1.1 on six connections or HTTP/2 on one."""

import re
from concurrent.futures import ThreadPoolExecutor

from iolab import children, contract, neighbours, registry, servers

from .parameters import LOSSY_AT_ONCE, LOSSY_PAGES

SERVER = "hypercorn_app"  # one server, one loop, for both protocols: only the protocol differs
CONNECTIONS_H1 = 6  # what browsers open to one host over HTTP/1.1
# The sender's congestion control: Reno, the one Mathis's model (section 4) describes. This kernel's default, BBR,
# ignores random loss, and would hide what one congestion window does to every stream.
CONGESTION = "reno"
# One page: the slowest accepted, 2.4 MB over HTTP/2 at 10 % loss on a 200 ms link, takes about three minutes at
# Padhye's rate (section 4).
RUN_TIMEOUT_S = 600.0
WAYS = ("h2", "h1")  # HTTP/2 on one connection, HTTP/1.1 on six
FINISHED = re.compile(r"finished in ([\d.]+)(us|ms|s),")
DATA = re.compile(r"\((\d+)\) data")
SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def why_not():
    """None where the section's parts are here (h2load, hypercorn), else one sentence why not."""
    if contract.find_program("h2load") is None:
        return "h2load is not installed here (Debian's nghttp2-client)"
    return registry.missing(SERVER)


def h2load_argv(way, url, requests):
    """h2load asking `url` `requests` times: HTTP/2, all at once on one connection (-m streams); or HTTP/1.1 on six,
    one request at a time on each (-m1, no pipelining), as a browser does."""
    if way == "h2":
        return [contract.find_program("h2load"), "-n", requests, "-c", 1, "-m", requests, url]
    return [contract.find_program("h2load"), "--h1", "-n", requests, "-c", CONNECTIONS_H1, "-m", 1, url]


def seconds_of(said, expected_bytes):
    """The page's time from h2load's report, once every byte of every answer arrived. h2load counts hypercorn's
    HTTP/1.1 answers as failed (h11 sends `200 ` with an empty reason phrase), so the bytes are the check."""
    finished, data = FINISHED.search(said), DATA.search(said)
    if finished is None or data is None:
        raise RuntimeError(f"h2load's report has no time or no byte count: {said.strip()[-600:]}")
    if int(data.group(1)) < expected_bytes:
        raise RuntimeError(f"h2load got {data.group(1)} bytes of {expected_bytes}: {said.strip()[-600:]}")
    return float(finished.group(1)) * SECONDS[finished.group(2)]


def one_page(server, way, requests, size, path=None):
    """Seconds for h2load to get `requests` answers of `size` bytes from `server`, in the link's client namespace (or
    here, on loopback), the connects included."""
    argv = h2load_argv(way, f"http://{server.host}:{server.port}/bytes?n={size}", requests)
    done = children.run(path.argv("client", argv) if path is not None else argv, RUN_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"h2load failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-600:]}")
    return seconds_of(done.stdout, requests * size)


def serving(path):
    """hypercorn in the link's server namespace (or on loopback where `path` is None), Reno on every connection."""
    return servers.serve(SERVER, link=path, congestion=CONGESTION)


def in_turn(path, requests, size, repeats):
    """Each way `repeats` times, one page at a time, taking turns (a slow moment of the machine falls on both): on a
    clean link each page is a few round trips, and the server's own time must not queue behind another page's."""
    with serving(path) as server:
        found = {way: [] for way in WAYS}
        for _ in range(repeats):
            for way in WAYS:
                found[way].append(one_page(server, way, requests, size, path))
    return found


def at_once(path, requests, size, repeats=LOSSY_PAGES, batch=LOSSY_AT_ONCE):
    """Each way `repeats` times, `batch` pages of each way at once: under loss a page waits seconds for its
    retransmissions, not for the server, and the link has no rate to share, so the pages of a batch do not slow each
    other much; a batch takes as long as its slowest page, not their sum."""
    found = {way: [] for way in WAYS}
    with serving(path) as server, ThreadPoolExecutor(len(WAYS) * batch) as pool:
        for start in range(0, repeats, batch):
            count = min(batch, repeats - start)
            futures = {way: [pool.submit(one_page, server, way, requests, size, path) for _ in range(count)]
                       for way in WAYS}
            for way, done in futures.items():
                found[way] += [future.result() for future in done]
    return found


def compare(path, requests, size, repeats, loss_percent):
    """Section 5: the page on loopback (the server's and the client's own time), on the clean link, then on the link
    at `loss_percent` (set on the link, so both ways meet the same loss); the link is clean again afterwards. What else
    held the CPUs during each of the three is kept under "neighbours"."""
    found = {"requests": requests, "size": size, "loss_percent": loss_percent, "congestion": CONGESTION,
             "connections_h1": CONNECTIONS_H1}
    others = {}
    for where, on in (("loopback", None), ("clean", path)):
        with neighbours.watching() as watch:
            found[where] = in_turn(on, requests, size, repeats)
        others[where] = watch.found.as_dict()
    path.set(loss_percent=loss_percent)
    try:
        with neighbours.watching() as watch:
            found["lossy"] = at_once(path, requests, size)
        others["lossy"] = watch.found.as_dict()
    finally:
        path.set(loss_percent=0.0)
    return found | {"neighbours": others}
