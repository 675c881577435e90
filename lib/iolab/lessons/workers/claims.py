"""Lesson 06's results and closing claims: each claim checked against this run's bounds, on a line of its own."""

import math
import statistics
import time

from iolab import theory
from iolab.claims import Claims

from . import exercises, gil, model, sweep

LESSON = "06-workers-threads-processes"
THREADS_LABEL = "threaded_app (threads, one GIL)"  # the GIL experiment's two servers, as the notebook names them
PROCESSES_LABEL = "gunicorn sync (processes)"


def _rows(cells, count_key, count_of):
    return [{"server": c.config.label, "handler": c.handler, count_key: count_of(c), "rps": c.rps,
             "predicted_rps": c.predicted.rps, "neighbours": c.run.neighbours} for c in cells]


def _quiet(*cells):
    """True when other programs took no more of the cores than model.DISTURBED_SHARE during every one of `cells`."""
    return all(c.run.others_share <= model.DISTURBED_SHARE for c in cells)


def results(plan, *, lab, one_core, cells, c_code, gil_latencies, scaling, check_cell, nginx_cell, best_gunicorn):
    """The run's figures, as the results file keeps them and the claims read them: `cells` maps "threads",
    "processes" and "matrix" to their sweep.Cells; "summary" holds the headline figures in sentences."""
    judged = list({id(c): c for part in ("threads", "processes", "matrix") for c in cells[part]}.values())
    verdicts = {kind: sum(1 for c in judged if c.verdict.kind == kind)
                for kind in ("predicted", "explained", "reported", "unexplained")}
    found = {
        **_demand_figures(lab, judged, one_core),
        "threads": _rows(cells["threads"], "threads", lambda c: c.config.threads),
        "processes": _rows(cells["processes"], "workers", lambda c: c.config.processes),
        "matrix": [{"workers": c.config.processes, "threads": c.config.threads, "handler": c.handler, "rps": c.rps,
                    "predicted_rps": c.predicted.rps, "mean_ms": c.run.mean_ms, "p99_ms": c.run.p99_ms,
                    "neighbours": c.run.neighbours}
                   for c in cells["matrix"]],
        **_thread_figures(plan, lab, c_code),
        **_process_figures(plan, cells),
        **_gil_figures(gil_latencies),
        "usl": _usl_figures(scaling, check_cell),
        **_nginx_figures(plan, lab, nginx_cell, best_gunicorn),
        "cores": lab.cores,
        "exercises": exercises.statuses(),
        "solutions": plan.solutions,
        "verdicts": verdicts,
        "within_10_percent": sum(1 for c in judged if abs(c.error) <= 0.10),
        "runs": len(judged),
    }
    found["summary"] = _summary(plan, judged, found)
    return found


def _demand_figures(lab, judged, one_core):
    """D per server, the noise between identical runs, and how far D moved from each kind's one-worker baseline."""
    # How far D moved from each kind's one-worker baseline, per configuration: the model's premise is that it does not.
    demand_change = {c.config.label: c.run.app_demand_ms / lab.demands(c.config, "cpu").app_ms - 1
                     for c in judged if c.handler == "cpu" and c.config.kind != "nginx"}
    # Where the server's processes (nginx's included) outnumber the CPUs, they take turns on a core, and each turn
    # refills the caches: D may rise there too, so it is reported with the threads' changes, not held to the premise.
    # Under a quota of less than one CPU, one process still has the CPU to itself while it runs: it counts as one.
    one_request = {c.config.label: demand_change[c.config.label] for c in judged if c.handler == "cpu"
                   and c.config.label in demand_change and (c.config.setup().one_thread or c.config.threads == 1)
                   and c.config.setup().processes + c.config.setup().nginx_workers <= max(lab.cores, 1)}
    return {
        "demand_ms": {handler: {c.config.label: c.run.server_demand_ms for c in lab.select(handler=handler)
                                if c.config == c.config.baseline} for handler in lab.handlers},
        "demand_noise": {handler: lab.noise(handler) for handler in ("hello", "cpu")},
        "demand_change_cpu": demand_change,
        "demand_change_cpu_one_request_per_process": one_request,
        "demand_change_hello": [c.run.app_demand_ms / lab.demands(c.config, "hello").app_ms - 1
                                for c in judged if c.handler == "hello" and c.config.kind != "nginx"],
        "faster_than_allowed": [c.row() for c in judged + one_core.cells if not c.verdict.holds],
    }


def _thread_figures(plan, lab, c_code):
    """Threads on /sync-sleep and on /cpu, at the most threads, and C code and bytecode in two threads."""
    waiting, burning, neighbours, expected = {}, {}, {}, {}
    for kind in ("gthread", "threaded"):
        # Threads multiply waiting: with k threads held, the throughput is at least the pessimistic bound of the
        # operational laws (every request queues behind all the others), with this run's own wait and CPU per request.
        many = lab.find(sweep.Config(kind, 1, plan.thread_counts[-1]), "wait")
        floor = None
        if many.predicted.limit in ("threads", "users"):  # a wait the CPU does not limit
            cycle_s = (plan.wait_ms + many.run.app_demand_ms + many.run.client_demand_ms) / 1000
            floor = theory.pessimistic_throughput(many.users, cycle_s, servers=min(plan.thread_counts[-1], many.users))
        waiting[kind] = (many.rps, many.config.threads, floor, many.predicted.limit)
        neighbours[kind] = many.run.neighbours
        expected[kind] = many.predicted.rps  # the model's figure: its slack to the floor is the claim's margin
        # ... and not Python's CPU work: /cpu burns cpu_ms of its thread's CPU time in bytecode, and only the thread
        # holding the GIL runs bytecode, so X × cpu_ms is at most one core's time. The run's count of requests over
        # its length is off by at most the requests in flight at either end.
        most = lab.find(sweep.Config(kind, 1, plan.thread_counts[-1]), "cpu")
        burning[kind] = (most.config.threads, most.rps * plan.cpu_ms / 1000, 2 * most.users / most.run.completed)
    return {
        "waiting": waiting,  # kind -> (req/s, threads, the pessimistic bound or None where the CPU limits, the limit)
        "waiting_neighbours": neighbours,  # kind -> what else held the CPUs over that run (iolab.neighbours)
        "waiting_predicted_rps": expected,  # kind -> the throughput the model predicted for that run
        "bytecode_in_threads": burning,  # kind -> (threads, cores' worth of bytecode burned on /cpu, the edge allowed)
        "threads_at_work": {name: {k: {"calls_per_s": r.calls_per_s, "cores_busy": r.cores_busy}
                                   for k, r in runs.items()} for name, runs in c_code.items()},
        "bytecode_cores_busy": c_code["count_in_python"][2].cores_busy,  # a Python loop in two threads
        "in_c_cores_busy": c_code["hash_in_c"][2].cores_busy,  # SHA-256 in two threads
        "in_c_others_share": c_code["hash_in_c"][2].others_share,
    }


def _process_figures(plan, cells):
    """Sync workers on /cpu: the model's prediction and the cores each count kept busy."""
    by_workers = {c.config.processes: c for c in cells["processes"] if c.config.kind == "sync" and c.handler == "cpu"}
    return {
        "predicted_cpu_rps": {n: by_workers[n].predicted.rps for n in plan.worker_counts},
        "cores_used": {n: c.rps * c.run.app_demand_ms / 1000 for n, c in by_workers.items()},
        "two_workers_others_share": by_workers[2].run.others_share,
    }


def _gil_figures(gil_latencies):
    """/ beside one busy thread (the median) and beside one busy process (every request), and the switch interval."""
    beside_a_process = list(gil_latencies[PROCESSES_LABEL][1])
    return {"threads_1_ms": statistics.median(gil_latencies[THREADS_LABEL][1]),
            "fastest_beside_a_process_ms": min(beside_a_process), "beside_a_process_ms": beside_a_process,
            "interval_ms": gil.switch_interval_ms()}


def _usl_figures(scaling, check_cell):
    """The USL's fit, its peak and the run that checks it; the curve's best, also at the check's speed."""
    fit = scaling.fit
    best_on_curve = max(scaling.usable, key=lambda c: c.rps)
    return {"sigma": fit.sigma, "kappa": fit.kappa, "lambda": fit.lam, "fitted_workers": scaling.knee_workers,
            "peak_workers": scaling.peak_workers, "peak_range": list(scaling.peak_range), "noise": scaling.noise,
            "peak_rps": scaling.peak_rps, "checked_rps": check_cell.rps, "quiet": _quiet(check_cell, *scaling.usable),
            "best_on_curve_rps": best_on_curve.rps,
            # At a CPU-bound ceiling X goes as 1 / D: at the check's speed the curve's best would be best x D_best / D_check.
            "best_at_check_speed_rps": best_on_curve.rps * best_on_curve.run.app_demand_ms / check_cell.run.app_demand_ms}


def _nginx_figures(plan, lab, nginx_cell, best_gunicorn):
    """nginx alone beside the Python servers: its D and theirs, its rate and the best gunicorn's."""
    nginx_rps = nginx_cell.rps if nginx_cell is not None else None
    return {
        "nginx_missing": plan.nginx_missing,
        "skipped_exercises": {"q7": plan.nginx_missing} if plan.nginx_missing else {},  # no nginx: nothing to check q7
        "nginx_rps": nginx_rps,
        "nginx_demand_ms": nginx_cell.run.server_demand_ms if nginx_cell is not None else None,
        "python_demands_ms": [c.run.server_demand_ms for c in lab.select(handler="hello") if c.config.kind != "nginx"],
        "best_gunicorn_rps": best_gunicorn.rps,
        "nginx_over_best_gunicorn": nginx_rps / best_gunicorn.rps if nginx_rps else None,
        "nginx_quiet": nginx_cell is not None and _quiet(nginx_cell, best_gunicorn),
    }


def _summary(plan, judged, found):
    """The run's headline figures, in sentences."""
    noise_cpu, noise_hello = found["demand_noise"]["cpu"], found["demand_noise"]["hello"]
    one_request = found["demand_change_cpu_one_request_per_process"]
    threads_change = {label: change for label, change in found["demand_change_cpu"].items()
                      if label not in one_request}
    hello_change = found["demand_change_hello"]
    usl = found["usl"]
    usl_error = usl["checked_rps"] / usl["peak_rps"] - 1
    span = lambda changes: f"{min(changes, default=0):+.1%} to {max(changes, default=0):+.1%}"  # noqa: E731
    return "\n".join([
        f"{len(judged)} runs: " + ", ".join(f"{n} {kind}" for kind, n in found["verdicts"].items()),
        f"{found['within_10_percent']} of {len(judged)} within 10% of the prediction made from one worker's demands; "
        f"the largest miss {max(abs(c.error) for c in judged):.0%}.",
        f"D on /cpu moved from its one-worker baseline by {span(one_request.values())} where each process ran one "
        f"request at a time, and by {span(threads_change.values())} with several threads taking turns at a GIL "
        f"(identical runs moved it {noise_cpu:.1%}); hello world's by {min(hello_change):+.0%} to "
        f"{max(hello_change):+.0%} (identical runs: {noise_hello:.0%}).",
        f"The USL's peak, checked: {usl_error:+.0%} ({'within' if abs(usl_error) <= 0.15 else 'outside'} 15%; "
        f"the noise between identical runs was {usl['noise']:.0%}).",
        f"Full run took {time.monotonic() - plan.began:.0f} s.",
    ])


def check_claims(found):
    """Check every claim of lesson 06 against `found` (the results), print one line each, and raise
    iolab.claims.ClaimsFailed naming each that failed with its values.

    Each bound is built from this run's own measurements (D, the cores, the client's CPU, the switch interval) and,
    where two runs are compared, a margin of the noise measured between identical runs in this same run. What the
    noise decides is printed with the run's figures, not claimed.
    """
    claims = Claims(LESSON)
    noise_cpu, noise_hello = found["demand_noise"]["cpu"], found["demand_noise"]["hello"]
    model_premises(claims, found, noise_cpu)
    threads(claims, found, noise_cpu)
    processes(claims, found, noise_cpu)
    gil_switch(claims, found)
    usl_ceiling(claims, found["usl"], noise_hello)
    nginx(claims, found, noise_hello)
    solutions(claims, found)
    claims.report()
    return claims


def _by_count(figures):
    """{count: figure} with whole-number keys, as written (a results file read back holds them as strings)."""
    return {int(count): figure for count, figure in figures.items()}


def model_premises(claims, found, noise_cpu):
    """Every bound of the model is a real limit, and its premise (D stays the same) holds where it is claimed."""
    # Every bound of the model is a real limit: no run goes faster than its own measured demands allow.
    above = found["faster_than_allowed"]
    claims.check("No run goes faster than its own measured demands allow", not above,
                 f"{len(above)} of them above", "", f"runs faster than their own demands allow (a measurement is "
                 f"wrong): {above}")

    # The model's premise, which an "explained" verdict cannot test: D on /cpu stays the same from configuration to
    # configuration where each process runs one request at a time on a CPU of its own, within three times what
    # identical runs moved it (and never less than the model's threshold for naming a change, model.CHANGED).
    allowed = max(3 * noise_cpu, model.CHANGED)
    one_request = found["demand_change_cpu_one_request_per_process"]
    changes = one_request.values()
    moved = {label: change for label, change in one_request.items() if abs(change) > allowed}
    claims.check("D on /cpu stays the same where each process runs one request at a time", not moved,
                 f"moved {min(changes, default=0):+.1%} to {max(changes, default=0):+.1%}", f"[−{allowed:.1%}, +{allowed:.1%}]",
                 f"D on /cpu moved more than {allowed:.1%} from its baseline: {moved}")


def threads(claims, found, noise_cpu):
    """Threads multiply waiting, not Python's CPU work; C code that lets the GIL go uses more than one core."""
    for kind, (rps, count, floor, limit) in found["waiting"].items():
        claim = f"{kind}: {count} threads serve /sync-sleep at least as fast as the pessimistic bound"
        if floor is None:
            claims.skip(claim, f"the CPU limits this run ({limit}), not the threads")
        else:
            claims.timing(claim, rps, floor, math.inf, neighbours=found.get("waiting_neighbours", {}).get(kind),
                          unit="req/s", digits=0,
                          message=f"{kind} on /sync-sleep: {rps:.0f} req/s with {count} threads, below the pessimistic "
                          f"bound {floor:.0f}", slower="below",
                          predicted=found.get("waiting_predicted_rps", {}).get(kind))
    for kind, (count, burned, edge) in found["bytecode_in_threads"].items():
        claims.check(f"{kind}: {count} threads burn at most one core's worth of bytecode on /cpu",
                     burned <= 1 + edge, f"{burned:.2f} cores", f"[0, {1 + edge:.2f}]",
                     f"{kind}: {count} threads burned {burned:.2f} cores of bytecode on /cpu")

    # Python bytecode in threads keeps one core busy at most (a GIL hand-off overlaps two threads for a moment, so
    # it is allowed the larger of the noise and model.CHANGED); C code that lets the GIL go keeps more than one busy,
    # where there are two cores to run on and other programs left them free.
    bytecode, in_c, cores = found["bytecode_cores_busy"], found["in_c_cores_busy"], found["cores"]
    most = 1 + max(noise_cpu, model.CHANGED)
    claims.check("A Python loop in two threads keeps at most one core busy", bytecode <= most,
                 f"{bytecode:.2f} cores", f"[0, {most:.2f}]",
                 f"a Python loop in two threads kept {bytecode:.2f} cores busy, more than {most:.2f}")
    claim = "SHA-256 in two threads keeps more than one core busy"
    if cores >= 2 and found["in_c_others_share"] <= model.DISTURBED_SHARE:
        least = max(1.0, bytecode) * (1 + noise_cpu)
        claims.check(claim, in_c > least, f"{in_c:.2f} cores", f"({least:.2f}, ∞)",
                     f"SHA-256 in two threads kept {in_c:.2f} cores busy, not more than {least:.2f} "
                     f"(the Python loop kept {bytecode:.2f})")
    else:
        claims.skip(claim, f"C code in two threads had {cores:g} CPU(s), of which other programs took "
                           f"{found['in_c_others_share']:.0%}; it needs a second core to itself")


def processes(claims, found, noise_cpu):
    """Processes multiply the cores used (up to the cores), and with one core, not at all (the Binder case)."""
    cores, predicted_cpu, cores_used = found["cores"], _by_count(found["predicted_cpu_rps"]), _by_count(found["cores_used"])
    predicted = [predicted_cpu[n] for n in sorted(predicted_cpu)]
    shown = ", ".join(f"{n}: {rps:,.0f}" for n, rps in sorted(predicted_cpu.items()))
    claims.check("The model never has one more process cost throughput on /cpu", predicted == sorted(predicted),
                 f"predicted req/s by processes, {shown}: rising or flat", "",
                 f"the model has a process cost throughput: {predicted}")
    if cores <= 1:
        claims.check("On one core, more processes predict no more on /cpu",
                     max(predicted) <= min(predicted) * (1 + noise_cpu), f"{max(predicted):,.0f} req/s",
                     f"[0, {min(predicted) * (1 + noise_cpu):,.0f}] (the least plus the noise, {noise_cpu:.1%})",
                     f"one core, yet the prediction rises: {predicted}")
    elif cores >= 2:
        claims.check("On two cores, two processes predict more than one on /cpu",
                     predicted[1] > predicted[0] * (1 + noise_cpu), f"{predicted[1]:,.0f} req/s",
                     f"({predicted[0] * (1 + noise_cpu):,.0f}, ∞) (one's plus the noise, {noise_cpu:.1%})",
                     f"two processes predicted {predicted[1]:,.0f} req/s, one {predicted[0]:,.0f}: not more by the "
                     f"noise {noise_cpu:.1%} ({predicted})")
    else:
        claims.skip("More processes predict more on /cpu up to the cores", f"{cores:g} CPUs: neither one nor two")
    claim = "Two sync workers keep more than one core busy on /cpu"
    if cores >= 2 and found["two_workers_others_share"] <= model.DISTURBED_SHARE:
        # One sync worker is one thread: at most one core. Two kept more than one busy, beyond the noise.
        least = max(1.0, cores_used[1]) * (1 + noise_cpu)
        claims.check(claim, cores_used[2] > least, f"{cores_used[2]:.2f} cores", f"({least:.2f}, ∞)",
                     f"two sync workers kept {cores_used[2]:.2f} cores busy on /cpu, not more than {least:.2f}: "
                     f"{cores_used}")
    elif cores >= 2:
        claims.skip(claim, f"other programs took {found['two_workers_others_share']:.0%} of the cores during the run")
    else:
        claims.skip(claim, f"{cores:g} CPU: there is no second core to use")
    beyond = [n for n in sorted(predicted_cpu) if n >= cores]
    claim = "Past the cores, more processes predict no more on /cpu"
    if beyond:
        top, first = max(predicted_cpu[n] for n in beyond), predicted_cpu[beyond[0]]
        claims.check(claim, top <= first * (1 + noise_cpu), f"{top:,.0f} req/s",
                     f"[0, {first * (1 + noise_cpu):,.0f}]",
                     f"past the cores ({beyond}), the prediction rose from {first:,.0f} to {top:,.0f} req/s")
    else:
        claims.skip(claim, f"no process count here reaches the {cores:g} CPU(s)")


def gil_switch(claims, found):
    """The GIL: beside a busy thread, / waits at least one switch interval (the waiting thread asks for the GIL only
    once an interval has passed, and the busy thread never lets it go sooner); beside a busy process it need not."""
    interval, threads_1, fastest = found["interval_ms"], found["threads_1_ms"], found["fastest_beside_a_process_ms"]
    claims.check("Beside one busy thread, / waits at least one switch interval", threads_1 >= interval,
                 f"median {threads_1:.2f} ms", f"[{interval:g}, ∞) ms",
                 f"/ beside one busy thread: {threads_1:.2f} ms, interval {interval} ms")
    claims.check("Beside one busy process, some request for / takes less than one interval",
                 fastest < interval, f"fastest {fastest:.2f} ms",
                 f"[0, {interval:g}) ms",
                 f"/ beside one busy process never took less than the interval {interval} ms: "
                 f"{found['beside_a_process_ms']}")


def usl_ceiling(claims, usl, noise_hello):
    """The USL's peak: whether it lands within 15% of the fit, the noise decides (printed with the run's figures).
    What it cannot fake is a ceiling: no number of workers beats the curve's best by more than the noise, at the
    check's speed if the machine changed speed between the runs (that shows in D)."""
    claim = "No number of workers beats the scaling curve's best by more than the noise"
    if usl["quiet"]:
        best, at_check_speed, checked = usl["best_on_curve_rps"], usl["best_at_check_speed_rps"], usl["checked_rps"]
        ceiling = max(best, at_check_speed) * (1 + 2 * usl["noise"] + noise_hello)
        claims.check(claim, checked <= ceiling, f"{checked:,.0f} req/s", f"[0, {ceiling:,.0f}]",
                     f"the checking run did {checked:,.0f} req/s, above the curve's best "
                     f"{best:,.0f} (at the check's speed {at_check_speed:,.0f}) by more "
                     f"than the noise allows: {ceiling:,.0f}")
    else:
        claims.skip(claim, "other programs disturbed the scaling runs: the check is reported, not judged")


def nginx(claims, found, noise_hello):
    """nginx, in C, spends less per request than any Python server, by more than the noise, and so does more."""
    claim_d, claim_x = ("nginx spends less CPU per request than any Python server",
                        "nginx alone serves hello world faster than the best gunicorn")
    if found["nginx_demand_ms"] is None:
        reason = f"nginx did not run ({found['nginx_missing']})"
        claims.skip(claim_d, reason)
        claims.skip(claim_x, reason)
        return
    demand, pythons = found["nginx_demand_ms"], found["python_demands_ms"]
    lightest = min(pythons)
    claims.check(claim_d, demand * (1 + noise_hello) < lightest, f"{demand:.4f} ms",
                 f"[0, {lightest / (1 + noise_hello):.4f}) ms (the lightest Python D, less the noise)",
                 f"nginx's D {demand:.4f} ms is not below every Python server's by the noise "
                 f"{noise_hello:.0%}: {pythons}")
    if found["nginx_quiet"]:
        rps, best = found["nginx_rps"], found["best_gunicorn_rps"]
        least = best * (1 + noise_hello)
        claims.check(claim_x, rps > least, f"{rps:,.0f} req/s", f"({least:,.0f}, ∞)",
                     f"nginx alone did {rps:,.0f} req/s, the best gunicorn {best:,.0f}: "
                     f"not more by the noise {noise_hello:.0%}")
    else:
        claims.skip(claim_x, "other programs disturbed nginx's run or the best gunicorn's")


def solutions(claims, found):
    """With the solutions filled in, every exercise passes its check (q7 has nothing to check where nginx is not)."""
    claim = "Every exercise's solution passes its check"
    if not found["solutions"]:
        claims.skip(claim, "this run has no solutions filled in")
        return
    statuses = found["exercises"]
    expected = {name: "correct" for name in statuses}
    if found["nginx_missing"]:
        expected["q7"] = "not attempted"  # nothing to check it against
    wrong = {name: status for name, status in statuses.items() if status != expected[name]}
    claims.check(claim, not wrong, f"{len(statuses) - len(wrong)} of {len(statuses)}", "",
                 f"exercises whose solution did not pass: {wrong} (all: {statuses})")
