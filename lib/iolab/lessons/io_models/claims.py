"""Lesson 04's results file and its closing claims, one line each.

How late a thread may learn of data once the peer's send() has returned (over loopback the data is in our
buffer by then): the time it waited for a CPU, which the kernel counts for us (queued, measured in each run),
plus, in this process, one switch interval: a thread that wants the GIL (the emulated kernel's, or the main
thread that runs a signal handler) gets it within sys.getswitchinterval(). That is the interpreter's rule, not
a figure tuned here. Claims between two predictions are judged as lessons 03 and 05 judge them: the
measurement must sit nearer the claim's prediction than the opposite one.
"""

import math
import sys

from iolab.claims import Claims

from . import select_vs_epoll

SELECT_ERROR = "filedescriptor out of range in select()"  # CPython's words for a descriptor past FD_SETSIZE


LESSON = "04-io-models"
# The figures the claims read of each model's run, at full precision: a bound at 0.999 × the delay must not move by
# rounding (ModelRun.figures rounds them to the µs for a reader).
EXACT = ("wait_ms", "asked_ms", "ready_ms", "copy_ms", "cpu_ms", "queued_ms", "last_sent_ms", "last_delivered_ms",
         "sent_ms", "calls")


def results(plan, *, model_runs, by_mechanism, scaling_rows, limit, cost_per_eagain_us, exercises):
    """This run's figures as plain data: what the results file holds and what the claims are checked on.

    `model_runs` maps each model to its ModelRun (None for one that could not run here), `by_mechanism` each
    multiplexing call to its run, `limit` is what select() said past FD_SETSIZE (None if not tried).
    """
    return {
        "models": {name: model_figures(run) if run else None for name, run in model_runs.items()},
        "multiplexing_calls": {name: {"wait_ms": run.wait_ms, "last_delivered_ms": run.last_delivered_ms,
                                      "queued_ms": run.queued_ms, "neighbours": neighbours_of(run)}
                               for name, run in by_mechanism.items()},
        "select_vs_epoll": [{"fds": row["fds"], "select_us": row["select_us"], "epoll_us": row["epoll_us"]}
                            for row in scaling_rows],
        "select_limit": {"fd": limit["fd"], "select_error": limit["select_error"]} if limit is not None else None,
        "eagain_cost_us": cost_per_eagain_us,
        "switch_interval_ms": sys.getswitchinterval() * 1000,
        "parameters": {"delay_ms": plan.delay_ms, "peers": plan.peers},
        "exercises": exercises,
    }


def model_figures(run):
    """One model's run: its headline figures, those the claims read at full precision, its last EAGAIN and its
    notes (those a results file can hold)."""
    last_eagain_ms = max((event.t_ms for event in run.events if event.kind == "eagain"), default=0.0)
    notes = {key: value for key, value in run.notes.items() if isinstance(value, int | float | str | bool)}
    return run.figures() | {name: getattr(run, name) for name in EXACT} | {
        "model": run.model, "last_eagain_ms": last_eagain_ms, "notes": notes, "neighbours": neighbours_of(run)}


def neighbours_of(run):
    """What else held the CPUs over a run, as the results file keeps it (None where it was not read)."""
    return run.others.as_dict() if run.others else None


def check_claims(found):
    """Check the lesson's claims on `found` (the results), print one line each, and raise ClaimsFailed naming any
    that failed."""
    claims = Claims(LESSON)
    switch_ms, delay_ms = found["switch_interval_ms"], found["parameters"]["delay_ms"]
    runs = found["models"]
    for name, run in runs.items():
        if run is not None:
            model_claims(claims, name, run, delay_ms, switch_ms)
    sleepers_and_busy_loop_claims(claims, runs, found["eagain_cost_us"])
    multiplexing_claims(claims, runs["multiplexing"], found["multiplexing_calls"], found["parameters"]["peers"],
                        switch_ms)
    if runs["signal"] is not None:
        signal_claims(claims, runs["signal"], switch_ms)
    # Completion: one call, and the application worked through both phases.
    async_run = runs["async"]
    slices = async_run["notes"]["work_slices"]
    claims.check("completion: one call, and work through both phases", async_run["calls"] == 1 and slices > 0,
                 f"{async_run['calls']} call(s), {slices} slices of work", "",
                 f"completion: {async_run['calls']} call(s) and {slices} slices of work, not 1 call and some work")
    claims.nearer("completion: CPU burnt on the IO (ms)", async_run["cpu_ms"], 0.0, async_run["wait_ms"], spec=".2f")
    _check_scaling(claims, found["select_vs_epoll"], found["select_limit"])
    return claims.report()


def model_claims(claims, name, run, delay_ms, switch_ms):
    """The five claims every model's run makes about its own trace."""
    # Times are from "go". The peer never sends before its delay is up; it may send later, when a busy machine
    # keeps it off a CPU. The data cannot be in our buffer before the delay either.
    claims.check(f"{name}: the peer sent no sooner than its delay", run["last_sent_ms"] >= 0.999 * delay_ms,
                 f"{run['last_sent_ms']:.1f} ms", f"[{0.999 * delay_ms:.1f}, ∞) ms",
                 f"{name}: the peer sent at {run['last_sent_ms']:.1f} ms, before its delay")
    read_ms = run["ready_ms"] + run["copy_ms"]
    claims.check(f"{name}: the data was read no sooner than the delay", read_ms >= 0.999 * delay_ms,
                 f"{read_ms:.1f} ms", f"[{0.999 * delay_ms:.1f}, ∞) ms",
                 f"{name}: the data was read before the peer's delay was up")
    queued = run["queued_ms"] or 0.0
    late_ms = queued + switch_ms
    learnt_by_ms = run["last_delivered_ms"] + late_ms
    if name == "nonblocking":
        # A spinning thread shares its CPU with everything else that runs, in ways no counter of ours always
        # sees; what it never does is hear "nothing yet" once the data is there. How late it learnt is the
        # scheduler's doing, so that is checked instead of when its wait ended.
        last_eagain_ms = run["last_eagain_ms"]
        bound_ms = max(run["sent_ms"]) + late_ms + (run["last_delivered_ms"] - run["last_sent_ms"])
        claims.check("nonblocking: no EAGAIN once the data was there", last_eagain_ms <= bound_ms,
                     f"last at {last_eagain_ms:.1f} ms", f"(-∞, {bound_ms:.1f}] ms",
                     f"nonblocking: heard EAGAIN at {last_eagain_ms:.1f} ms, after the data was sent at"
                     f" {max(run['sent_ms']):.1f} ms (allowed {late_ms:.1f} ms late: {queued:.1f} queued +"
                     f" {switch_ms:.0f} switch interval)")
        learnt_by_ms = math.inf
    else:
        claims.check(f"{name}: the wait ended once the data was sent", run["ready_ms"] <= learnt_by_ms,
                     f"{run['ready_ms']:.1f} ms", f"(-∞, {learnt_by_ms:.1f}] ms",
                     f"{name}: the peer's send returned at {run['last_delivered_ms']:.1f} ms after go, and the wait"
                     f" ended at {run['ready_ms']:.1f} ms, over {learnt_by_ms:.1f} ({queued:.1f} ms queued +"
                     f" {switch_ms:.0f} ms switch interval)")
    # The application waited all the way from asking until then, except while it ran between waits (multiplexing
    # reads between its sleeps): each such moment it was on a CPU (cpu_ms) or queued for one, both measured.
    asked_to_ready = run["ready_ms"] - run["asked_ms"]
    least_wait_ms = asked_to_ready - run["cpu_ms"] - queued - 0.001  # 1 µs: the clocks' rounding
    wait_ms = run["wait_ms"]
    claims.timing(f"{name}: it waited from asking until the data", wait_ms, least_wait_ms, learnt_by_ms,
                  neighbours=run.get("neighbours"), unit="ms", digits=1,
                  message=f"{name}: waited {wait_ms:.1f} of {asked_to_ready:.1f} ms, expected {least_wait_ms:.1f} .."
                  f" {learnt_by_ms:.1f}", slower="above")
    # The copy is tiny next to the wait: nearer none than the whole wait (less any time the thread sat queued).
    claims.nearer(f"{name}: copy (ms, queued time taken off)", max(run["copy_ms"] - queued, 0.0), 0.0, wait_ms,
                  spec=".2f")


def sleepers_and_busy_loop_claims(claims, runs, cost_per_eagain_us):
    """Blocking and multiplexing sleep through the wait; the busy loop wants a CPU for all of it, asking."""
    blocking_run, nonblocking_run = runs["blocking"], runs["nonblocking"]
    # Blocking and multiplexing sleep through the wait: their CPU is nearer none than the whole wait.
    for run in (blocking_run, runs["multiplexing"]):
        claims.nearer(f"{run['model']}: CPU burnt while asleep (ms)", run["cpu_ms"], 0.0, run["wait_ms"], spec=".2f")
    # The busy loop never sleeps: it wants a CPU for the whole wait (running, or queued for one), not a sleeper's
    # next to nothing, and nearer that than the blocked recv()'s CPU.
    demand = nonblocking_run["cpu_ms"] + (nonblocking_run["queued_ms"] or 0.0)
    claims.nearer("busy loop: CPU wanted during the wait (ms)", demand, nonblocking_run["wait_ms"], 0.0, spec=".2f")
    claims.nearer("busy loop against a blocked recv(): CPU (ms)", demand, nonblocking_run["wait_ms"],
                  blocking_run["cpu_ms"], spec=".2f")
    # It spent that CPU asking: one EAGAIN costs what this run timed (cost_per_eagain_us), so the CPU it burnt
    # predicts how many it heard; the opposite is a loop that asked once. The two lie orders of magnitude apart,
    # and a turn's cost moves with the process's heap and caches, so they are judged on a log scale.
    calls = nonblocking_run["notes"]["wasted_calls"]
    predicted_calls = nonblocking_run["cpu_ms"] * 1000 / cost_per_eagain_us
    claims.nearer(f"busy loop: log of the {calls:,} calls that heard EAGAIN against {predicted_calls:,.0f}"
                  f" predicted at {cost_per_eagain_us:.2f} µs each, or 1", math.log(max(calls, 1)),
                  math.log(predicted_calls), 0.0, spec=".2f")


def multiplexing_claims(claims, multiplexing_run, by_mechanism, peers, switch_ms):
    """One thread served every peer in about one delay: its waits end when the last send has returned, plus the
    same allowance as the models'."""
    served = len(multiplexing_run["sent_ms"])
    claims.check("multiplexing: one thread served every peer", served == peers, f"{served} of {peers} peers sent", "",
                 f"multiplexing: {served} peers sent, not the {peers} asked for")
    for name, run in by_mechanism.items():
        bound_ms = run["last_delivered_ms"] + (run["queued_ms"] or 0.0) + switch_ms
        claims.check(f"{name}: all {peers} waits over once the last peer's send returned", run["wait_ms"] <= bound_ms,
                     f"{run['wait_ms']:.1f} ms", f"(-∞, {bound_ms:.1f}] ms",
                     f"{name}: waited {run['wait_ms']:.1f} ms; the last peer's send returned at"
                     f" {run['last_delivered_ms']:.1f}, bound {bound_ms:.1f}")


def signal_claims(claims, signal_run, switch_ms):
    """The signal came after the peer's send, and the application kept working until then, burning next to nothing
    on IO."""
    sent_ms = signal_run["sent_ms"][0]
    go_ms = sent_ms - signal_run["last_sent_ms"]  # "go" on the trace's clock (one peer)
    signal_by_ms = go_ms + signal_run["last_delivered_ms"] + (signal_run["queued_ms"] or 0.0) + switch_ms
    signal_ms = signal_run["notes"]["signal_ms"]
    claims.timing("signal-driven: SIGIO came after the peer's send, and soon", signal_ms, sent_ms, signal_by_ms,
                  neighbours=signal_run.get("neighbours"), unit="ms", digits=1,
                  message=f"signal at {signal_ms:.1f} ms, the peer sent at {sent_ms:.1f} ms;"
                  f" bound {signal_by_ms:.1f} (its send returned, plus queued time and one switch interval)",
                  slower="above")
    slices = signal_run["notes"]["work_slices"]
    claims.check("signal-driven: the application worked while it waited", slices > 0, f"{slices} slices of work", "",
                 f"signal-driven: {slices} slices of work while waiting ({signal_run['notes']})")
    claims.nearer("signal-driven: CPU burnt on the IO (ms)", signal_run["cpu_ms"], 0.0, signal_run["wait_ms"],
                  spec=".2f")


def _check_scaling(claims, scaling_rows, limit):
    """select stops at FD_SETSIZE, and epoll's cost stays flat while select's grows, by more than this run's noise."""
    # select stops at FD_SETSIZE: a structural fact, glibc's 1024-bit fd_set.
    if limit is not None:
        said = limit["select_error"]
        claims.check(f"select() refuses descriptor {limit['fd']}", said == SELECT_ERROR, f"ValueError: {said}", "",
                     f"select() on descriptor {limit['fd']} said {said!r}, not {SELECT_ERROR!r}")
    # Noise decides here, so it is measured: the slopes' standard errors and the points' scatter about each line.
    slopes = {name: select_vs_epoll.slope_us_per_1000_fds(scaling_rows, name) for name in ("select", "epoll")}
    noise = {name: select_vs_epoll.fit_noise(scaling_rows, name) for name in ("select", "epoll")}
    slope_noise = 3 * (noise["select"][0] ** 2 + noise["epoll"][0] ** 2) ** 0.5
    apart = slopes["select"] - slopes["epoll"]
    claims.check("select's cost grows faster than epoll's", apart > slope_noise,
                 f"{apart:.2f} µs per 1000 fds steeper", f"({slope_noise:.2f}, ∞) µs, 3 standard errors",
                 f"select's slope {slopes['select']:.2f} µs per 1000 fds is not above epoll's {slopes['epoll']:.2f}"
                 f" by more than 3 standard errors ({slope_noise:.2f})")
    largest = scaling_rows[-1]
    select_top = max((row for row in scaling_rows if row["select_us"] is not None), key=lambda row: row["fds"])
    cost_noise = 3 * (noise["select"][1] ** 2 + noise["epoll"][1] ** 2) ** 0.5
    below = select_top["select_us"] - largest["epoll_us"]
    claims.check(f"epoll at {largest['fds']:,} fds costs less than select at {select_top['fds']:,}",
                 below > cost_noise, f"{below:.2f} µs less", f"({cost_noise:.2f}, ∞) µs, 3 x the scatter",
                 f"epoll at {largest['fds']} fds ({largest['epoll_us']:.2f} µs) is not below select at"
                 f" {select_top['fds']} ({select_top['select_us']:.2f} µs) by more than 3 x the scatter"
                 f" ({cost_noise:.2f} µs)")
