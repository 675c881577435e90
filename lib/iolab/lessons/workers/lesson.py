"""Lesson 06's proof, out of the student's way: its parameters checked, its results written, its claims checked."""

import json
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from iolab import params, theory
from iolab.claims import Claims

from . import cores as core_info
from . import exercises, gil, model, sweep

THREADS_LABEL = "threaded_app (threads, one GIL)"  # the GIL experiment's two servers, as the notebook names them
PROCESSES_LABEL = "gunicorn sync (processes)"


@dataclass(frozen=True)
class Plan:
    """The lesson's parameters, in the order of its parameters cell; check() returns them checked and sized."""

    wait_ms: float
    cpu_ms: float
    users: int
    run_seconds: float
    thread_counts: list
    worker_counts: list
    matrix_workers: list
    matrix_threads: list
    usl_workers: list
    gil_busy: list
    gil_probes: int
    quick: bool = False
    solutions: bool = False
    results_path: str | None = None
    retries: int = 2  # a run other programs disturbed is run again this many times at most, the least disturbed kept
    nginx_missing: str | None = None  # why nginx cannot run here, or None
    began: float = field(default_factory=time.monotonic)

    def check(self, quiet=False):
        """Refuse a bad parameter by name; in quick mode keep two points per sweep and shorter runs (every section
        still runs, and every claim is still checked). Prints what this kernel may use and the sizes it runs."""
        quick = params.check_common(self.quick, self.solutions, self.results_path)
        params.check_range("wait_ms", self.wait_ms, 5, 200)
        params.check_range("cpu_ms", self.cpu_ms, 1, 50)
        params.check_range("users", self.users, 4, 256)
        params.check_range("run_seconds", self.run_seconds, 0.1, 10, integer=False)
        counts = {
            "thread_counts": sweep.check_counts("thread_counts", self.thread_counts, 1, 32, at_least=2),
            "worker_counts": sweep.check_counts("worker_counts", self.worker_counts, 1, 8, must_have=(1, 2), at_least=2),
            "matrix_workers": sweep.check_counts("matrix_workers", self.matrix_workers, 1, 8, at_least=2),
            "matrix_threads": sweep.check_counts("matrix_threads", self.matrix_threads, 1, 32, at_least=2),
            "usl_workers": sweep.check_counts("usl_workers", self.usl_workers, 1, 16, at_least=4),
            "gil_busy": sweep.check_counts("gil_busy", self.gil_busy, 0, 8, must_have=(0, 1), at_least=2),
        }
        params.check_range("gil_probes", self.gil_probes, 5, 500)
        # Quick mode has no time to run a disturbed run again: it reports such runs instead.
        plan = replace(self, quick=quick, **counts, nginx_missing=sweep.nginx_missing(), retries=0 if quick else 2)
        if quick:
            first_and_third = lambda values: [values[0], values[min(2, len(values) - 1)]]  # noqa: E731
            plan = replace(
                plan, thread_counts=first_and_third(plan.thread_counts), worker_counts=plan.worker_counts[:2],
                matrix_workers=plan.matrix_workers[:2], matrix_threads=first_and_third(plan.matrix_threads),
                usl_workers=plan.usl_workers[:4],
                gil_busy=plan.gil_busy[:3], gil_probes=min(plan.gil_probes, 10), run_seconds=min(plan.run_seconds, 0.25),
            )
        if not quiet:
            plan.describe()
        return plan

    @property
    def process_kinds(self):
        """The kinds the process experiments run: Tornado behind nginx only where nginx is installed."""
        return ("sync",) if self.nginx_missing else ("sync", "tornado")

    def lab(self, **options):
        """A sweep.Lab at these sizes (`options`: handlers, cpus)."""
        return sweep.Lab(wait_ms=self.wait_ms, cpu_ms=self.cpu_ms, run_seconds=self.run_seconds, users=self.users,
                         retries=self.retries, **options)

    def describe(self):
        if self.nginx_missing:
            print(f"Skipped: {self.nginx_missing}, so the nginx comparisons (nginx + Tornado processes, nginx alone) are"
                  " left out; everything else runs.")
        usable = core_info.usable_cores()
        cores = self.lab().cores
        quota = " (a CPU quota allows less than those cores)" if cores < len(usable) else ""
        print(f"This kernel may use {cores:g} CPU(s), on the cores {usable}{quota}. Each run lasts about "
              f"{self.run_seconds} s.")
        print(f"threads {self.thread_counts}, processes {self.worker_counts}, matrix {self.matrix_workers} x "
              f"{self.matrix_threads}, scaling curve {self.usl_workers}, GIL {self.gil_busy} busy threads x "
              f"{self.gil_probes} requests.")


@dataclass(frozen=True)
class Evidence:
    """What the closing claims need, as plain numbers: gather() takes them from the run, a test writes them down."""

    cores: float
    noise_cpu: float  # how far D on /cpu moved between identical runs, as a share
    noise_hello: float  # the same on hello world
    faster_than_allowed: list  # rows of runs above what their own measured demands allow
    one_request_change: dict  # label -> D's change on /cpu from its baseline, where each process ran one request
    waiting: dict  # kind -> (req/s, threads, the pessimistic bound or None where the CPU limits it, the limit)
    bytecode_in_threads: dict  # kind -> (threads, cores' worth of bytecode burned on /cpu, the edge allowed)
    bytecode_cores_busy: float  # a Python loop in two threads
    in_c_cores_busy: float  # SHA-256 in two threads
    in_c_others_share: float
    predicted_cpu: dict  # sync workers -> predicted req/s on /cpu
    cores_used: dict  # sync workers -> cores their /cpu run kept busy
    two_workers_others_share: float
    threads_1_ms: float  # the median of / beside one busy thread
    fastest_beside_a_process_ms: float
    beside_a_process_ms: list
    interval_ms: float
    usl_quiet: bool  # no program disturbed the scaling runs or the check
    usl_noise: float
    checked_rps: float
    best_on_curve_rps: float
    best_at_check_speed_rps: float  # the curve's best, at the check's D (a machine may change speed between runs)
    nginx_missing: str | None
    nginx_demand_ms: float | None
    python_demands_ms: list
    nginx_rps: float | None
    best_gunicorn_rps: float
    nginx_quiet: bool
    solutions: bool
    statuses: dict  # exercise -> its status
    results: dict = field(default_factory=dict)  # the results file, as written
    summary: str = ""  # the headline figures, as printed


def _rows(cells, count_key, count_of):
    return [{"server": c.config.label, "handler": c.handler, count_key: count_of(c), "rps": c.rps,
             "predicted_rps": c.predicted.rps} for c in cells]


def gather(plan, lab, one_core, cells, c_code, gil_latencies, scaling, check_cell, nginx_cell, best_gunicorn):
    """The Evidence of one run: `cells` maps "threads", "processes" and "matrix" to their sweep.Cells."""
    judged = list({id(c): c for part in ("threads", "processes", "matrix") for c in cells[part]}.values())
    noise_cpu, noise_hello = lab.noise("cpu"), lab.noise("hello")
    # How far D moved from each kind's one-worker baseline, per configuration: the model's premise is that it does not.
    demand_change = {c.config.label: c.run.app_demand_ms / lab.demands(c.config, "cpu").app_ms - 1
                     for c in judged if c.handler == "cpu" and c.config.kind != "nginx"}
    # Where the server's processes (nginx's included) outnumber the CPUs, they take turns on a core, and each turn
    # refills the caches: D may rise there too, so it is reported with the threads' changes, not held to the premise.
    # Under a quota of less than one CPU, one process still has the CPU to itself while it runs: it counts as one.
    one_request = {c.config.label: demand_change[c.config.label] for c in judged if c.handler == "cpu"
                   and c.config.label in demand_change and (c.config.setup().one_thread or c.config.threads == 1)
                   and c.config.setup().processes + c.config.setup().nginx_workers <= max(lab.cores, 1)}
    threads_change = {label: change for label, change in demand_change.items() if label not in one_request}
    hello_change = [c.run.app_demand_ms / lab.demands(c.config, "hello").app_ms - 1
                    for c in judged if c.handler == "hello" and c.config.kind != "nginx"]

    waiting, burning = {}, {}
    for kind in ("gthread", "threaded"):
        # Threads multiply waiting: with k threads held, the throughput is at least the pessimistic bound of the
        # operational laws (every request queues behind all the others), with this run's own wait and CPU per request.
        many = lab.find(sweep.Config(kind, 1, plan.thread_counts[-1]), "wait")
        floor = None
        if many.predicted.limit in ("threads", "users"):  # a wait the CPU does not limit
            cycle_s = (plan.wait_ms + many.run.app_demand_ms + many.run.client_demand_ms) / 1000
            floor = theory.pessimistic_throughput(many.users, cycle_s, servers=min(plan.thread_counts[-1], many.users))
        waiting[kind] = (many.rps, many.config.threads, floor, many.predicted.limit)
        # ... and not Python's CPU work: /cpu burns cpu_ms of its thread's CPU time in bytecode, and only the thread
        # holding the GIL runs bytecode, so X × cpu_ms is at most one core's time. The run's count of requests over
        # its length is off by at most the requests in flight at either end.
        most = lab.find(sweep.Config(kind, 1, plan.thread_counts[-1]), "cpu")
        burning[kind] = (most.config.threads, most.rps * plan.cpu_ms / 1000, 2 * most.users / most.run.completed)

    by_workers = {c.config.processes: c for c in cells["processes"] if c.config.kind == "sync" and c.handler == "cpu"}
    gil_medians = {label: {busy: statistics.median(values) for busy, values in by_busy.items()}
                   for label, by_busy in gil_latencies.items()}
    checked_rps = check_cell.rps
    best_on_curve = max(scaling.usable, key=lambda c: c.rps)
    # At a CPU-bound ceiling X goes as 1 / D: at the check's speed the curve's best would be best x D_best / D_check.
    at_check_speed = best_on_curve.rps * best_on_curve.run.app_demand_ms / check_cell.run.app_demand_ms
    quiet = lambda *runs: all(c.run.others_share <= model.DISTURBED_SHARE for c in runs)  # noqa: E731
    nginx_rps = nginx_cell.rps if nginx_cell is not None else None
    verdicts = {kind: sum(1 for c in judged if c.verdict.kind == kind)
                for kind in ("predicted", "explained", "reported", "unexplained")}
    within_10 = [c for c in judged if abs(c.error) <= 0.10]
    fit = scaling.fit

    results = {
        "demand_ms": {handler: {c.config.label: c.run.server_demand_ms for c in lab.select(handler=handler)
                                if c.config == c.config.baseline} for handler in lab.handlers},
        "threads": _rows(cells["threads"], "threads", lambda c: c.config.threads),
        "processes": _rows(cells["processes"], "workers", lambda c: c.config.processes),
        "matrix": [{"workers": c.config.processes, "threads": c.config.threads, "handler": c.handler, "rps": c.rps,
                    "predicted_rps": c.predicted.rps, "mean_ms": c.run.mean_ms, "p99_ms": c.run.p99_ms}
                   for c in cells["matrix"]],
        "usl": {"sigma": fit.sigma, "kappa": fit.kappa, "lambda": fit.lam, "fitted_workers": scaling.knee_workers,
                "peak_workers": scaling.peak_workers, "peak_range": list(scaling.peak_range), "noise": scaling.noise,
                "peak_rps": scaling.peak_rps, "checked_rps": checked_rps},
        "demand_noise": {handler: lab.noise(handler) for handler in ("hello", "cpu")},
        "demand_change_cpu": demand_change,
        "demand_change_cpu_one_request_per_process": one_request,
        "threads_at_work": {name: {k: {"calls_per_s": r.calls_per_s, "cores_busy": r.cores_busy}
                                   for k, r in runs.items()} for name, runs in c_code.items()},
        "nginx_over_best_gunicorn": nginx_rps / best_gunicorn.rps if nginx_rps else None,
        "skipped_exercises": {"q7": plan.nginx_missing} if plan.nginx_missing else {},  # no nginx: nothing to check q7
        "nginx_rps": nginx_rps,
        "cores": lab.cores,
        "exercises": exercises.statuses(),
        "verdicts": verdicts,
        "within_10_percent": len(within_10),
        "runs": len(judged),
    }
    usl_error = checked_rps / scaling.peak_rps - 1
    span = lambda changes: f"{min(changes, default=0):+.1%} to {max(changes, default=0):+.1%}"  # noqa: E731
    summary = "\n".join([
        f"{len(judged)} runs: " + ", ".join(f"{n} {kind}" for kind, n in verdicts.items()),
        f"{len(within_10)} of {len(judged)} within 10% of the prediction made from one worker's demands; "
        f"the largest miss {max(abs(c.error) for c in judged):.0%}.",
        f"D on /cpu moved from its one-worker baseline by {span(one_request.values())} where each process ran one "
        f"request at a time, and by {span(threads_change.values())} with several threads taking turns at a GIL "
        f"(identical runs moved it {noise_cpu:.1%}); hello world's by {min(hello_change):+.0%} to "
        f"{max(hello_change):+.0%} (identical runs: {noise_hello:.0%}).",
        f"The USL's peak, checked: {usl_error:+.0%} ({'within' if abs(usl_error) <= 0.15 else 'outside'} 15%; "
        f"the noise between identical runs was {scaling.noise:.0%}).",
        f"Full run took {time.monotonic() - plan.began:.0f} s.",
    ])
    return Evidence(
        cores=lab.cores, noise_cpu=noise_cpu, noise_hello=noise_hello,
        faster_than_allowed=[c.row() for c in judged + one_core.cells if not c.verdict.holds],
        one_request_change=one_request, waiting=waiting, bytecode_in_threads=burning,
        bytecode_cores_busy=c_code["count_in_python"][2].cores_busy, in_c_cores_busy=c_code["hash_in_c"][2].cores_busy,
        in_c_others_share=c_code["hash_in_c"][2].others_share,
        predicted_cpu={n: by_workers[n].predicted.rps for n in plan.worker_counts},
        cores_used={n: c.rps * c.run.app_demand_ms / 1000 for n, c in by_workers.items()},
        two_workers_others_share=by_workers[2].run.others_share,
        threads_1_ms=gil_medians[THREADS_LABEL][1],
        fastest_beside_a_process_ms=min(gil_latencies[PROCESSES_LABEL][1]),
        beside_a_process_ms=list(gil_latencies[PROCESSES_LABEL][1]), interval_ms=gil.switch_interval_ms(),
        usl_quiet=quiet(check_cell, *scaling.usable), usl_noise=scaling.noise, checked_rps=checked_rps,
        best_on_curve_rps=best_on_curve.rps, best_at_check_speed_rps=at_check_speed,
        nginx_missing=plan.nginx_missing,
        nginx_demand_ms=nginx_cell.run.server_demand_ms if nginx_cell is not None else None,
        python_demands_ms=[c.run.server_demand_ms for c in lab.select(handler="hello") if c.config.kind != "nginx"],
        nginx_rps=nginx_rps, best_gunicorn_rps=best_gunicorn.rps,
        nginx_quiet=nginx_cell is not None and quiet(nginx_cell, best_gunicorn),
        solutions=plan.solutions, statuses=exercises.statuses(), results=results, summary=summary,
    )


def write_results(path, evidence):
    """Write the run's headline figures to `path` as JSON (nothing when `path` is None)."""
    if path:
        Path(path).write_text(json.dumps(evidence.results, indent=2))


def claims_of(e):
    """Every claim of the lesson checked against `e` (an Evidence), as a Claims not yet reported.

    Each bound is built from this run's own measurements (D, the cores, the client's CPU, the switch interval) and,
    where two runs are compared, a margin of the noise measured between identical runs in this same run. What the
    noise decides is printed with the run's figures, not claimed.
    """
    claims = Claims("06-workers-threads-processes")
    noise_cpu, noise_hello = e.noise_cpu, e.noise_hello

    # Every bound of the model is a real limit: no run goes faster than its own measured demands allow.
    above = e.faster_than_allowed
    claims.check("No run goes faster than its own measured demands allow", not above,
                 f"{len(above)} of them above", "", f"runs faster than their own demands allow (a measurement is "
                 f"wrong): {above}")

    # The model's premise, which an "explained" verdict cannot test: D on /cpu stays the same from configuration to
    # configuration where each process runs one request at a time on a CPU of its own, within three times what
    # identical runs moved it (and never less than the model's threshold for naming a change, model.CHANGED).
    allowed = max(3 * noise_cpu, model.CHANGED)
    changes = e.one_request_change.values()
    moved = {label: change for label, change in e.one_request_change.items() if abs(change) > allowed}
    claims.check("D on /cpu stays the same where each process runs one request at a time", not moved,
                 f"moved {min(changes, default=0):+.1%} to {max(changes, default=0):+.1%}", f"[−{allowed:.1%}, +{allowed:.1%}]",
                 f"D on /cpu moved more than {allowed:.1%} from its baseline: {moved}")

    for kind, (rps, threads, floor, limit) in e.waiting.items():
        claim = f"{kind}: {threads} threads serve /sync-sleep at least as fast as the pessimistic bound"
        if floor is None:
            claims.skip(claim, f"the CPU limits this run ({limit}), not the threads")
        else:
            claims.check(claim, rps >= floor, f"{rps:,.0f} req/s", f"[{floor:,.0f}, ∞)",
                         f"{kind} on /sync-sleep: {rps:.0f} req/s with {threads} threads, below the pessimistic "
                         f"bound {floor:.0f}")
    for kind, (threads, burned, edge) in e.bytecode_in_threads.items():
        claims.check(f"{kind}: {threads} threads burn at most one core's worth of bytecode on /cpu",
                     burned <= 1 + edge, f"{burned:.2f} cores", f"[0, {1 + edge:.2f}]",
                     f"{kind}: {threads} threads burned {burned:.2f} cores of bytecode on /cpu")

    # Python bytecode in threads keeps one core busy at most (a GIL hand-off overlaps two threads for a moment, so
    # it is allowed the larger of the noise and model.CHANGED); C code that lets the GIL go keeps more than one busy,
    # where there are two cores to run on and other programs left them free.
    most = 1 + max(noise_cpu, model.CHANGED)
    claims.check("A Python loop in two threads keeps at most one core busy", e.bytecode_cores_busy <= most,
                 f"{e.bytecode_cores_busy:.2f} cores", f"[0, {most:.2f}]",
                 f"a Python loop in two threads kept {e.bytecode_cores_busy:.2f} cores busy, more than {most:.2f}")
    claim = "SHA-256 in two threads keeps more than one core busy"
    if e.cores >= 2 and e.in_c_others_share <= model.DISTURBED_SHARE:
        least = max(1.0, e.bytecode_cores_busy) * (1 + noise_cpu)
        claims.check(claim, e.in_c_cores_busy > least, f"{e.in_c_cores_busy:.2f} cores", f"({least:.2f}, ∞)",
                     f"SHA-256 in two threads kept {e.in_c_cores_busy:.2f} cores busy, not more than {least:.2f} "
                     f"(the Python loop kept {e.bytecode_cores_busy:.2f})")
    else:
        claims.skip(claim, f"C code in two threads had {e.cores:g} CPU(s), of which other programs took "
                           f"{e.in_c_others_share:.0%}; it needs a second core to itself")

    # Processes multiply the cores used (up to the cores), and with one core, not at all (the Binder case).
    predicted = [e.predicted_cpu[n] for n in sorted(e.predicted_cpu)]
    shown = ", ".join(f"{n}: {rps:,.0f}" for n, rps in sorted(e.predicted_cpu.items()))
    claims.check("The model never has one more process cost throughput on /cpu", predicted == sorted(predicted),
                 f"predicted req/s by processes, {shown}: rising or flat", "",
                 f"the model has a process cost throughput: {predicted}")
    if e.cores <= 1:
        claims.check("On one core, more processes predict no more on /cpu",
                     max(predicted) <= min(predicted) * (1 + noise_cpu), f"{max(predicted):,.0f} req/s",
                     f"[0, {min(predicted) * (1 + noise_cpu):,.0f}] (the least plus the noise, {noise_cpu:.1%})",
                     f"one core, yet the prediction rises: {predicted}")
    elif e.cores >= 2:
        claims.check("On two cores, two processes predict more than one on /cpu",
                     predicted[1] > predicted[0] * (1 + noise_cpu), f"{predicted[1]:,.0f} req/s",
                     f"({predicted[0] * (1 + noise_cpu):,.0f}, ∞) (one's plus the noise, {noise_cpu:.1%})",
                     f"two processes predicted {predicted[1]:,.0f} req/s, one {predicted[0]:,.0f}: not more by the "
                     f"noise {noise_cpu:.1%} ({predicted})")
    else:
        claims.skip("More processes predict more on /cpu up to the cores", f"{e.cores:g} CPUs: neither one nor two")
    claim = "Two sync workers keep more than one core busy on /cpu"
    if e.cores >= 2 and e.two_workers_others_share <= model.DISTURBED_SHARE:
        # One sync worker is one thread: at most one core. Two kept more than one busy, beyond the noise.
        least = max(1.0, e.cores_used[1]) * (1 + noise_cpu)
        claims.check(claim, e.cores_used[2] > least, f"{e.cores_used[2]:.2f} cores", f"({least:.2f}, ∞)",
                     f"two sync workers kept {e.cores_used[2]:.2f} cores busy on /cpu, not more than {least:.2f}: "
                     f"{e.cores_used}")
    elif e.cores >= 2:
        claims.skip(claim, f"other programs took {e.two_workers_others_share:.0%} of the cores during the run")
    else:
        claims.skip(claim, f"{e.cores:g} CPU: there is no second core to use")
    beyond = [n for n in sorted(e.predicted_cpu) if n >= e.cores]
    claim = "Past the cores, more processes predict no more on /cpu"
    if beyond:
        top, first = max(e.predicted_cpu[n] for n in beyond), e.predicted_cpu[beyond[0]]
        claims.check(claim, top <= first * (1 + noise_cpu), f"{top:,.0f} req/s",
                     f"[0, {first * (1 + noise_cpu):,.0f}]",
                     f"past the cores ({beyond}), the prediction rose from {first:,.0f} to {top:,.0f} req/s")
    else:
        claims.skip(claim, f"no process count here reaches the {e.cores:g} CPU(s)")

    # The GIL: beside a busy thread, / waits at least one switch interval (the waiting thread asks for the GIL only
    # once an interval has passed, and the busy thread never lets it go sooner); beside a busy process it need not.
    claims.check("Beside one busy thread, / waits at least one switch interval", e.threads_1_ms >= e.interval_ms,
                 f"median {e.threads_1_ms:.2f} ms", f"[{e.interval_ms:g}, ∞) ms",
                 f"/ beside one busy thread: {e.threads_1_ms:.2f} ms, interval {e.interval_ms} ms")
    claims.check("Beside one busy process, some request for / takes less than one interval",
                 e.fastest_beside_a_process_ms < e.interval_ms, f"fastest {e.fastest_beside_a_process_ms:.2f} ms",
                 f"[0, {e.interval_ms:g}) ms",
                 f"/ beside one busy process never took less than the interval {e.interval_ms} ms: "
                 f"{e.beside_a_process_ms}")

    # The USL's peak: whether it lands within 15% of the fit, the noise decides (printed with the run's figures).
    # What it cannot fake is a ceiling: no number of workers beats the curve's best by more than the noise, at the
    # check's speed if the machine changed speed between the runs (that shows in D).
    claim = "No number of workers beats the scaling curve's best by more than the noise"
    if e.usl_quiet:
        ceiling = max(e.best_on_curve_rps, e.best_at_check_speed_rps) * (1 + 2 * e.usl_noise + noise_hello)
        claims.check(claim, e.checked_rps <= ceiling, f"{e.checked_rps:,.0f} req/s", f"[0, {ceiling:,.0f}]",
                     f"the checking run did {e.checked_rps:,.0f} req/s, above the curve's best "
                     f"{e.best_on_curve_rps:,.0f} (at the check's speed {e.best_at_check_speed_rps:,.0f}) by more "
                     f"than the noise allows: {ceiling:,.0f}")
    else:
        claims.skip(claim, "other programs disturbed the scaling runs: the check is reported, not judged")

    # nginx, in C, spends less per request than any Python server, by more than the noise, and so does more.
    claim_d, claim_x = ("nginx spends less CPU per request than any Python server",
                        "nginx alone serves hello world faster than the best gunicorn")
    if e.nginx_demand_ms is None:
        reason = f"nginx did not run ({e.nginx_missing})"
        claims.skip(claim_d, reason)
        claims.skip(claim_x, reason)
    else:
        lightest = min(e.python_demands_ms)
        claims.check(claim_d, e.nginx_demand_ms * (1 + noise_hello) < lightest, f"{e.nginx_demand_ms:.4f} ms",
                     f"[0, {lightest / (1 + noise_hello):.4f}) ms (the lightest Python D, less the noise)",
                     f"nginx's D {e.nginx_demand_ms:.4f} ms is not below every Python server's by the noise "
                     f"{noise_hello:.0%}: {e.python_demands_ms}")
        if e.nginx_quiet:
            least = e.best_gunicorn_rps * (1 + noise_hello)
            claims.check(claim_x, e.nginx_rps > least, f"{e.nginx_rps:,.0f} req/s", f"({least:,.0f}, ∞)",
                         f"nginx alone did {e.nginx_rps:,.0f} req/s, the best gunicorn {e.best_gunicorn_rps:,.0f}: "
                         f"not more by the noise {noise_hello:.0%}")
        else:
            claims.skip(claim_x, "other programs disturbed nginx's run or the best gunicorn's")

    claim = "Every exercise's solution passes its check"
    if e.solutions:
        expected = {name: "correct" for name in e.statuses}
        if e.nginx_missing:
            expected["q7"] = "not attempted"  # nothing to check it against
        wrong = {name: status for name, status in e.statuses.items() if status != expected[name]}
        claims.check(claim, not wrong, f"{len(e.statuses) - len(wrong)} of {len(e.statuses)}", "",
                     f"exercises whose solution did not pass: {wrong} (all: {e.statuses})")
    else:
        claims.skip(claim, "this run has no solutions filled in")
    return claims


def check_claims(evidence):
    """Check every claim against this run's bounds and print one line each; raise ClaimsFailed naming any that
    failed, with its values."""
    claims = claims_of(evidence)
    claims.report()
    return claims
