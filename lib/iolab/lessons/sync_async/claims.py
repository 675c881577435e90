"""Lesson 02's proof, out of the student's way: its parameters checked, its figures written, its claims checked.

The notebook calls one line for each; the claims print one line each (iolab.claims) and fail with the values
that broke them.
"""


from iolab import load, params
from iolab.claims import Claims

from . import experiment

HEADLINE = ("rps", "mean_ms", "p50_ms", "p99_ms", "errors", "ab_time_per_request_ms", "in_flight", "utilization",
            "demand_ms", "queued_ms", "client_demand_ms")


def check_parameters(quick, solutions, results_path, requests, concurrency, delay_ms, client, run_ab, run_sweep,
                     sweep_delay_ms):
    """Refuse a parameter out of range, naming it; returns (quick, requests, concurrency, delay_ms) to run."""
    quick = params.check_common(quick, solutions, results_path)
    params.check_range("requests", requests, 1, 2000)
    params.check_range("concurrency", concurrency, 1, 200)
    params.check_range("delay_ms", delay_ms, 10, 5000)
    params.check_choice("client", client, load.CLIENTS)
    params.check_flag("run_ab", run_ab)
    params.check_flag("run_sweep", run_sweep)
    params.check_range("sweep_delay_ms", sweep_delay_ms, 5, 200)
    if requests < concurrency:
        raise params.ParameterError(f"parameter requests={requests} must be at least concurrency={concurrency}")
    if quick:
        requests, concurrency, delay_ms = min(requests, 10), min(concurrency, 5), min(delay_ms, 400)
    return quick, requests, concurrency, delay_ms


def write_results(results_path, sync_measured, async_measured, ceilings, sweeps, parameters, ab_figures, knocked,
                  exercises):
    """The run's figures as a dict, written as JSON to `results_path` when it is set."""
    ceiling_sync, ceiling_async = ceilings
    results = {
        "sync": sync_measured.summary.as_dict(*HEADLINE),
        "async": async_measured.summary.as_dict(*HEADLINE),
        "bound_rps": ceiling_async,
        "bound_sync_rps": ceiling_sync,
        "prediction": {m.mode: m.row() for m in (sync_measured, async_measured)},
        "sweep": {
            s.mode: {"users": s.users, "rps": [p.summary.rps for p in s.points], "knee_predicted": s.knee_predicted(),
                     "knee_measured": s.knee_measured()} for s in sweeps
        },
        "parameters": parameters,
        "ab": ab_figures,
        "backlog": {"knocks": len(knocked.connected_ms), "most_waiting": knocked.most_waiting,
                    "waiting_after": knocked.waiting_after, "answered_ms": knocked.answered_ms},
        "exercises": exercises,
    }
    params.write_results(results_path, results, default=str)
    return results


def claims(sync_measured, async_measured, knocked, sweeps, concurrency):
    """The lesson's claims on this run, checked (a Claims, not yet reported), and the lines printed beside them."""
    said = Claims("02 Synchronous vs asynchronous")
    notes = []
    sync, asynchronous = sync_measured.summary, async_measured.summary
    said.check("no request failed", sync.errors == 0 and asynchronous.errors == 0,
               f"{sync.errors} errors blocking, {asynchronous.errors} non-blocking",
               message=str((sync.error_kinds, asynchronous.error_kinds)))
    # 1. Both runs lie within the asymptotic bounds computed from the CPU they measured.
    for m in (sync_measured, async_measured):
        p = m.prediction
        said.check(f"{m.mode}: throughput within the bounds from D = {m.summary.demand_ms:.3f} ms", m.in_band,
                   f"{m.summary.rps:.3f} req/s", f"[{p.low_rps:.3f}, {p.high_rps:.3f}] req/s",
                   f"{m.mode}: {m.summary.rps:.3f} req/s is outside the bounds {p.low_rps:.3f} .. {p.high_rps:.3f}"
                   f" that D = {m.summary.demand_ms:.3f} ms gives")
        # 2. The median request took at least its wait and the server's CPU, and at most its wait for all the others.
        # (Not every request: the event loop does not take ready requests strictly in order, so one can be passed twice.)
        fastest_ms, slowest_ms = experiment.percentile_band_ms(m)
        said.check(f"{m.mode}: the median request between its own wait and the wait for everyone",
                   0.99 * fastest_ms <= m.summary.p50_ms <= 1.02 * slowest_ms + 5, f"{m.summary.p50_ms:.1f} ms",
                   f"[{fastest_ms:.1f}, {slowest_ms:.1f}] ms",
                   f"{m.mode}: median {m.summary.p50_ms:.1f} ms, outside {fastest_ms:.1f} .. {slowest_ms:.1f}")
    # 3. The listen backlog: every knock connected while A slept, and waited in the backlog until A's wait ended.
    said.check("every connect() returned while A slept", knocked.connected_ms[-1] < knocked.answered_ms,
               f"the last at {knocked.connected_ms[-1]:.0f} ms", f"[0, {knocked.answered_ms:.0f}) ms, before A answered",
               str((knocked.connected_ms, knocked.answered_ms)))
    said.check("the backlog held every knock until A woke, then none",
               knocked.most_waiting == len(knocked.connected_ms) and knocked.waiting_after == 0,
               f"{knocked.most_waiting} of {len(knocked.connected_ms)} waiting at most, {knocked.waiting_after} after A woke",
               "",
               str([(round(reading.at_ms), reading.waiting) for reading in knocked.readings]))
    # 4. Requests in flight against ab's assumption. ab's first line is N / X; the mean latency is L / X with L <= N, so
    # ab's line can only overstate it. The blocking server sends its answers one wait apart, and once the last request
    # is sent its users leave one by one: over n requests, L is at most N - N (N - 1) / (2 n), short of what ab assumes.
    for m in (sync_measured, async_measured):
        s = m.summary
        said.check(f"{m.mode}: requests in flight, L, at most the users", s.in_flight <= 1.001 * s.concurrency,
                   f"{s.in_flight:.2f}", f"[0, {1.001 * s.concurrency:.2f}]", str((m.mode, s.in_flight)))
        said.check(f"{m.mode}: ab's time per request at least the mean latency",
                   s.ab_time_per_request_ms >= 0.99 * s.mean_ms, f"{s.ab_time_per_request_ms:.1f} ms",
                   f"[{0.99 * s.mean_ms:.1f}, ∞) ms", str((m.mode, s.ab_time_per_request_ms)))
    most_in_flight = concurrency - concurrency * (concurrency - 1) / (2 * sync.completed)
    said.check("blocking: L falls short of the users as they leave one wait apart",
               sync.in_flight <= most_in_flight + 0.02 * concurrency, f"{sync.in_flight:.2f}",
               f"[0, {most_in_flight + 0.02 * concurrency:.2f}]", str((sync.in_flight, most_in_flight)))
    simulated = {m.mode: experiment.simulated(m) for m in (sync_measured, async_measured)}
    in_flight_share = {mode: sum(run.latencies_s) / run.duration_s / concurrency for mode, run in simulated.items()}
    # 5. L, the mean and the percentiles against users in step are printed, not checked: with many users or short
    # waits the non-blocking run's users drift out of step, the blocking server takes waiting users in an order of its
    # own (with few requests per user that moves the mean too), and a busy machine delays some requests more than
    # others, so noise and not only the model decides how close they come.
    for m in (sync_measured, async_measured):
        notes.append(
            f"{m.mode}: L / concurrency {m.summary.in_flight / concurrency:.3f}, users in step"
            f" {in_flight_share[m.mode]:.3f}; {m.summary.rps:.3f} req/s, {m.off_in_step:+.1%} against users in step"
            f" ({m.prediction.in_step_rps:.3f}); bounds {m.prediction.low_rps:.3f} .. {m.prediction.high_rps:.3f};"
            f" median {m.summary.p50_ms:.0f} ms and 99th percentile {m.summary.p99_ms:.0f} ms, users in step would see"
            f" {simulated[m.mode].percentile_s(0.5) * 1000:.0f} and {simulated[m.mode].percentile_s(0.99) * 1000:.0f} ms.")
    if sweeps:
        sweep_claims(said, notes, *sweeps)
    else:
        said.skip("the sweep", "run_sweep is False")
    return said, notes


def sweep_claims(said, notes, sync_sweep, async_sweep):
    """6. The sweep: every point within its bounds; the blocking handler flat; the non-blocking one, past its knee,
    bound by the CPU."""
    for s in (sync_sweep, async_sweep):
        outside = [point.row() for point in s.points if not (point.summary.errors == 0 and point.in_band)]
        said.check(f"sweep, {s.mode}: every run without errors and within its bounds", not outside,
                   f"{len(s.points) - len(outside)} of {len(s.points)} runs", message="; ".join(map(str, outside)))
    # From two users on, the blocking server always has the next request waiting (a lone user also waits for its
    # client): its thread is asleep, running or waiting for a CPU all the time, X (Z + D + queued) = 1, whatever N,
    # but before the first request arrives and after the last is answered. Per request it can stand idle at most as
    # long as the lone user's runs of this sweep left it idle per request (their most: they ran at its start, middle
    # and end, as the machine's other programs came and went), once the client's own first send is counted. (It can
    # come out a little over 1: D and the wait for a CPU count what the server did after the last answer.)
    lone_idle_ms = [1000 * sync_sweep.idle_per_request_s(lone) for lone in sync_sweep.lone_runs()]
    held_rows, broken = [], []
    for point in sync_sweep.points[1:]:
        held, least = sync_sweep.held(point), sync_sweep.least_held(point)
        held_rows.append(f"{point.summary.concurrency}: {held:.1%} (least {least:.1%})")
        window = experiment.measured_window_s(point.result) / point.summary.duration_s
        if not least <= held <= (1 + experiment.TOLERANCE) * window:
            broken.append(
                f"blocking, {point.summary.concurrency} users: the thread was held {held:.1%}, not within {least:.1%} .."
                f" {(1 + experiment.TOLERANCE) * window:.1%} (the lone user's runs left it idle"
                f" {', '.join(f'{ms:.2f}' for ms in lone_idle_ms)} ms per request)")
    said.check("sweep, blocking: its one thread held all the time from two users on", not broken,
               f"{len(held_rows) - len(broken)} of {len(held_rows)} runs", message="; ".join(broken))
    notes.append(f"blocking sweep, the thread held at each number of users: {', '.join(held_rows)}; the lone user's"
                 f" runs left it idle {', '.join(f'{ms:.2f}' for ms in lone_idle_ms)} ms per request.")
    # Past twice the knee the CPU is the limit, unless connection attempts were dropped (a full listen backlog): those
    # wait a second for TCP's retry, and the run is then bound by TCP, not the CPU. Such runs are left out here. The
    # server's thread is at least as busy as the pessimistic bound leaves it (users in step would keep it about 2/3
    # busy at twice the knee), and the curve bends between the knees of the bounds that every run's D draws.
    cpu_bound = async_sweep.cpu_bound_points()
    if cpu_bound:
        busiest_bound = cpu_bound[-1]
        busy, least_busy = async_sweep.thread_busy(busiest_bound), async_sweep.least_thread_busy(busiest_bound)
        users = busiest_bound.summary.concurrency
        said.check(f"sweep, non-blocking at {users} users: the server's thread busy", busy >= least_busy,
                   f"{busy:.1%}", f"[{least_busy:.1%}, ∞)",
                   str((f"{users} users: the server's thread was busy {busy:.1%}, under the {least_busy:.1%} the"
                        " pessimistic bound leaves it", busiest_bound.row())))
        bent, predicted = async_sweep.knee_measured(), async_sweep.knee_predicted()
        earliest, latest = async_sweep.knee_bounds()
        said.check(f"sweep, non-blocking: the curve bends where the bounds from D allow (D predicts {predicted:.0f})",
                   earliest <= bent <= latest, f"{bent:.1f} users", f"[{earliest:.1f}, {latest:.1f}] users",
                   f"the curve bends at {bent:.1f} users, outside the {earliest:.1f} .. {latest:.1f} the bounds from D"
                   f" allow; D predicted {predicted:.1f}")
    else:
        dropped = sum(p.summary.listen_drops for p in async_sweep.points)
        said.skip("sweep, non-blocking: bound by the CPU past its knee",
                  f"the sweep stopped at {async_sweep.users[-1]} users (twice the knee is"
                  f" {2 * async_sweep.knee_predicted():.0f}), or dropped connection attempts past it ({dropped} in all)")
        notes.append(f"The server's thread was busy or waiting for a CPU"
                     f" {async_sweep.thread_busy(async_sweep.busiest):.0%} of the non-blocking sweep's busiest run.")
    notes.append(f"sweep: knee predicted from D at {async_sweep.knee_predicted():.0f} users, measured curve bends at"
                 f" {async_sweep.knee_measured():.0f}.")


def check_claims(sync_measured, async_measured, knocked, sweeps, concurrency):
    """Print the figures beside the claims, then every claim on a line of its own; raises ClaimsFailed if one broke."""
    said, notes = claims(sync_measured, async_measured, knocked, sweeps, concurrency)
    print("\n".join(notes))
    return said.report()
