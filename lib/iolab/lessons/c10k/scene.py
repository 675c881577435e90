"""The seed's `wrk -t10 -c1000` scene, scaled to this machine.

Wrk's report beside the lab's client, which records every request.
"""

import math
from dataclasses import dataclass, field

from iolab import benchtools, load, metrics, neighbours, registry, servers

WRK_TIMEOUT_S = 2  # wrk's default --timeout, in whole seconds (wrk reads no fractions)

# The two servers of the scene: (registry name, options). Four sync workers, as in the write-up.
LINEUP = {
    "gunicorn, 4 sync workers": ("gunicorn_app", {"workers": 4, "worker_class": "sync"}),
    "tornado": ("tornado_app", {}),
}


# How far past wrk's timeout the sync workers' wait is put: far enough that the timeout itself, the answer wrk's
# report invites, is clearly not the wait (exercise 8's 20% tolerance around 1.5 × timeout stops at 1.2 ×).
OVER_TIMEOUT = 1.5


def handler_wait_ms(connections, workers=4, timeout_s=WRK_TIMEOUT_S, over=OVER_TIMEOUT):
    """The handler's wait that puts `workers` blocking workers at least `over` times past wrk's timeout with `connections` users.

    A closed loop of C users over W workers that each wait Z (a delay: no CPU) per request gives
    at most X = W / Z requests per second, so each request takes at least
    R = C / X = C·Z / W (Little's law). R = over × timeout gives Z, rounded up
    to whole milliseconds so that R never falls short of it.
    """
    return max(1, math.ceil(over * timeout_s * workers / connections * 1000 - 1e-9))


@dataclass
class Scene:
    """One server's run of the scene: the prediction, wrk's report and the lab client's, with every latency it saw."""

    server: str
    connections: int
    wait_ms: int
    path: str
    serves_at_once: int | None
    wrk: dict | None = None
    lab: object = None  # a metrics.Summary
    lab_latencies_ms: list = field(default_factory=list, repr=False)
    skipped: str | None = None
    timeout_s: float = WRK_TIMEOUT_S
    neighbours: dict | None = None  # what else held the CPUs over both clients' runs (iolab.neighbours, as_dict)

    @property
    def bound_rps(self):
        """X ≤ W / Z for W blocking workers waiting Z each: None where nothing blocks (an event loop waits on timers)."""
        return None if not self.serves_at_once else self.serves_at_once / (self.wait_ms / 1000)

    @property
    def predicted_latency_s(self):
        """R ≥ C / X_max = C·Z / W for blocking workers; None for an event loop (the CPU decides, not the wait)."""
        return None if self.bound_rps is None else self.connections / self.bound_rps

    @property
    def lab_over_timeout(self):
        """Requests the lab's client saw answered slower than wrk's timeout: wrk counts them and drops their latency."""
        limit_ms = self.timeout_s * 1000
        return sum(1 for ms in self.lab_latencies_ms if ms > limit_ms)

    def row(self):
        wrk = self.wrk or {}
        lab = self.lab
        percentiles = wrk.get("percentiles_ms") or {}
        return {
            "server": self.server,
            "connections": self.connections,
            "wait_ms": self.wait_ms,
            "serves_at_once": self.serves_at_once,
            "bound_rps": self.bound_rps,
            "predicted_latency_s": self.predicted_latency_s,
            "wrk_rps": wrk.get("rps"),
            "wrk_requests": wrk.get("requests"),
            "wrk_timeouts": wrk.get("timeouts"),
            "wrk_mean_ms": wrk.get("mean_ms"),
            "wrk_max_ms": wrk.get("max_ms"),
            "wrk_p50_ms": percentiles.get(50),
            "wrk_p99_ms": percentiles.get(99),
            "lab_requests": len(self.lab_latencies_ms) if lab else None,
            "lab_errors": lab.errors if lab else None,
            "lab_rps": lab.rps if lab else None,
            "lab_mean_ms": lab.mean_ms if lab else None,
            "lab_p50_ms": lab.p50_ms if lab else None,
            "lab_p99_ms": lab.p99_ms if lab else None,
            "lab_max_ms": lab.max_ms if lab else None,
            "lab_over_timeout": self.lab_over_timeout if lab else None,
            "skipped": self.skipped,
            "neighbours": self.neighbours,
        }


def others_held(row):
    """The share of a scene others held the CPUs (a Scene.row()'s neighbours), for a table: "38%", or "unknown"."""
    return neighbours.held(row.get("neighbours"))


def missing_reason(name):
    """Why the scene cannot run `name` here (wrk or the server missing), or None."""
    return benchtools.missing_reason("wrk") or registry.missing(name)


def run(label, name, options, *, connections=1000, duration_s=10, wait_ms=10, timeout_s=WRK_TIMEOUT_S,
        wrk_threads=2, lab_rounds=2):
    """wrk for `duration_s`, then the lab's client for `lab_rounds` requests per connection, on one server."""
    info = registry.get(name) if name in registry.SERVERS else None
    waits_on_timers = info is not None and info.waits_without_blocking
    path = f"{'/async-sleep' if waits_on_timers else '/sync-sleep'}?ms={wait_ms}"
    # Waits on timers overlap without limit; blocking waits, only as many as the server serves at once.
    at_once = None if waits_on_timers or info is None else info.at_once(**options)
    scene = Scene(label, connections, wait_ms, path, at_once, timeout_s=timeout_s)
    reason = missing_reason(name)
    if reason:
        scene.skipped = reason
        return scene
    with servers.serve(name, **options) as server, neighbours.watching() as watch:
        url = server.url + path
        # The lab's client first: it waits for every answer, so nothing of its run is left queued in the
        # server. wrk stops at its deadline with a request in flight on every connection, which the
        # server would go on serving for C·Z/W afterwards.
        expected_s = lab_rounds * (scene.predicted_latency_s or timeout_s)
        result = load.run_load(url, requests=lab_rounds * connections, concurrency=connections, kind="closed_raw",
                               timeout_s=max(30.0, 4 * expected_s), max_duration_s=max(60.0, 6 * expected_s),
                               record="samples")
        server.check()
        scene.wrk = benchtools.run_wrk(url, connections, duration_s, threads=min(wrk_threads, connections),
                                       timeout_s=timeout_s, latency=True)
        server.check()
    scene.neighbours = watch.found.as_dict() if watch.found else None
    scene.lab = metrics.summarize(result)
    scene.lab_latencies_ms = sorted(sample.latency * 1000 for sample in result.samples if not sample.error)
    return scene
