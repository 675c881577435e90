"""Lesson 02's results file and its closing claims, one line each."""

from iolab.claims import Claims, others_explain

from . import experiment

LESSON = "02 Synchronous vs asynchronous"
HEADLINE = ("rps", "mean_ms", "p50_ms", "p99_ms", "errors", "ab_time_per_request_ms", "in_flight", "utilization",
            "demand_ms", "queued_ms", "client_demand_ms")
KEPT = (*HEADLINE, "error_kinds", "concurrency", "completed")  # besides the headline, what the claims read


def results(plan, *, sync_measured, async_measured, ceilings, sweeps, ab_figures, knocked, exercises):
    """The lesson's results, as the results file keeps them: both handlers' runs, the backlog, the sweep."""
    ceiling_sync, ceiling_async = ceilings
    return {
        "sync": sync_measured.summary.as_dict(*KEPT),
        "async": async_measured.summary.as_dict(*KEPT),
        "bound_rps": ceiling_async,
        "bound_sync_rps": ceiling_sync,
        "prediction": {m.mode: prediction_figures(m) for m in (sync_measured, async_measured)},
        "sweep": {s.mode: sweep_figures(s) for s in sweeps},
        "parameters": {"requests": plan.requests, "concurrency": plan.concurrency, "delay_ms": plan.delay_ms,
                       "client": plan.client, "sweep_delay_ms": plan.sweep_delay_ms},
        "ab": ab_figures,
        "backlog": {"knocks": len(knocked.connected_ms), "most_waiting": knocked.most_waiting,
                    "waiting_after": knocked.waiting_after, "answered_ms": knocked.answered_ms,
                    "connected_ms": knocked.connected_ms,
                    "readings": [[reading.at_ms, reading.waiting] for reading in knocked.readings]},
        "exercises": exercises,
    }


def prediction_figures(m):
    """One run's prediction (Measured.row), the latencies theory allows any request, and users in step's figures."""
    fastest_ms, slowest_ms = experiment.percentile_band_ms(m)
    in_step = experiment.simulated(m)
    return m.row() | {"fastest_ms": fastest_ms, "slowest_ms": slowest_ms,
                      "in_step_in_flight": sum(in_step.latencies_s) / in_step.duration_s,
                      "in_step_p50_ms": in_step.percentile_s(0.5) * 1000,
                      "in_step_p99_ms": in_step.percentile_s(0.99) * 1000}


def sweep_figures(s):
    """One handler's sweep: each run's row, the knees, and what its claims hold each run to (the blocking handler's
    thread held, the non-blocking one's busiest run bound by the CPU)."""
    figures = {"users": s.users, "rps": [p.summary.rps for p in s.points], "knee_predicted": s.knee_predicted(),
               "knee_measured": s.knee_measured(), "points": [point.row() for point in s.points]}
    if s.mode == "sync":
        return figures | {
            "lone_idle_ms": [1000 * s.idle_per_request_s(lone) for lone in s.lone_runs()],
            "held": [{"users": point.summary.concurrency, "held": s.held(point), "least": s.least_held(point),
                      "window": experiment.measured_window_s(point.result) / point.summary.duration_s}
                     for point in s.points[1:]]}
    cpu_bound = s.cpu_bound_points()
    busiest = cpu_bound[-1] if cpu_bound else None
    return figures | {
        "knee_bounds": list(s.knee_bounds()), "listen_drops": sum(p.summary.listen_drops for p in s.points),
        "busiest_thread_busy": s.thread_busy(s.busiest),
        "cpu_bound": {"users": busiest.summary.concurrency, "busy": s.thread_busy(busiest),
                      "least_busy": s.least_thread_busy(busiest), "row": busiest.row()} if busiest else None}


def check_claims(found):
    """Print the figures beside the claims, then every claim on a line of its own; raises ClaimsFailed if one broke."""
    said, notes = claims_of(found)
    return said.report(notes)


def claims_of(found):
    """The lesson's claims on this run (`found`, the results), checked (a Claims, not yet reported), and the lines
    printed beside them."""
    said = Claims(LESSON)
    notes = []
    runs = [(found[mode], found["prediction"][mode]) for mode in ("sync", "async")]
    bounds_claims(said, found, runs)
    backlog_claims(said, found["backlog"])
    in_flight_claims(said, found, runs)
    concurrency = found["parameters"]["concurrency"]
    # 5. L, the mean and the percentiles against users in step are printed, not checked: with many users or short
    # waits the non-blocking run's users drift out of step, the blocking server takes waiting users in an order of its
    # own (with few requests per user that moves the mean too), and a busy machine delays some requests more than
    # others, so noise and not only the model decides how close they come.
    for s, p in runs:
        notes.append(
            f"{p['mode']}: L / concurrency {s['in_flight'] / concurrency:.3f}, users in step"
            f" {p['in_step_in_flight'] / concurrency:.3f}; {s['rps']:.3f} req/s, {p['off_in_step']:+.1%} against users"
            f" in step ({p['in_step_rps']:.3f}); bounds {p['low_rps']:.3f} .. {p['high_rps']:.3f};"
            f" median {s['p50_ms']:.0f} ms and 99th percentile {s['p99_ms']:.0f} ms, users in step would see"
            f" {p['in_step_p50_ms']:.0f} and {p['in_step_p99_ms']:.0f} ms.")
    if found["sweep"]:
        sweep_claims(said, notes, found["sweep"]["sync"], found["sweep"]["async"])
    else:
        said.skip("the sweep", "run_sweep is False")
    return said, notes


def bounds_claims(said, found, runs):
    """No request failed; 1. both runs within the bounds from the CPU they measured; 2. the median request between its
    own wait and the wait for everyone."""
    sync, asynchronous = found["sync"], found["async"]
    said.check("no request failed", sync["errors"] == 0 and asynchronous["errors"] == 0,
               f"{sync['errors']} errors blocking, {asynchronous['errors']} non-blocking",
               message=str((sync["error_kinds"], asynchronous["error_kinds"])))
    for s, p in runs:
        mode = p["mode"]
        # The bounds widened by the measuring's own error (experiment.TOLERANCE), as Measured.in_band reads them.
        said.timing(f"{mode}: throughput within the bounds from D = {s['demand_ms']:.3f} ms", s["rps"],
                    p["low_rps"] * (1 - experiment.TOLERANCE), p["high_rps"] * (1 + experiment.TOLERANCE),
                    neighbours=p.get("neighbours"), unit="req/s", digits=3,
                    message=f"{mode}: {s['rps']:.3f} req/s is outside the bounds"
                            f" {p['low_rps']:.3f} .. {p['high_rps']:.3f} that D = {s['demand_ms']:.3f} ms gives",
                    slower="below")
        # 2. The median request took at least its wait and the server's CPU, and at most its wait for all the others.
        # (Not every request: the event loop does not take ready requests strictly in order, so one can be passed twice.)
        fastest_ms, slowest_ms = p["fastest_ms"], p["slowest_ms"]
        said.check(f"{mode}: the median request between its own wait and the wait for everyone",
                   0.99 * fastest_ms <= s["p50_ms"] <= 1.02 * slowest_ms + 5, f"{s['p50_ms']:.1f} ms",
                   f"[{fastest_ms:.1f}, {slowest_ms:.1f}] ms",
                   f"{mode}: median {s['p50_ms']:.1f} ms, outside {fastest_ms:.1f} .. {slowest_ms:.1f}")


def backlog_claims(said, knocked):
    """3. The listen backlog: every knock connected while A slept, and waited in the backlog until A's wait ended."""
    connected_ms, answered_ms = knocked["connected_ms"], knocked["answered_ms"]
    said.check("every connect() returned while A slept", connected_ms[-1] < answered_ms,
               f"the last at {connected_ms[-1]:.0f} ms", f"[0, {answered_ms:.0f}) ms, before A answered",
               str((connected_ms, answered_ms)))
    said.check("the backlog held every knock until A woke, then none",
               knocked["most_waiting"] == len(connected_ms) and knocked["waiting_after"] == 0,
               f"{knocked['most_waiting']} of {len(connected_ms)} waiting at most, {knocked['waiting_after']} after A"
               " woke", "",
               str([(round(at_ms), waiting) for at_ms, waiting in knocked["readings"]]))


def in_flight_claims(said, found, runs):
    """4. Requests in flight against ab's assumption. ab's first line is N / X; the mean latency is L / X with L <= N,
    so ab's line can only overstate it. The blocking server sends its answers one wait apart, and once the last request
    is sent its users leave one by one: over n requests, L is at most N - N (N - 1) / (2 n), short of what ab assumes."""
    for s, p in runs:
        mode = p["mode"]
        said.check(f"{mode}: requests in flight, L, at most the users", s["in_flight"] <= 1.001 * s["concurrency"],
                   f"{s['in_flight']:.2f}", f"[0, {1.001 * s['concurrency']:.2f}]", str((mode, s["in_flight"])))
        said.check(f"{mode}: ab's time per request at least the mean latency",
                   s["ab_time_per_request_ms"] >= 0.99 * s["mean_ms"], f"{s['ab_time_per_request_ms']:.1f} ms",
                   f"[{0.99 * s['mean_ms']:.1f}, ∞) ms", str((mode, s["ab_time_per_request_ms"])))
    sync, concurrency = found["sync"], found["parameters"]["concurrency"]
    most_in_flight = concurrency - concurrency * (concurrency - 1) / (2 * sync["completed"])
    said.check("blocking: L falls short of the users as they leave one wait apart",
               sync["in_flight"] <= most_in_flight + 0.02 * concurrency, f"{sync['in_flight']:.2f}",
               f"[0, {most_in_flight + 0.02 * concurrency:.2f}]", str((sync["in_flight"], most_in_flight)))


def sweep_claims(said, notes, sync_sweep, async_sweep):
    """6. The sweep: every point within its bounds; the blocking handler flat; the non-blocking one, past its knee,
    bound by the CPU."""
    for mode, s in (("sync", sync_sweep), ("async", async_sweep)):
        outside = [row for row in s["points"] if not (row["errors"] == 0 and row["in_band"])]
        claim = f"sweep, {mode}: every run without errors and within its bounds"
        measured = f"{len(s['points']) - len(outside)} of {len(s['points'])} runs"
        reasons = [excuse_of(row) for row in outside]
        if outside and all(reasons):  # each run outside was slowed by others, no more than they explain
            said.excused(claim, measured, "", "; ".join(f"{row['users']} users: {row['rps']:.1f} req/s, {why}"
                                                        for row, why in zip(outside, reasons)))
            continue
        said.check(claim, not outside, measured, message="; ".join(map(str, outside)))
    held_claims(said, notes, sync_sweep)
    cpu_bound_claims(said, notes, async_sweep)
    notes.append(f"sweep: knee predicted from D at {async_sweep['knee_predicted']:.0f} users, measured curve bends at"
                 f" {async_sweep['knee_measured']:.0f}.")


def excuse_of(row):
    """Why a sweep run outside its bounds is no verdict (others held the CPUs enough to slow it so), or ""."""
    if row["errors"]:
        return ""
    return others_explain((row.get("neighbours") or {}).get("others_share"), row["rps"],
                          row["low_rps"] * (1 - experiment.TOLERANCE), row["high_rps"] * (1 + experiment.TOLERANCE),
                          slower="below")


def held_claims(said, notes, sync_sweep):
    """The blocking sweep: its one thread held all the time from two users on."""
    # From two users on, the blocking server always has the next request waiting (a lone user also waits for its
    # client): its thread is asleep, running or waiting for a CPU all the time, X (Z + D + queued) = 1, whatever N,
    # but before the first request arrives and after the last is answered. Per request it can stand idle at most as
    # long as the lone user's runs of this sweep left it idle per request (their most: they ran at its start, middle
    # and end, as the machine's other programs came and went), once the client's own first send is counted. (It can
    # come out a little over 1: D and the wait for a CPU count what the server did after the last answer.)
    lone_idle_ms = sync_sweep["lone_idle_ms"]
    held_rows, broken = [], []
    for point in sync_sweep["held"]:
        users, held, least = point["users"], point["held"], point["least"]
        held_rows.append(f"{users}: {held:.1%} (least {least:.1%})")
        window = point["window"]
        if not least <= held <= (1 + experiment.TOLERANCE) * window:
            broken.append(
                f"blocking, {users} users: the thread was held {held:.1%}, not within {least:.1%} .."
                f" {(1 + experiment.TOLERANCE) * window:.1%} (the lone user's runs left it idle"
                f" {', '.join(f'{ms:.2f}' for ms in lone_idle_ms)} ms per request)")
    said.check("sweep, blocking: its one thread held all the time from two users on", not broken,
               f"{len(held_rows) - len(broken)} of {len(held_rows)} runs", message="; ".join(broken))
    notes.append(f"blocking sweep, the thread held at each number of users: {', '.join(held_rows)}; the lone user's"
                 f" runs left it idle {', '.join(f'{ms:.2f}' for ms in lone_idle_ms)} ms per request.")


def cpu_bound_claims(said, notes, async_sweep):
    """The non-blocking sweep past twice its knee: the server's thread busy, and the curve bending where D allows."""
    # Past twice the knee the CPU is the limit, unless connection attempts were dropped (a full listen backlog): those
    # wait a second for TCP's retry, and the run is then bound by TCP, not the CPU. Such runs are left out here. The
    # server's thread is at least as busy as the pessimistic bound leaves it (users in step would keep it about 2/3
    # busy at twice the knee), and the curve bends between the knees of the bounds that every run's D draws.
    busiest_bound = async_sweep["cpu_bound"]
    if busiest_bound:
        busy, least_busy, users = busiest_bound["busy"], busiest_bound["least_busy"], busiest_bound["users"]
        said.check(f"sweep, non-blocking at {users} users: the server's thread busy", busy >= least_busy,
                   f"{busy:.1%}", f"[{least_busy:.1%}, ∞)",
                   str((f"{users} users: the server's thread was busy {busy:.1%}, under the {least_busy:.1%} the"
                        " pessimistic bound leaves it", busiest_bound["row"])))
        bent, predicted = async_sweep["knee_measured"], async_sweep["knee_predicted"]
        earliest, latest = async_sweep["knee_bounds"]
        said.check(f"sweep, non-blocking: the curve bends where the bounds from D allow (D predicts {predicted:.0f})",
                   earliest <= bent <= latest, f"{bent:.1f} users", f"[{earliest:.1f}, {latest:.1f}] users",
                   f"the curve bends at {bent:.1f} users, outside the {earliest:.1f} .. {latest:.1f} the bounds from D"
                   f" allow; D predicted {predicted:.1f}")
    else:
        said.skip("sweep, non-blocking: bound by the CPU past its knee",
                  f"the sweep stopped at {async_sweep['users'][-1]} users (twice the knee is"
                  f" {2 * async_sweep['knee_predicted']:.0f}), or dropped connection attempts past it"
                  f" ({async_sweep['listen_drops']} in all)")
        notes.append(f"The server's thread was busy or waiting for a CPU"
                     f" {async_sweep['busiest_thread_busy']:.0%} of the non-blocking sweep's busiest run.")
