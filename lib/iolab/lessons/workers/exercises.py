"""Exercises for lesson 06, workers, threads and processes.

`from iolab.lessons.workers import exercises as ex`.
"""

import math
import numbers

from iolab import checks

from . import model, sweep

RETRIES = 2  # a check whose run other programs disturbed runs it again this many times before it gives up


def _number(answer):
    """A finite real number, or None for strings, booleans and the like."""
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not math.isfinite(answer):
        return None
    return float(answer)


def lost_to_others(run):
    """At most how many req/s other programs cost `run`: the cores' time they took during it, at D (the server's
    CPU per request) for each request it could have served, over the client's window. The time they took is read
    over a span that holds the client's start too, so this is an upper bound (0 where the run did not keep it)."""
    taken_s = run.others_share * run.window_s * run.cores
    if taken_s <= 0 or not run.app_demand_ms > 0 or not run.duration_s > 0:
        return 0.0
    return taken_s / (run.app_demand_ms / 1000) / run.duration_s


class MeasuredThroughput:
    """Mixed into a PredictThenMeasure (and not an exercise itself, so not bound to a q): a prediction of a
    configuration's throughput on a quiet machine, checked by running it.

    A run that other programs disturbed is run again; if every try was disturbed, the check says so and judges
    the prediction against what that run's own measured demands allow, since that is what a quiet machine gives.
    A try they disturbed less than that still lost what they took: a prediction above it is allowed the requests
    their time could have served, up to what the run's own demands allow.
    """

    rel_tol = 0.15
    unit = "req/s"
    config = None  # the sweep.Config the question is about
    handler = "cpu"

    def measure(self, lab=None, measured=None, disturbed_share=None, bound=None, lost=0.0, run_ms=None,
                given_ms=None):
        """The throughput to judge against: `lab` runs it; `measured` (with `disturbed_share`, `bound`, the bound
        from its own demands, `lost`, the req/s other programs' time could have served, and `run_ms` and
        `given_ms`, the CPU per request the answer divides by as the run spent it and as the question gave it)
        stands in for a run made elsewhere."""
        self.quantity = "the throughput"
        if lab is not None:
            cell = lab.find(self.config, self.handler) or lab.measure(self.config, [self.handler])[0]
            for _ in range(RETRIES):
                if cell.run.others_share <= model.DISTURBED_SHARE:
                    break
                cell = lab.measure(self.config, [self.handler], again=True)[0]
            measured, disturbed_share, bound = cell.rps, cell.run.others_share, cell.explained.rps
            lost = lost_to_others(cell.run)
            baseline = lab.demands(self.config, self.handler)
            run_ms = self.per_request_ms(cell.run.app_demand_ms, cell.run.client_demand_ms)
            given_ms = self.per_request_ms(baseline.app_ms, baseline.client_ms)
            self.allow_for_the_client(lab)
        # The answer divides by the CPU per request the question gave, from the baseline's run. Where this run spent
        # more (a neighbour's interrupts land on its CPU clock where the kernel does not count them apart) or less, it
        # is judged as it would have run at the CPU per request the question gave: a CPU-bound rate goes as 1 / that.
        scale, given, spent = 1.0, "", ""
        if run_ms and given_ms and run_ms > 0 and given_ms > 0:
            scale = run_ms / given_ms
            if f"{run_ms:.3g}" != f"{given_ms:.3g}":
                given = f" at the {self.per_request_text} you were given, {given_ms:.3g} ms"
                spent = f"the run spent {run_ms:.3g} ms a request"
        if disturbed_share is None or disturbed_share <= model.DISTURBED_SHARE:
            if given:
                self.quantity += f"{given} ({spent} and gave {measured:,.1f} req/s)"
            measured, bound, lost = measured * scale, None if bound is None else bound * scale, lost * scale
            self.allow_for_others(measured, disturbed_share, bound, lost)
            return measured
        self.quantity = (
            f"the throughput this run's own demands allow{given} (other programs took {disturbed_share:.0%} of the"
            f" cores on every try, {spent + ', ' if spent else ''}and the run gave {measured:,.0f} req/s, so the run"
            " itself is not judged)"
        )
        return bound * scale

    # The CPU per request the question's answer divides by: the server's D, or more where the answer adds more.
    per_request_text = "D"

    def per_request_ms(self, app_ms, client_ms):
        return app_ms

    def allow_for_others(self, measured, disturbed_share, bound, lost):
        """Other programs can only slow a run: a prediction above it is allowed what their time could have served
        (`lost`), and no more than the gap to what its own demands allow (`bound`)."""
        if bound is None or not lost or self.prediction is None or self.prediction <= measured:
            return
        gap = bound - measured
        allowed = min(lost, gap)
        if allowed <= 0:
            return
        self.allowance += allowed
        took = "" if disturbed_share is None else f" {disturbed_share:.1%} of the cores"
        said = (f"(other programs took{took} around the run, time enough for {lost:,.0f} req/s; its own demands"
                f" allow {bound:,.0f})")
        self.allowance_text = f"{self.allowance_text} {said}".strip() if self.allowance_text else said

    def allow_for_the_client(self, lab):
        """Room for what the question leaves out on this lab's machine; none by default."""


class DemandOfCpuWork(checks.PredictThenMeasure):
    prompt = (
        "One gunicorn sync worker answers /cpu?ms=5, which burns 5 ms of CPU. "
        "Predict D, the worker's CPU per request, in ms."
    )
    unit = "ms"
    quantity = "D"
    # The server's own part of D (parse, route, answer, close) is judged, not D as a whole: a tolerance on D would
    # let the handler's 5 ms alone pass. A part within this factor of the measured part is right.
    FACTOR = 3
    correct_text = "The handler's own 5 ms, plus a fraction of a millisecond to parse, answer and close."
    hint_text = [
        "What does /cpu?ms=5 do with the CPU?",
        "Add what a hello world costs the same server (a few tenths of a millisecond).",
    ]
    solution_text = "A little over 5 ms: the 5 ms the handler burns plus the server's cost of one request (about 0.3-0.6 ms)."

    def measure(self, lab=None, measured=None, cpu_ms=None):
        return measured if lab is None else lab.demands(sweep.Config("sync"), "cpu").app_ms

    def judge(self, answer, lab=None, measured=None, cpu_ms=None, hello_ms=None):
        value = _number(answer)
        if value is None:
            return False, f"the prediction should be a number in ms, got {answer!r}."
        burned = cpu_ms if lab is None else lab.cpu_ms
        self.prediction = value
        self.measured = demand = float(self.measure(lab=lab, measured=measured))
        server_part, yours = max(demand - burned, 0.01), value - burned
        # The hint's way to the server's part is a hello world's D on the same worker: measured in this run, it is
        # right too. Other programs on the cores stretch both parts alike, so neither reference is the only one.
        hello = hello_ms if lab is None else lab.demands(sweep.Config("sync"), "hello").app_ms
        low, high = (min(server_part, hello), max(server_part, hello)) if hello else (server_part, server_part)
        both = (f"you predicted {value:.3g} ms, D measured {demand:.3g} ms: {burned:g} ms burned by the handler and "
                f"{demand - burned:.2f} ms of the server's own" + (f" (a hello world's D: {hello:.2f} ms)" if hello else ""))
        if yours <= 0:
            return False, (f"{both}. {value:g} ms is only what the handler burns (or less): the server also reads the "
                           "request, routes it, writes the answer and closes the connection, and that costs CPU too.")
        if low / self.FACTOR <= yours <= high * self.FACTOR:
            return True, f"{both}; your {yours:.2f} ms for the server is within a factor {self.FACTOR}. {self.correct_text}"
        off = "high" if yours > high else "low"
        return False, (f"{both}; your {yours:.2g} ms for the server's part is more than {self.FACTOR} times too {off}. "
                       "How much does a request cost a server that does nothing else (hello world)?")


class FourThreadsOnCpuWork(MeasuredThroughput, checks.PredictThenMeasure):
    prompt = (
        "gunicorn runs one gthread worker with 4 threads; 16 users ask for /cpu?ms=5 as fast as they can. "
        "Predict the throughput, in requests per second."
    )
    config = sweep.Config("gthread", 1, 4)
    off_text = "Four threads share one process, and one GIL: only one of them runs Python at a time."
    correct_text = "The threads take turns at the GIL, so the process does what one thread would: about 1 / D."
    hint_text = [
        "How many threads of one Python process can run Python code at the same moment?",
        "So the process serves at most one request's CPU at a time: what is one request's CPU (D)?",
    ]
    solution_text = "About 1 / D, with D a little over 5 ms: some 170-190 req/s, the same as with one thread."

    def allow_for_the_client(self, lab):
        if lab.cores <= 1:
            # On one core (or less, under a container's CPU quota) the load client's CPU takes turns with the
            # server's as well: that is the CPU's doing, not the GIL's, so the question's 1 / D is allowed the
            # difference to what the CPUs allow, cores / (D + the client's D).
            demands = lab.demands(sweep.Config("gthread"), "cpu")
            self.allowance = 1000 / demands.app_ms - lab.cores * 1000 / (demands.app_ms + demands.client_ms)
            self.allowance_text = f"(on {lab.cores:g} CPU the load client's CPU took its turns too)"


class GilDelay(checks.ChoiceExercise):
    prompt = (
        "threaded_app runs one /cpu request that burns CPU for a long time. In another of its threads, you ask for /, "
        "which needs almost no CPU. How long does / take: 'idle' (a fraction of a millisecond, as in an idle "
        "process), 'interval' (a few times sys.getswitchinterval(), 5 ms) or 'cpu' (until the /cpu request is done)?"
    )
    choices = {
        "idle": "the CPU-bound thread holds the GIL, and / needs it to run any Python at all.",
        "interval": "",
        "cpu": "CPython does not let one thread keep the GIL for good:"
        " a thread that waits asks for it after the switch interval.",
    }
    correct = "interval"
    correct_text = (
        "The thread that wants the GIL waits one switch interval, then asks the holder to drop it; / needs it again "
        "after each system call that let it go, so a request pays one or a few intervals."
    )
    hint_text = [
        "The CPU-bound thread never blocks, so it never gives the GIL away by itself. What makes it let go?",
        "A waiting thread asks for the GIL after sys.getswitchinterval() seconds.",
    ]
    solution_text = "'interval': / waits for the GIL one switch interval at a time, usually one to a few of them (5-20 ms)."


class TwoProcessesOnOneCore(MeasuredThroughput, checks.PredictThenMeasure):
    prompt = (
        "Two gunicorn sync workers, the clients and everything else run on one core only. 16 users ask for /cpu?ms=5. "
        "Predict the throughput, in requests per second."
    )
    config = sweep.Config("sync", 2)
    per_request_text = "D + the client's D"

    def per_request_ms(self, app_ms, client_ms):
        return app_ms + client_ms

    off_text = "Two processes need two cores to run at once; on one core they take turns, and the client takes its turn too."
    correct_text = "One core does one request's CPU at a time, the client's included: 1 / (D + the client's D)."
    hint_text = [
        "Processes escape the GIL, but can they escape the number of cores?",
        "On one core, every party's CPU for a request adds up: the worker's D and the client's.",
    ]
    solution_text = (
        "1 / (D + the client's D), the same as one worker: about 160-180 req/s. A second process needs a second core."
        " (Under a CPU quota of less than one CPU, that times the quota: half as much on half a CPU.)"
    )


class BestCellForWaiting(checks.Exercise):
    prompt = (
        "Of the matrix's cells with one thread per worker (sync) or one worker, which gives the most throughput on "
        "/sync-sleep, a handler that mostly waits? Answer as a tuple (workers, threads)."
    )
    correct_text = "Waiting costs no CPU, so what counts is how many requests can wait at once."
    hint_text = [
        "A request asleep in /sync-sleep holds its thread, but not the CPU or the GIL.",
        "So throughput is (requests held at once) / (the wait), until the CPU fills up.",
        "Then check what caps it: one process's GIL (g / D) for threads, the cores for processes.",
    ]
    solution_text = (
        "The cell that holds the most requests at once, k, for X = k / (Z + D): usually one worker with the most "
        "threads, unless its GIL (g / D) caps it below what the sync workers reach on the cores."
    )
    not_attempted_text = "set the answer to a tuple (workers, threads) and run the check again."

    def judge(self, answer, measured=None, connections=None, tolerance=model.TOLERANCE):
        """`measured` maps each cell asked about (workers, threads) to what it did on /sync-sleep; `connections` to
        the connections each of its workers held, where read. A cell within `tolerance` of the best is as good: the
        notebook passes twice the most these runs missed their predictions by, since a prediction off by e either
        way can swap two cells 2e apart."""
        try:
            workers, threads = answer
        except (TypeError, ValueError):
            return False, f"the answer should be a tuple (workers, threads), got {answer!r}."
        if not measured:
            return False, "there is no matrix to check against: run the cells above first."
        if (workers, threads) not in measured:
            return False, f"{answer!r} is not one of the cells asked about: {sorted(measured)}."
        best_cell = max(measured, key=measured.get)
        mine, best = measured[workers, threads], measured[best_cell]
        said = f"({workers}, {threads}) did {mine:,.0f} req/s, the best cell {best_cell} {best:,.0f}"
        if mine >= (1 - tolerance) * best:
            return True, f"{said} (within {tolerance:.0%}). {self.correct_text}"
        spread = (connections or {}).get((workers, threads)) or ()
        held = sum(min(threads, n) for n in spread) if spread else workers * threads
        why = f"it held {held} request{'s' if held != 1 else ''} at once"
        if spread and threads > 1 and held < workers * threads:
            why += (f", not {workers * threads}: its workers took {', '.join(map(str, spread))} connections, and a "
                    "thread without a connection holds nothing")
        return False, f"{said}: {why}."


class WhatBendsTheCurveDown(checks.ChoiceExercise):
    prompt = (
        "Past its peak, the USL curve falls as workers are added. Which term makes it fall: "
        "'sigma' (contention) or 'kappa' (coherency)?"
    )
    choices = {
        "sigma": "σ alone only flattens the curve: it approaches X(1) / σ and never turns down.",
        "kappa": "",
    }
    correct = "kappa"
    correct_text = "κw(w - 1) grows with the square of w: every pair of workers costs a little, and pairs outgrow workers."
    hint_text = "Set κ = 0 in X(w) = X(1) w / (1 + σ(w - 1)): what does X do as w grows without bound?"
    solution_text = "'kappa': with κ = 0 the curve rises to X(1) / σ and stays there; the κw(w - 1) term is what brings it down."


def nginx_alone_rps(nginx_ms, client_ms, cores):
    """What nginx alone can do on `cores` CPUs: the cores shared with its client, cores / (nginx's D + the client's
    D), and at most what its one worker does on one core, 1 / nginx's D. (Its client processes, one per CPU, each
    spend only the client's D per request: they are never the tighter bound.)"""
    return 1000 * min(cores / (nginx_ms + client_ms), 1 / nginx_ms)


class NginxOverGunicorn(checks.PredictThenMeasure):
    prompt = (
        "nginx alone answers hello world with a small fraction of the CPU per request that any Python server spends. "
        "How many times the best gunicorn configuration's throughput will it do on this machine?"
    )
    # The prediction takes nginx's D from what it spent in front of Tornado, which is only a guess at what it
    # spends alone: half either way. What the exercise must keep out is an order of magnitude: the ratio of the
    # servers' D.
    rel_tol = 0.5
    unit = "x"
    quantity = "the ratio"
    # Above this many times the measured ratio, the answer is the ratio of the servers' own demands: it forgets the
    # client, which spends as much per request whatever answers it.
    FORGOT_THE_CLIENT = 2.5
    off_text = "Both fill the same cores: with the server's D and the client's D for every request."
    correct_text = "On one machine the client's CPU per request stays, so the ratio is far below the ratio of the D's."
    hint_text = [
        "Both setups are limited by the cores: cores / (the server's D + the client's D).",
        "nginx's own D in front of Tornado is printed above; by itself it does only the client's side of that work.",
    ]
    solution_text = (
        "nginx fills the CPUs the best gunicorn run kept busy, req/s x (D + the client's D), at nginx's D + the"
        " client's D per request, and at most 1 / nginx's D for its one worker; divide by the best gunicorn cell's"
        " req/s. With nginx's D about half what it spent in front of Tornado and the same client's D as gunicorn's,"
        " that is several times, not the 20-30 times between the servers' D, since the client costs as much whoever"
        " answers."
    )

    def measure(self, measured=None, **_):
        return measured

    def judge(self, answer, measured=None, nginx_ms=None, client_ms=None, shown_client_ms=None, cores=None):
        """`measured`: nginx alone's req/s over the best gunicorn cell's, as run. With nginx's run's own figures
        (`nginx_ms`, its D; `client_ms`, its client's D), the client's D shown before the question
        (`shown_client_ms`, the best gunicorn cell's) and the `cores` the runs had, the ratio is judged as it would
        have been with the client's D the question gave: the question cannot know that its client spends less (or
        more) per request against nginx than against gunicorn, only nginx's D and the cores."""
        if measured is None:
            return False, "nginx has not run on this machine, so there is no ratio to check against."
        target, note, self.quantity = measured, "", "the ratio"
        if None not in (nginx_ms, client_ms, shown_client_ms, cores) and nginx_ms > 0:
            target = measured * (nginx_alone_rps(nginx_ms, shown_client_ms, cores)
                                 / nginx_alone_rps(nginx_ms, client_ms, cores))
            self.quantity = "with the client's D the question gave, the ratio"
            note = (f" (nginx alone did {measured:.3g}x the best gunicorn on {cores:g} CPU(s); its client spent"
                    f" {client_ms:.3g} ms per request, against {shown_client_ms:.3g} ms for gunicorn's, and nginx's"
                    f" own D was {nginx_ms:.3g} ms)")
        value = _number(answer)
        if value is not None and value > self.FORGOT_THE_CLIENT * target:
            self.prediction, self.measured = value, target
            return False, (f"you predicted {value:.3g}x, {self.quantity} {target:.3g}x{note}: that is more like the "
                           "ratio of the servers' own CPU per request. The load client spends its part for every "
                           "request whoever answers, and it shares the cores.")
        correct, message = super().judge(answer, measured=target)
        return correct, message + note if note and value is not None else message


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
