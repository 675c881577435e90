"""Lesson 04's proof: its parameters checked, its results written, its closing claims checked one per line.

How late a thread may learn of data once the peer's send() has returned (over loopback the data is in our
buffer by then): the time it waited for a CPU, which the kernel counts for us (queued, measured in each run),
plus, in this process, one switch interval: a thread that wants the GIL (the emulated kernel's, or the main
thread that runs a signal handler) gets it within sys.getswitchinterval(). That is the interpreter's rule, not
a figure tuned here. Claims between two predictions are judged as lessons 03 and 05 judge them: the
measurement must sit nearer the claim's prediction than the opposite one.
"""

import math
import sys

from iolab import params
from iolab.claims import Claims

from . import multiplexing, select_vs_epoll

SELECT_ERROR = "filedescriptor out of range in select()"  # CPython's words for a descriptor past FD_SETSIZE


def check_parameters(delay_ms, payload_bytes, peers, mechanism, fd_counts, repetitions, quick, solutions,
                     results_path):
    """The notebook's parameters, each refused by name; returns (delay_ms, repetitions, fd_counts) for this run.

    In quick mode the peer waits at most 100 ms, each count is timed at most 100 times and counts stop at 4,000.
    """
    quick = params.check_common(quick, solutions, results_path)
    params.check_range("delay_ms", delay_ms, 10, 5000)
    params.check_range("payload_bytes", payload_bytes, 1, 32768)  # one loopback segment, so one recv() gets it all
    params.check_range("peers", peers, 1, 64)
    params.check_choice("mechanism", mechanism, list(multiplexing.WAITERS))
    params.check_range("repetitions", repetitions, 10, 10000)
    if not isinstance(fd_counts, list) or len(fd_counts) < 2:
        raise params.ParameterError(f"parameter fd_counts={fd_counts!r} must be a list of at least two counts")
    for index, count in enumerate(fd_counts):
        params.check_range(f"fd_counts[{index}]", count, 1, select_vs_epoll.MOST_FILES)
    if quick:
        delay_ms, repetitions = min(delay_ms, 100), min(repetitions, 100)
        fd_counts = [count for count in fd_counts if count <= 4000]
    return delay_ms, repetitions, fd_counts


def results(model_runs, scaling_rows, exercises):
    """This run's figures as plain data, for the results file."""
    return {
        "models": {name: run.figures() if run else None for name, run in model_runs.items()},
        "select_vs_epoll": [{"fds": row["fds"], "select_us": row["select_us"], "epoll_us": row["epoll_us"]}
                            for row in scaling_rows],
        "exercises": exercises,
    }


def write_results(results, results_path):
    """Write `results` as JSON to `results_path`, when the run was given one."""
    params.write_results(results_path, results)


def _check_model(claims, name, run, delay_ms, switch_ms):
    """The five claims every model's run makes about its own trace."""
    # Times are from "go". The peer never sends before its delay is up; it may send later, when a busy machine
    # keeps it off a CPU. The data cannot be in our buffer before the delay either.
    claims.check(f"{name}: the peer sent no sooner than its delay", run.last_sent_ms >= 0.999 * delay_ms,
                 f"{run.last_sent_ms:.1f} ms", f"[{0.999 * delay_ms:.1f}, ∞) ms",
                 f"{name}: the peer sent at {run.last_sent_ms:.1f} ms, before its delay")
    read_ms = run.ready_ms + run.copy_ms
    claims.check(f"{name}: the data was read no sooner than the delay", read_ms >= 0.999 * delay_ms,
                 f"{read_ms:.1f} ms", f"[{0.999 * delay_ms:.1f}, ∞) ms",
                 f"{name}: the data was read before the peer's delay was up")
    queued = run.queued_ms or 0.0
    late_ms = queued + switch_ms
    learnt_by_ms = run.last_delivered_ms + late_ms
    if name == "nonblocking":
        # A spinning thread shares its CPU with everything else that runs, in ways no counter of ours always
        # sees; what it never does is hear "nothing yet" once the data is there. How late it learnt is the
        # scheduler's doing, so that is checked instead of when its wait ended.
        last_eagain_ms = max((event.t_ms for event in run.events if event.kind == "eagain"), default=0.0)
        bound_ms = max(run.sent_ms) + late_ms + (run.last_delivered_ms - run.last_sent_ms)
        claims.check("nonblocking: no EAGAIN once the data was there", last_eagain_ms <= bound_ms,
                     f"last at {last_eagain_ms:.1f} ms", f"(-∞, {bound_ms:.1f}] ms",
                     f"nonblocking: heard EAGAIN at {last_eagain_ms:.1f} ms, after the data was sent at"
                     f" {max(run.sent_ms):.1f} ms (allowed {late_ms:.1f} ms late: {queued:.1f} queued +"
                     f" {switch_ms:.0f} switch interval)")
        learnt_by_ms = math.inf
    else:
        claims.check(f"{name}: the wait ended once the data was sent", run.ready_ms <= learnt_by_ms,
                     f"{run.ready_ms:.1f} ms", f"(-∞, {learnt_by_ms:.1f}] ms",
                     f"{name}: the peer's send returned at {run.last_delivered_ms:.1f} ms after go, and the wait"
                     f" ended at {run.ready_ms:.1f} ms, over {learnt_by_ms:.1f} ({queued:.1f} ms queued +"
                     f" {switch_ms:.0f} ms switch interval)")
    # The application waited all the way from asking until then, except while it ran between waits (multiplexing
    # reads between its sleeps): each such moment it was on a CPU (cpu_ms) or queued for one, both measured.
    asked_to_ready = run.ready_ms - run.asked_ms
    least_wait_ms = asked_to_ready - run.cpu_ms - queued - 0.001  # 1 µs: the clocks' rounding
    claims.check(f"{name}: it waited from asking until the data", least_wait_ms <= run.wait_ms <= learnt_by_ms,
                 f"{run.wait_ms:.1f} ms", f"[{least_wait_ms:.1f}, {learnt_by_ms:.1f}] ms",
                 f"{name}: waited {run.wait_ms:.1f} of {asked_to_ready:.1f} ms, expected {least_wait_ms:.1f} .."
                 f" {learnt_by_ms:.1f}")
    # The copy is tiny next to the wait: nearer none than the whole wait (less any time the thread sat queued).
    claims.nearer(f"{name}: copy (ms, queued time taken off)", max(run.copy_ms - queued, 0.0), 0.0, run.wait_ms, spec=".2f")


def check_claims(model_runs, by_mechanism, scaling_rows, limit, cost_per_eagain_us, delay_ms, peers):
    """Check the lesson's claims on this run, print one line each, and raise ClaimsFailed naming any that failed.

    `model_runs` maps each model to its ModelRun (None for one that could not run here), `by_mechanism` each
    multiplexing call to its run, `limit` is what select() said past FD_SETSIZE (None if not tried).
    """
    claims = Claims("04-io-models")
    switch_ms = sys.getswitchinterval() * 1000
    for name, run in model_runs.items():
        if run is not None:
            _check_model(claims, name, run, delay_ms, switch_ms)
    blocking_run, nonblocking_run = model_runs["blocking"], model_runs["nonblocking"]
    multiplexing_run, signal_run, async_run = model_runs["multiplexing"], model_runs["signal"], model_runs["async"]
    # Blocking and multiplexing sleep through the wait: their CPU is nearer none than the whole wait.
    for run in (blocking_run, multiplexing_run):
        claims.nearer(f"{run.model}: CPU burnt while asleep (ms)", run.cpu_ms, 0.0, run.wait_ms, spec=".2f")
    # The busy loop never sleeps: it wants a CPU for the whole wait (running, or queued for one), not a sleeper's
    # next to nothing, and nearer that than the blocked recv()'s CPU.
    demand = nonblocking_run.cpu_ms + (nonblocking_run.queued_ms or 0.0)
    claims.nearer("busy loop: CPU wanted during the wait (ms)", demand, nonblocking_run.wait_ms, 0.0, spec=".2f")
    claims.nearer("busy loop against a blocked recv(): CPU (ms)", demand, nonblocking_run.wait_ms,
                  blocking_run.cpu_ms, spec=".2f")
    # It spent that CPU asking: one EAGAIN costs what this run timed (cost_per_eagain_us), so the CPU it burnt
    # predicts how many it heard; the opposite is a loop that asked once. The two lie orders of magnitude apart,
    # and a turn's cost moves with the process's heap and caches, so they are judged on a log scale.
    calls = nonblocking_run.notes["wasted_calls"]
    predicted_calls = nonblocking_run.cpu_ms * 1000 / cost_per_eagain_us
    claims.nearer(f"busy loop: log of the {calls:,} calls that heard EAGAIN against {predicted_calls:,.0f}"
           f" predicted at {cost_per_eagain_us:.2f} µs each, or 1", math.log(max(calls, 1)), math.log(predicted_calls),
           0.0, spec=".2f")
    # One thread served every peer in about one delay: its waits end when the last send has returned, plus the
    # same allowance as above.
    served = len(multiplexing_run.sent_ms)
    claims.check("multiplexing: one thread served every peer", served == peers, f"{served} of {peers} peers sent", "",
                 f"multiplexing: {served} peers sent, not the {peers} asked for")
    for name, run in by_mechanism.items():
        bound_ms = run.last_delivered_ms + (run.queued_ms or 0.0) + switch_ms
        claims.check(f"{name}: all {peers} waits over once the last peer's send returned", run.wait_ms <= bound_ms,
                     f"{run.wait_ms:.1f} ms", f"(-∞, {bound_ms:.1f}] ms",
                     f"{name}: waited {run.wait_ms:.1f} ms; the last peer's send returned at"
                     f" {run.last_delivered_ms:.1f}, bound {bound_ms:.1f}")
    # The signal came after the peer's send, and the application kept working until then, burning next to
    # nothing on IO.
    if signal_run is not None:
        go_ms = signal_run.sent_ms[0] - signal_run.last_sent_ms  # "go" on the trace's clock (one peer)
        signal_by_ms = go_ms + signal_run.last_delivered_ms + (signal_run.queued_ms or 0.0) + switch_ms
        signal_ms = signal_run.notes["signal_ms"]
        claims.check("signal-driven: SIGIO came after the peer's send, and soon",
                     signal_run.sent_ms[0] <= signal_ms <= signal_by_ms, f"{signal_ms:.1f} ms",
                     f"[{signal_run.sent_ms[0]:.1f}, {signal_by_ms:.1f}] ms",
                     f"signal at {signal_ms:.1f} ms, the peer sent at {signal_run.sent_ms[0]:.1f} ms;"
                     f" bound {signal_by_ms:.1f} (its send returned, plus queued time and one switch interval)")
        slices = signal_run.notes["work_slices"]
        claims.check("signal-driven: the application worked while it waited", slices > 0, f"{slices} slices of work", "",
                     f"signal-driven: {slices} slices of work while waiting ({signal_run.notes})")
        claims.nearer("signal-driven: CPU burnt on the IO (ms)", signal_run.cpu_ms, 0.0, signal_run.wait_ms, spec=".2f")
    # Completion: one call, and the application worked through both phases.
    slices = async_run.notes["work_slices"]
    claims.check("completion: one call, and work through both phases", async_run.calls == 1 and slices > 0,
                 f"{async_run.calls} call(s), {slices} slices of work", "",
                 f"completion: {async_run.calls} call(s) and {slices} slices of work, not 1 call and some work")
    claims.nearer("completion: CPU burnt on the IO (ms)", async_run.cpu_ms, 0.0, async_run.wait_ms, spec=".2f")
    _check_scaling(claims, scaling_rows, limit)
    return claims.report()


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
