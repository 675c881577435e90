"""Lesson 09's results file and its closing claims, one line each."""

import math

from iolab import metrics
from iolab.claims import Claims

from . import open_closed, spectrum, stall_runs

LESSON = "09-measuring-right"
# The widest band, as a share of its middle, the open loop's mean is judged in: past it the run was too noisy to
# test the prediction, and the claim says so instead of passing.
OPEN_WIDEST = 0.5


def results(plan, *, stall_results, ab_runs, slow, errors, oc_points, heavy, exercises):
    """This run's figures, plain data: what the results file keeps and what check_claims checks.

    `errors` is (the lab client's metrics.Summary of the wrong path, wrk's POST figures on Tornado and on gevent + Bottle,
    each or the reason it did not run).
    The bounds are built here from the runs, with the functions the lesson's cells print them with.
    """
    open_run = stall_results["open loop"]
    past = max(oc_points, key=lambda point: point.load)
    # The server's queue is fed by the requests as they left the client: both the measured thirds and the queue fed
    # the same sends are read from the actual sends, so a client that kept its schedule late does not pass for a queue.
    sent = sorted(past.sent_points)
    first_third_ms, last_third_ms = open_closed.growth(sent, plan.point_s)
    fed_first_ms, fed_last_ms = open_closed.growth(open_closed.queue_fed(sent, past.service_s), plan.point_s)
    sent_noise_ms = open_closed.mean_noise_ms([ms for _, ms in sent])
    windows = spectrum.window_p99s(open_run.points, plan.duration_s, 4)
    have_ab = stall_runs.benchtools.missing_reason("ab")
    return {
        "cores": plan.cores,
        "stall": stall_figures(plan, stall_results),
        "ab": ab_figures(plan, ab_runs),
        "wrk_timeout": timeout_figures(slow),
        "errors_run": error_figures(errors),
        "open_vs_closed": [point.row() | {
            "open_errors": point.open.errors, "closed_errors": point.closed.errors,
            "band_open_ms": list(point.band_open_ms), "band_closed_ms": list(point.band_closed_ms),
            "noise_open_ms": point.noise_open_ms, "noise_closed_ms": point.noise_closed_ms,
            "neighbours_open": _as_dict(point.others_open), "neighbours_closed": _as_dict(point.others_closed)}
            for point in oc_points],
        "cpu_ms": plan.cpu_ms,
        "growth_past_1_over_D": {"load": past.load, "first_third_ms": first_third_ms, "last_third_ms": last_third_ms,
                                 "predicted_first_ms": fed_first_ms, "predicted_last_ms": fed_last_ms,
                                 "service_ms": past.service_s * 1000, "noise_ms": sent_noise_ms},
        "percentiles": {"averaged_window_p99_ms": sum(windows) / len(windows),
                        "merged_p99_ms": metrics.percentile(open_run.latencies_ms, 0.99),
                        "windows_p99_ms": windows, "calm_p99_ms": open_run.calm_p99_ms},
        "client_bottleneck": {"client_utilization": heavy.client_utilization, "client_runnable": heavy.client_runnable,
                              "server_utilization": heavy.utilization, "headline": heavy.headline(),
                              "client_demand_ms": heavy.client_demand_ms, "demand_ms": heavy.demand_ms},
        "exercises": exercises,
        "skipped_exercises": {} if ab_runs else {"q3": f"ab did not run: {have_ab or 'skipped'}"},
    }


def _as_dict(others):
    """What else held the CPUs over a run, as the results file keeps it (None where it was not read)."""
    return others.as_dict() if others else None


def stall_figures(p, stall_results):
    """The stall runs: each loop's p99, the open loop's bounds and the closed loop's corrected p99 with its floor."""
    closed_run, open_run = stall_results["closed loop"], stall_results["open loop"]
    predicted = stall_runs.predicted_open_ms(0.99, open_run.stall_s, p.duration_s, p.rate_rps,
                                             stall_runs.drain_s(open_run, p.cores), open_run.calm_p99_ms)
    open_low_ms, open_high_ms, open_bounds = stall_runs.open_percentile_bounds(
        open_run, 0.99, stall_runs.per_request_s(open_run))
    interval_ms = p.users / closed_run.rate_rps * 1000
    corrected_ms = stall_runs.corrected(closed_run, interval_ms)
    wrk = stall_results.get("wrk")
    return {
        "closed_p99_ms": closed_run.percentile_ms(0.99),
        "wrk_p99_ms": wrk.percentile_ms(0.99) if wrk else None,
        "open_p99_ms": open_run.percentile_ms(0.99),
        "predicted_open_p99_ms": predicted,
        "open_p99_bounds_ms": [open_low_ms, open_high_ms],
        "open_bounds": open_bounds,
        "corrected_p99_ms": metrics.percentile(corrected_ms, 0.99),
        "corrected_p99_floor_ms": stall_runs.closed_floor_ms(closed_run, p.stall_s, p.users, p.rate_rps, interval_ms,
                                                             len(corrected_ms)),
        "stall_s": open_run.stall_s,
        "rate_rps": p.rate_rps,
        "duration_s": p.duration_s,
        # what the claims check besides
        "stall_asked_s": p.stall_s, "users": p.users,
        "open_requests": open_run.requests, "open_stop_reason": open_run.stop_reason,
        "open_stall_from_s": open_run.stall_from_s, "open_run_s": open_run.duration_s,
        "open_stall_cut_short": open_run.stall_cut_short,
        "closed_requests": closed_run.requests, "closed_stalled_share": closed_run.stalled_share(),
        "closed_send_lag_s": closed_run.send_lag_s, "closed_calm_p99_ms": closed_run.calm_p99_ms,
        "wrk": ({"requests": wrk.wrk["requests"], "rps": wrk.wrk["rps"], "max_ms": wrk.wrk["max_ms"],
                 "stall_s": wrk.stall_s, "neighbours": _as_dict(wrk.others)} if wrk else None),
        "open_neighbours": _as_dict(open_run.others), "closed_neighbours": _as_dict(closed_run.others),
    }


def ab_figures(p, ab_runs):
    """ab's three runs (the main one, a lone wave, keep-alive), or None where ab did not run."""
    if not ab_runs:
        return None
    main, lone, keep = ab_runs["main"], ab_runs["lone"], ab_runs["keep-alive"]
    return {"rps": main.figures["rps"], "line_one_ms": main.figures["ab_time_per_request_ms"],
            "line_two_ms": main.figures["ab_time_per_request_all_ms"],
            "implied_concurrency": main.implied_concurrency,
            "lone_first_duration_s": lone.duration_s, "wait_ms": p.ab_wait_ms,
            "concurrency": p.ab_concurrency, "lone_completed": lone.figures["completed"], "lone_rps": lone.figures["rps"],
            "keep_alive_requests": keep.keep_alive_requests, "keep_alive_completed": keep.figures["completed"]}


def timeout_figures(slow):
    """The stall longer than wrk's timeout: the lab client's longest latency, and wrk's where it ran."""
    lab_slow = slow["open loop"]
    lab = {"lab_max_ms": lab_slow.latencies_ms[-1], "lab_stall_s": lab_slow.stall_s,
           "lab_neighbours": _as_dict(lab_slow.others)}
    if "wrk" not in slow:
        return lab
    return lab | {"wrk_max_ms": slow["wrk"].wrk["max_ms"], "wrk_timeouts": slow["wrk"].wrk["timeouts"],
                  "stall_s": lab_slow.stall_s, "wrk_stall_s": slow["wrk"].stall_s,
                  "wrk_neighbours": _as_dict(slow["wrk"].others)}


def error_figures(errors):
    """The benchmark of errors: the lab client's report, and wrk's POST runs (None where one did not run)."""
    wrong_summary, posted, *bottle = errors
    bottle = bottle[0] if bottle else "not run"
    return {"lab_headline": wrong_summary.headline(), "lab_rps": wrong_summary.rps,
            "lab_non_2xx": wrong_summary.errors, "lab_completed": wrong_summary.completed,
            "wrk_rps": None if isinstance(posted, str) else posted["rps"],
            "wrk_non_2xx": None if isinstance(posted, str) else posted["non_2xx"],
            "wrk_requests": None if isinstance(posted, str) else posted["requests"],
            # The write-up's own pairing, gevent + Bottle, posted to the same way.
            "bottle_wrk_rps": None if isinstance(bottle, str) else bottle["rps"],
            "bottle_wrk_non_2xx": None if isinstance(bottle, str) else bottle["non_2xx"],
            "bottle_wrk_requests": None if isinstance(bottle, str) else bottle["requests"]}


def _row(point):
    """A load's figures as Point.row() gives them: what a failure at that load names."""
    return {key: point[key] for key in ("load", "closed_ms", "open_ms", "predicted_closed_ms", "predicted_open_ms")}


def check_claims(results):
    """Check the lesson's claims against this run's own bounds, print one line each, raise naming any that failed."""
    claims = Claims(LESSON)
    _stall_claims(claims, results["stall"])
    _ab_claims(claims, results["ab"])
    _tool_claims(claims, results["wrk_timeout"], results["errors_run"])
    _open_closed_claims(claims, results["open_vs_closed"], results["cpu_ms"], results["growth_past_1_over_D"])
    _percentile_claims(claims, results["percentiles"], results["client_bottleneck"])
    claims.report()
    return claims


def _stall_claims(claims, s):
    # 1. The open loop sees the stall where this run's own figures put it (stall_runs.open_percentile_bounds): its
    #    p99 is its m-th slowest request; the first m due in the stall each waited at least S − u_m, and are answered
    #    in the order they came, the m-th at most Q requests' work after the stall's first answer, plus the calm
    #    maximum. First, that the run is the experiment it claims: every request answered, and the stall, in full,
    #    holding the requests the p99 is made of.
    expected = int(s["rate_rps"] * s["duration_s"])
    claims.check("the open loop answered every request it sent", s["open_stop_reason"] == "completed"
                 and s["open_requests"] == expected, f"{s['open_requests']} of {expected}", "",
                 f"the open loop answered {s['open_requests']} of {expected} requests: {s['open_stop_reason']}")
    bounds = s["open_bounds"]
    claims.check("the stall held the requests the open loop's p99 is made of",
                 bounds["due_in_stall"] >= bounds["m"] and not s["open_stall_cut_short"],
                 f"{bounds['due_in_stall']} due in it, the p99 needs {bounds['m']}; cut short: {s['open_stall_cut_short']}", "",
                 f"the stall held {bounds['due_in_stall']} requests and the p99 is the {bounds['m']}th slowest: stopped"
                 f" at {s['open_stall_from_s']:.3f} s for {s['stall_s']:.3f} s of a {s['open_run_s']:.3f} s run"
                 f" (cut short: {s['open_stall_cut_short']}; the run {s['open_stop_reason']})")
    open_p99 = s["open_p99_ms"]
    low, high = s["open_p99_bounds_ms"]
    claims.timing("the open loop's p99 lies where the stall and the drain put it", open_p99, low, high,
                  neighbours=s.get("open_neighbours"), unit="ms", digits=1,
                  message=f"open loop p99 {open_p99:.1f} ms, expected {low:.1f} to {high:.1f} ms from {bounds}",
                  slower="above")
    # 2. The closed loop's stalled requests, one per user, are fewer than 1% of its requests: its p99 is not one of
    #    them (under half the stall), while the open loop's is.
    stall_ms = s["stall_s"] * 1000
    share, users, closed_requests = s["closed_stalled_share"], s["users"], s["closed_requests"]
    claims.check("at most one closed-loop request per user saw the stall", share <= users / closed_requests + 1e-9,
                 f"{share:.4f} of its requests", f"[0, {users}/{closed_requests}]",
                 f"closed loop: {share:.4f} of its requests saw the stall, at most {users}/{closed_requests}")
    closed_p99 = s["closed_p99_ms"]
    claims.check("the closed loop's p99 misses the stall, the open loop's shows it", closed_p99 < stall_ms / 2 < open_p99,
                 f"closed {closed_p99:.1f} ms, half the stall {stall_ms / 2:.1f} ms, open {open_p99:.1f} ms", "",
                 f"closed p99 {closed_p99:.1f} ms and open p99 {open_p99:.1f} ms against half the stall,"
                 f" {stall_ms / 2:.1f} ms")
    # 3. Corrected with its own expected interval, the closed loop moves to the open loop's side of the stall.
    corrected, floor = s["corrected_p99_ms"], s["corrected_p99_floor_ms"]
    claims.check("the corrected closed loop sees the stall", corrected >= floor and corrected > max(closed_p99, stall_ms / 2),
                 f"{corrected:.1f} ms, at least its floor {floor:.1f} ms and above {max(closed_p99, stall_ms / 2):.1f} ms", "",
                 f"corrected p99 {corrected:.1f} ms: floor {floor:.1f} ms, above the uncorrected"
                 f" {closed_p99:.1f} ms and half the stall {stall_ms / 2:.1f} ms")
    wrk = s["wrk"]
    if wrk is None:
        claims.skip("wrk's own correction sees the stall", "wrk did not run")
        return
    # wrk 4 corrects after the run with its own interval: its run time over each connection's requests, n // N.
    wrk_runtime_s = wrk["requests"] / wrk["rps"]
    wrk_interval_ms = wrk_runtime_s * 1000 / max(wrk["requests"] // users, 1)
    # Its corrected count is unknown: at most one back-filled value per interval of each user's longest wait.
    wrk_count = wrk["requests"] + users * math.floor(wrk["max_ms"] / wrk_interval_ms)
    # wrk's pacing is a timer in whole milliseconds; this machine's client lag is the closed loop's.
    wrk_floor_ms = stall_runs.corrected_floor_ms(
        s["stall_asked_s"], users / s["rate_rps"], s["closed_send_lag_s"] + 0.001 + s["closed_calm_p99_ms"] / 1000,
        wrk_interval_ms, users, wrk_count, 0.99)
    wrk_p99 = s["wrk_p99_ms"]
    claims.check("wrk's own correction sees the stall", wrk_p99 >= wrk_floor_ms and wrk_p99 > wrk["stall_s"] * 1000 / 2,
                 f"{wrk_p99:.1f} ms, at least its floor {wrk_floor_ms:.1f} ms and above {wrk['stall_s'] * 500:.1f} ms", "",
                 f"wrk's corrected p99 {wrk_p99:.1f} ms: floor {wrk_floor_ms:.1f} ms, half its stall"
                 f" {wrk['stall_s'] * 500:.1f} ms (interval {wrk_interval_ms:.1f} ms, {wrk_count} values at most)")


def _ab_claims(claims, ab):
    if ab is None:
        for claim in ("ab's two lines imply its concurrency", "one wave of N waits takes at least one wait",
                      "ab's req/s is its requests over its time taken", "ab -k kept every connection"):
            claims.skip(claim, "ab did not run")
        return
    # 4. ab's two lines are one total time divided two ways; their ratio is the concurrency, to the rounding of the
    #    printed lines (ab prints milliseconds to 3 decimals, seconds to 3, requests per second to 2).
    line_one, line_two, concurrency = ab["line_one_ms"], ab["line_two_ms"], ab["concurrency"]
    rounding = concurrency * (0.0005 / line_one + 0.0005 / line_two)
    implied = ab["implied_concurrency"]
    claims.check("ab's two lines imply its concurrency", abs(implied - concurrency) <= rounding,
                 f"{implied:.5f}", f"[{concurrency - rounding:.5f}, {concurrency + rounding:.5f}]",
                 f"ab's lines imply concurrency {implied:.5f}, -c was {concurrency} (± {rounding:.5f})")
    # One wave of N requests needs at least one wait (ab's lone first request makes it two with Debian's ab 2.3);
    # the handler's sleep never ends early, and ab prints its time taken to the millisecond.
    taken, wait_ms = ab["lone_first_duration_s"], ab["wait_ms"]
    claims.check("one wave of N waits takes at least one wait", taken >= wait_ms / 1000 - 0.0005,
                 f"{taken:.3f} s for one wait of {wait_ms / 1000:.3f} s (less ab's rounding, 0.0005 s)", "",
                 f"ab took {taken:.3f} s for one wave of {concurrency} waits of {wait_ms} ms")
    completed, rps = ab["lone_completed"], ab["lone_rps"]
    rps_rounding = completed / taken * 0.0005 / taken + 0.005
    claims.check("ab's req/s is its requests over its time taken", abs(rps - completed / taken) <= rps_rounding,
                 f"{rps} req/s", f"[{completed / taken - rps_rounding:.3f}, {completed / taken + rps_rounding:.3f}] req/s",
                 f"ab printed {rps} req/s; {completed} in {taken} s is {completed / taken:.3f} (± {rps_rounding:.3f})")
    kept, done = ab["keep_alive_requests"], ab["keep_alive_completed"]
    claims.check("ab -k kept every connection", kept == done, f"{kept} of {done}", "",
                 f"ab -k kept {kept} of {done} connections")


def _tool_claims(claims, timeout, errors):
    # 5. wrk keeps no latency past its 2 s timeout, and counts timeouts instead; the lab's client keeps every one.
    if "wrk_max_ms" in timeout:
        claims.check("wrk keeps no latency past its 2 s timeout and counts timeouts",
                     timeout["wrk_max_ms"] <= 2000 and timeout["wrk_timeouts"] > 0,
                     f"max {timeout['wrk_max_ms']} ms (at most 2000), {timeout['wrk_timeouts']} timeouts (more than 0)", "",
                     f"wrk max {timeout['wrk_max_ms']} ms (at most its 2000 ms timeout), {timeout['wrk_timeouts']}"
                     f" timeouts (more than 0) for a {timeout['wrk_stall_s']:.3f} s stall")
    else:
        claims.skip("wrk keeps no latency past its 2 s timeout and counts timeouts", "wrk did not run")
    lab_max = timeout["lab_max_ms"]
    claims.check("the lab's client keeps the latencies past 2 s", lab_max > 2000, f"longest {lab_max:.0f} ms, over 2000 ms", "",
                 f"the lab's longest latency {lab_max:.0f} ms, over a {timeout['lab_stall_s']:.3f} s stall;"
                 f" more than wrk's 2000 ms timeout")
    # 6. A benchmark of errors: every answer was an error, and the report says so in its first words.
    claims.check("the lab's report of an all-error run starts with its warning",
                 errors["lab_non_2xx"] == errors["lab_completed"] and errors["lab_headline"].startswith("WARNING"),
                 f"{errors['lab_non_2xx']} errors in {errors['lab_completed']} answers; first word"
                 f" {(errors['lab_headline'].split() or [''])[0]!r}", "", str(errors))
    if errors["wrk_non_2xx"] is None:
        claims.skip("wrk counts every answer of the POST run an error", "wrk did not run")
    else:
        claims.check("wrk counts every answer of the POST run an error",
                     errors["wrk_non_2xx"] > 0 and errors["wrk_non_2xx"] >= 0.99 * errors["wrk_requests"],
                     f"{errors['wrk_non_2xx']} errors in {errors['wrk_requests']} answers (at least 99%)", "", str(errors))
    if errors.get("bottle_wrk_non_2xx") is None:
        claims.skip("wrk counts every answer of gevent + Bottle's POST run an error", "wrk or bottle_gevent did not run")
    else:
        claims.check("wrk counts every answer of gevent + Bottle's POST run an error",
                     errors["bottle_wrk_non_2xx"] > 0
                     and errors["bottle_wrk_non_2xx"] >= 0.99 * errors["bottle_wrk_requests"],
                     f"{errors['bottle_wrk_non_2xx']} errors in {errors['bottle_wrk_requests']} answers (at least 99%)",
                     "", str(errors))


def _open_closed_claims(claims, points, cpu_ms, growth):
    # 7. Open vs closed below 0.8 / D: each mean within what its own run sets. The closed loop's lies between D
    #    (users who never meet) and MVA (users in random order), plus three standard errors of the run's mean. The
    #    open loop's is predicted from its own schedule: its sends fed to one ideal server (see open_closed), waits
    #    at the calibration's D and at the run's S, plus three standard errors of its distance from that queue.
    for p in points:
        load = p["load"]
        claims.check(f"load {load}: no request failed", p["open_errors"] == 0 and p["closed_errors"] == 0,
                     f"{p['open_errors']} open, {p['closed_errors']} closed", "", str(_row(p)))
        if load > 0.8:
            continue
        for loop in ("open", "closed"):
            mean, (band_low, band_high), noise = p[f"{loop}_ms"], p[f"band_{loop}_ms"], p[f"noise_{loop}_ms"]
            floor, ceiling = (band_low - 3 * noise, band_high + 3 * noise) if loop == "open" else (
                cpu_ms, band_high + 3 * noise)
            claim = (f"load {load}: the open loop's mean as a queue fed its own sends predicts" if loop == "open"
                     else f"load {load}: the closed loop's mean between D (users who never meet) and MVA")
            half_width = (ceiling - floor) / (ceiling + floor) if ceiling + floor > 0 else math.inf
            if not math.isfinite(ceiling) or (loop == "open" and half_width > OPEN_WIDEST):
                # A band with no top, or wider than the figure it predicts, cannot fail: say why, rather than pass it.
                why = ("the run had too few answers to measure its own noise" if not math.isfinite(noise) else
                       f"this run's noise makes the band ±{half_width:.0%} wide: lengthen point_s to judge it"
                       if math.isfinite(ceiling) else
                       "the CPU this run measured per request fills the CPU at this rate, so no steady state exists")
                claims.skip(claim, f"{why} (mean {mean:.2f} ms, band {band_low:.2f} – {band_high:.2f} ms,"
                                   f" noise ± {noise:.2f} ms)")
                continue
            claims.timing(claim, mean, floor, ceiling, neighbours=p.get(f"neighbours_{loop}"), unit="ms", digits=2,
                          message=f"load {load}: {loop} mean {mean:.2f} ms, expected {floor:.2f} to {ceiling:.2f} ms"
                          f" (band {band_low:.2f} – {band_high:.2f}, noise ± {noise:.2f} ms)", slower="above",
                          predicted=band_high if loop == "open" else None)
    _growth_claim(claims, growth)
    past = max(points, key=lambda p: p["load"])
    claims.check(f"load {past['load']}: the closed loop answers faster than the open one",
                 past["closed_ms"] < past["open_ms"], f"closed {past['closed_ms']:.1f} ms, open {past['open_ms']:.1f} ms",
                 "", str(_row(past)))


def _growth_claim(claims, growth):
    # Past 1/D the open loop's queue grows as long as the run. How much it grows in a short run depends on the
    # schedule's lulls and on the D this run measured: a queue fed this run's own sends at its own service time
    # (Lindley's recursion) predicts it. Where that predicts no growth beyond the run's noise, nothing can be judged.
    first, last = growth["first_third_ms"], growth["last_third_ms"]
    fed_first, fed_last = growth["predicted_first_ms"], growth["predicted_last_ms"]
    noise, service = growth["noise_ms"], growth["service_ms"]
    claim = f"load {growth['load']}: the open loop's latency grows through the run"
    predicted = f"a queue fed this run's sends at {service:.2f} ms each predicts {fed_first:.0f} → {fed_last:.0f} ms"
    if not fed_last - fed_first > noise:
        claims.skip(claim, f"{predicted}, within the run's noise ± {noise:.0f} ms: not far enough past 1/D to show it")
        return
    measured = f"{first:.0f} ms in its first third, {last:.0f} ms in its last (up {last - first:.0f} ms)"
    grew = last - first > noise
    claims.check(claim, grew, f"{measured}, {'more' if grew else 'not more'} than the run's noise ± {noise:.0f} ms;"
                 f" {predicted}", "", f"{claim}: {measured}, not above the run's noise ± {noise:.0f} ms, though {predicted}")


def _percentile_claims(claims, pct, client):
    # 8. Percentiles: the windows' average is not the merged p99 when one window held the stall: they differ by more
    #    than this run's own noise (the p99 of its calm requests).
    windows, merged, calm = pct["windows_p99_ms"], pct["merged_p99_ms"], pct["calm_p99_ms"]
    averaged = pct["averaged_window_p99_ms"]
    claims.check("averaging the windows' p99s misses the merged p99",
                 min(windows) <= merged <= max(windows) and abs(averaged - merged) > calm,
                 f"averaged {averaged:.1f} ms, merged {merged:.1f} ms: apart by more than the calm p99, {calm:.1f} ms;"
                 f" merged within the windows' {min(windows):.1f} to {max(windows):.1f} ms", "",
                 f"windows' p99s {windows}: averaged {averaged:.1f} ms, merged {merged:.1f} ms, calm p99 {calm:.1f} ms")
    # 9. The threaded client costs more CPU per request than the server that answers it.
    claims.check("the threaded client costs more CPU per request than the server",
                 client["client_demand_ms"] > client["demand_ms"],
                 f"client {client['client_demand_ms']:.3f} ms, server {client['demand_ms']:.3f} ms", "",
                 str({"client_demand_ms": client["client_demand_ms"], "demand_ms": client["demand_ms"]}))
