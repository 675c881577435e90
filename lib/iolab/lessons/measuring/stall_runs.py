"""Coordinated omission under a real stall.

One server, stopped for S seconds mid-run, measured by a closed loop, wrk and an open loop.
"""

import math
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from iolab import benchtools, load, metrics, neighbours, stall

from .spectrum import SPECTRUM, spectrum

STALL_AT = 0.25  # the stall begins a quarter into the run: a calm stretch before it sets each client's baseline


@dataclass
class StallRun:
    """One client's view of a run with a stall: its latencies (ms, sorted) and what the run measured besides."""

    client: str
    latencies_ms: list
    rate_rps: float
    duration_s: float
    stall_from_s: float  # when the server was stopped, in the run's seconds
    stall_s: float  # for how long, as the stall's own child measured it
    points: list = field(default_factory=list)  # [(intended send s, latency ms)] for the timeline (lab clients)
    calm_p99_ms: float = math.nan  # p99 of the requests sent before the stall: this machine's noise
    calm_max_ms: float = math.nan  # and the longest of them: the most this machine delayed a request without a stall
    stall_asked_s: float = math.nan  # the stall asked for: the stall's child sleeps at least this long between its signals
    stall_late_s: float = 0.0  # how late the stall's child woke to stop the server: this CPU's wake-up delay now
    stall_cut_short: bool = False  # the run ended while the server was still stopped, and the stall was cancelled
    stop_reason: str = "completed"  # why the load run ended (load.LoadResult.stop_reason)
    send_lag_s: float = 0.0  # a closed loop's longest wait past a user's think time before it sent: the client's jitter
    summary: object = None  # metrics.Summary for the lab's clients
    wrk: dict = None  # benchtools.parse_wrk's figures, for wrk
    wrk_spectrum: list = None  # [(fraction, ms)] as wrk itself reports them
    others: neighbours.Neighbours | None = None  # what else held the CPUs while the load ran

    @property
    def requests(self):
        return len(self.latencies_ms)

    def percentile_ms(self, fraction):
        if self.wrk_spectrum is not None:
            return _at(self.wrk_spectrum, fraction)
        return metrics.percentile(self.latencies_ms, fraction)

    def spectrum(self):
        return self.wrk_spectrum if self.wrk_spectrum is not None else spectrum(self.latencies_ms)

    def stalled_share(self, stall_fraction=0.5):
        """The share of requests that waited at least half the stall: the ones that saw it."""
        if self.wrk_spectrum is not None:
            threshold = self.stall_s * 1000 * stall_fraction
            above = [1 - fraction for fraction, ms in self.wrk_spectrum if ms >= threshold]
            return max(above) if above else 0.0
        threshold = self.stall_s * 1000 * stall_fraction
        return sum(1 for ms in self.latencies_ms if ms >= threshold) / max(self.requests, 1)


def _at(points, fraction):
    for point_fraction, value in points:
        if point_fraction >= fraction - 1e-12:
            return value
    return points[-1][1] if points else math.nan


def _stall_at_go(server, stall_s, stall_from_s, holder):
    """A before_go for load.start_load: arms the stall on the run's own clock, whose zero is GO_MARGIN_S away."""

    def arm():
        # The go follows in a few milliseconds; the run's own time zero (run.time_zero) places the stall exactly.
        holder["stall"] = stall.stall(server, stall_s, after_s=stall_from_s + load.GO_MARGIN_S)

    return arm


def _lab_run(server, label, stall_s, duration_s, latency_from, follow=None, stall_from_s=None, **spec):
    holder = {}
    stall_from_s = duration_s * STALL_AT if stall_from_s is None else stall_from_s
    with neighbours.watching() as watch:
        run = load.start_load(
            server.url + "/", server=server, before_go=_stall_at_go(server, stall_s, stall_from_s, holder),
            timeout_s=stall_s + 10, max_duration_s=duration_s, **spec,
        )
        try:
            result = follow(run) if follow else run.wait()
        finally:
            run.stop()
            if "stall" in holder and not holder["stall"].done():
                holder["stall"].cancel()  # the run ended early (an error, an interrupt): resume the server now
    stalled = holder.get("stall")
    stopped, resumed = stalled.wait() if stalled else (None, None)
    server.check()
    zero = run.time_zero or 0.0  # time.perf_counter and time.monotonic are one clock on Linux
    began = (stopped - zero) if stopped else stall_from_s
    lasted = (resumed - stopped) if stopped and resumed else stall_s
    summary = metrics.summarize(result, latency_from=latency_from)
    samples = result.samples
    measured = [s.latency_from_intended if latency_from == "intended" else s.latency for s in samples]
    intended = [s.intended if s.intended is not None else s.start for s in samples]
    # Sent before the stall and answered before it too: what a request costs here without one.
    calm = sorted(ms * 1000 for ms, sent in zip(measured, intended) if sent + ms < began)
    return StallRun(
        client=label,
        latencies_ms=sorted(ms * 1000 for ms in measured),
        rate_rps=summary.rps,
        duration_s=result.duration_s,
        stall_from_s=began,
        stall_s=lasted,
        points=[(sent, ms * 1000) for sent, ms in zip(intended, measured)],
        calm_p99_ms=metrics.percentile(calm, 0.99),
        calm_max_ms=calm[-1] if calm else math.nan,
        stall_asked_s=stall_s,
        stall_late_s=max(0.0, stopped - stalled.planned_at) if stalled and stopped else 0.0,
        stall_cut_short=bool(stalled and stalled.cancelled),
        stop_reason=_stop_reason(result),
        send_lag_s=_send_lag_s(samples, spec.get("think_s")),
        summary=summary,
        others=watch.found,
    )


def _stop_reason(result):
    """Why the run ended; when it did not complete, with the last line its client processes wrote to stderr."""
    said = result.client_stderr.strip().splitlines()
    return result.stop_reason if result.stop_reason == "completed" or not said else f"{result.stop_reason}: {said[-1]}"


def _send_lag_s(samples, think_s):
    """A closed loop's longest gap between an answer and its user's next request, less the think time."""
    if not think_s:
        return 0.0
    by_user = {}
    for sample in sorted(samples, key=lambda sample: sample.start):
        by_user.setdefault(sample.user, []).append(sample)
    gaps = [later.start - earlier.end - think_s for sent in by_user.values() for earlier, later in zip(sent, sent[1:])]
    return max([0.0, *gaps])


def closed_loop(server, rate_rps, users, duration_s, stall_s, follow=None):
    """The lab's closed loop: `users` users, each thinking users/rate s between answer and next request.

    `follow(run)` may draw the run live (live.follow) and must return its LoadResult."""
    return _lab_run(
        server, "closed loop", stall_s, duration_s, "send", follow, kind="closed_raw", concurrency=users,
        requests=int(rate_rps * duration_s * 2) + users, think_s=users / rate_rps,
    )


def open_loop(server, rate_rps, duration_s, stall_s, follow=None, stall_from_s=None):
    """The lab's open loop on a fixed clock, every latency timed from the request's intended send."""
    # Enough connections for every request due during the stall, so none waits for a free one.
    connections = min(1000, math.ceil(rate_rps * (stall_s + 0.5)) + 16)
    return _lab_run(
        server, "open loop", stall_s, duration_s, "intended", follow, stall_from_s, kind="open", rate_rps=rate_rps,
        schedule="fixed",
        concurrency=connections, requests=max(1, int(rate_rps * duration_s)),
    )


def paced_script(delay_ms, fractions=SPECTRUM):
    """Lua for wrk: every connection waits `delay_ms` before each request (wrk's delay()), and wrk prints its own
    latency spectrum at the end (after its correction, as its report does) as `PCT fraction microseconds`."""
    listed = ", ".join(f"{fraction * 100:.6f}" for fraction in fractions)
    return "\n".join([
        f"local delay_ms = {delay_ms:.3f}",
        "delay = function() return delay_ms end",
        "done = function(summary, latency, requests)",
        f"  for _, p in ipairs({{{listed}}}) do",
        "    io.write(string.format('PCT %.6f %d\\n', p / 100, latency:percentile(p)))",
        "  end",
        "  io.write(string.format('MAXUS %d\\n', latency.max))",
        "end",
    ]) + "\n"


def wrk_run(server, rate_rps, users, duration_s, stall_s, timeout_s=None, stall_from_s=None):
    """wrk with `users` connections, each pacing itself users/rate s apart, while the server is stopped S s.

    `timeout_s` is wrk's --timeout (by default long enough for the stall). Returns the reason, a sentence,
    instead when wrk is not installed."""
    reason = benchtools.missing_reason("wrk")
    if reason:
        return reason
    duration_s = max(1, round(duration_s))  # wrk counts whole seconds
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "paced.lua"
        script.write_text(paced_script(users / rate_rps * 1000))
        stall_from_s = duration_s * STALL_AT if stall_from_s is None else stall_from_s
        stalled = stall.stall(server, stall_s, after_s=stall_from_s)
        began = time.monotonic()
        try:
            with neighbours.watching() as watch:
                report = benchtools.wrk_output(
                    server.url + "/", connections=users, duration_s=duration_s, script=script,
                    timeout_s=timeout_s or max(2, math.ceil(stall_s) + 1), latency=True,
                )
        finally:
            if not stalled.done():
                stalled.cancel()
        stopped, resumed = stalled.wait()
    server.check()
    figures = benchtools.parse_wrk(report)
    points = [(float(f), int(us) / 1000) for f, us in re.findall(r"^PCT ([\d.]+) (\d+)$", report, re.MULTILINE)]
    max_us = re.search(r"^MAXUS (\d+)$", report, re.MULTILINE)
    if max_us:
        points.append((1 - 0.5 / max(figures["requests"] or 1, 1), int(max_us.group(1)) / 1000))
    return StallRun(
        client="wrk",
        latencies_ms=[],
        rate_rps=figures["rps"] or math.nan,
        duration_s=duration_s,
        stall_from_s=(stopped - began) if stopped else stall_from_s,
        stall_s=(resumed - stopped) if stopped and resumed else stall_s,
        stall_asked_s=stall_s,
        stall_late_s=max(0.0, stopped - stalled.planned_at) if stopped else 0.0,
        stall_cut_short=stalled.cancelled,
        wrk=figures,
        wrk_spectrum=points,
        others=watch.found,
    )


def predicted_open_ms(fraction, stall_s, duration_s, rate_rps, demand_s=0.0, base_ms=0.0):
    """The latency at `fraction` of an open loop at `rate_rps` for `duration_s`, whose server stops for `stall_s`.

    The requests due during the stall all wait for its end; the one due k/rate s
    into it then leaves after the k before it, each D of the server's time, so it
    waits S − k (1/rate − D). The slowest (1 − p) of the rate × T requests are the
    first (1 − p) rate T of the stall: x_p = S − (1 − p) T (1 − rate D), when that
    is positive (fewer than (1 − p) T × rate requests saw the stall otherwise),
    plus what the request costs without a stall.
    """
    waited_s = stall_s - (1 - fraction) * duration_s * (1 - rate_rps * demand_s)
    return max(waited_s, 0.0) * 1000 + base_ms


def rank_from_top(count, fraction):
    """How many of `count` sorted values lie at or above their nearest-rank percentile `fraction` (1 for the max)."""
    return count - max(1, math.ceil(fraction * count)) + 1


def open_percentile_bounds(run, fraction, per_request_s):
    """(low, high, detail) in ms for an open loop's latency at `fraction` in a run whose server was stopped.

    Built from this run alone. The percentile is the m-th slowest request (m from the rank). The stall's child
    sleeps at least the stall asked for between its two signals, and read its clock for the stop at most its
    lateness (stall_late_s) after sending it; so a request due u s after that reading waits at least
    S_asked − late − u: the m requests due first in the stall make the low end. After the stall the server answers
    them in the order they came: the m-th is answered at most the work of the k requests queued up to it
    (`per_request_s` each: the CPU's work per request and the waits for a CPU) after the first answer the stall
    held came back, plus the longest this machine delayed a request without a stall (this run's calm maximum; its
    calm p99 where the run kept no maximum): the high end. (When the
    first answer came is measured, not predicted: on one CPU the client reads nothing until the server yields it.)
    """
    m = rank_from_top(run.requests, fraction)
    stop, lasted = run.stall_from_s, run.stall_s
    due = sorted((sent - stop, sent + ms / 1000) for sent, ms in run.points if 0.0 <= sent - stop < lasted)
    detail = {"m": m, "due_in_stall": len(due), "stall_s": lasted, "stall_late_s": run.stall_late_s}
    if len(due) < m:  # the stall held fewer requests than the percentile's rank: it cannot show at this percentile
        return math.nan, math.nan, detail
    u_m = due[m - 1][0]
    first_answer = min(done for _, done in due)
    ahead = sum(1 for sent, ms in run.points if sent <= stop + u_m and sent + ms / 1000 > stop)
    held_for_s = lasted if run.stall_cut_short or math.isnan(run.stall_asked_s) else run.stall_asked_s
    low = (held_for_s - run.stall_late_s - u_m) * 1000
    noise_ms = run.calm_p99_ms if math.isnan(run.calm_max_ms) else run.calm_max_ms
    high = (first_answer - (stop + u_m) + ahead * per_request_s) * 1000 + noise_ms
    detail.update(u_m_ms=u_m * 1000, first_answer_after_resume_ms=(first_answer - stop - lasted) * 1000,
                  queued_ahead=ahead, per_request_ms=per_request_s * 1000, calm_max_ms=noise_ms)
    return low, high, detail


def drain_s(run, cores):
    """How fast the queue a stall built drains, per request: the server's D, and on one CPU the client's D_c too."""
    return (run.summary.demand_ms + (run.summary.client_demand_ms if cores < 2 else 0)) / 1000


def per_request_s(run):
    """Everything the CPU did per request in `run`: the server's D, the client's D_c and the waits for a CPU."""
    summary = run.summary
    waits_ms = [ms for ms in (summary.queued_ms, summary.client_queued_ms) if math.isfinite(ms)]
    return (summary.demand_ms + summary.client_demand_ms + sum(waits_ms)) / 1000


def corrected_floor_ms(stall_s, think_s, lag_s, interval_ms, users, corrected_count, fraction):
    """The least a closed loop's corrected latency at `fraction` can be, from its stall, think time and interval.

    Each of the `users` sends its stalled request at most a think time θ (plus the client's own lag, and the
    delay in reading the answer before it) after the stop, and the server stays stopped at least S (the stall
    asked for), so each waits at least L = S − θ − lag. The correction adds L − I, L − 2I, ... for each: the m-th
    largest of the corrected values is at least L − (⌈m / users⌉ − 1) I.
    """
    m = rank_from_top(corrected_count, fraction)
    return (stall_s - think_s - lag_s) * 1000 - (math.ceil(m / users) - 1) * interval_ms


def closed_floor_ms(closed_run, stall_s, users, rate_rps, interval_ms, corrected_count):
    """corrected_floor_ms at p99 for the lab's closed loop: think time θ = users / rate, its lag as measured."""
    return corrected_floor_ms(stall_s, users / rate_rps, closed_run.send_lag_s + closed_run.calm_p99_ms / 1000,
                              interval_ms, users, corrected_count, 0.99)


def predicted_stalled_share(client, stall_s, duration_s, rate_rps, users):
    """The share of requests that see the stall: rate × S of rate × T for the open loop, at most one per user closed."""
    total = rate_rps * duration_s
    return min(stall_s / duration_s, 1.0) if client == "open loop" else min(users / total, 1.0)


def corrected(run, expected_interval_ms):
    """A closed loop's latencies corrected for coordinated omission (HdrHistogram's rule), sorted."""
    return metrics.corrected_for_omission(run.latencies_ms, expected_interval_ms)
