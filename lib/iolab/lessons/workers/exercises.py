"""Exercises for lesson 06, workers, threads and processes.

`from iolab.lessons.workers import exercises as ex`.
"""

from iolab import checks

from . import model, sweep


def undisturbed_rps(cell):
    """The cell's throughput; if other programs took a share of the cores even on its last try, what its own
    demands allow instead (the model's bound with this run's D), since the prediction is for a quiet machine."""
    if cell.run.others_share <= model.DISTURBED_SHARE:
        return cell.rps
    print(f"(Other programs took {cell.run.others_share:.0%} of the cores during this run, which gave "
          f"{cell.rps:,.0f} req/s; the check uses {cell.explained.rps:,.0f}, what its measured demands allow.)")
    return cell.explained.rps


class DemandOfCpuWork(checks.PredictThenMeasure):
    prompt = (
        "One gunicorn sync worker answers /cpu?ms=5, which burns 5 ms of CPU. "
        "Predict D, the worker's CPU per request, in ms."
    )
    rel_tol = 0.25
    unit = "ms"
    quantity = "D"
    off_text = "The handler burns exactly what it is asked for; the server adds its own part for HTTP."
    correct_text = "The handler's own 5 ms, plus a fraction of a millisecond to parse, answer and close."
    hint_text = [
        "What does /cpu?ms=5 do with the CPU?",
        "Add what a hello world costs the same server (a few tenths of a millisecond).",
    ]
    solution_text = "A little over 5 ms: the 5 ms the handler burns plus the server's cost of one request (about 0.3-0.6 ms)."

    def measure(self, lab):
        return lab.demands(sweep.Config("sync"), "cpu").app_ms


class FourThreadsOnCpuWork(checks.PredictThenMeasure):
    prompt = (
        "gunicorn runs one gthread worker with 4 threads; 16 users ask for /cpu?ms=5 as fast as they can. "
        "Predict the throughput, in requests per second."
    )
    rel_tol = 0.15
    unit = "req/s"
    quantity = "the throughput"
    off_text = "Four threads share one process, and one GIL: only one of them runs Python at a time."
    correct_text = "The threads take turns at the GIL, so the process does what one thread would: about 1 / D."
    hint_text = [
        "How many threads of one Python process can run Python code at the same moment?",
        "So the process serves at most one request's CPU at a time: what is one request's CPU (D)?",
    ]
    solution_text = "About 1 / D, with D a little over 5 ms: some 170-190 req/s, the same as with one thread."

    def measure(self, lab):
        measured = undisturbed_rps(lab.measure(sweep.Config("gthread", 1, 4), ["cpu"])[0])
        if lab.cores <= 1:
            # On one core (or less, under a container's CPU quota) the load client's CPU takes turns with the
            # server's as well: that is the CPU's doing, not the GIL's, so the question's 1 / D is allowed the
            # difference to what the CPUs allow, cores / (D + the client's D).
            demands = lab.demands(sweep.Config("gthread"), "cpu")
            self.allowance = 1000 / demands.app_ms - lab.cores * 1000 / (demands.app_ms + demands.client_ms)
            self.allowance_text = (f"(on {lab.cores:g} CPU the load client's CPU took its turns too)")
        return measured


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


class TwoProcessesOnOneCore(checks.PredictThenMeasure):
    prompt = (
        "Two gunicorn sync workers, the clients and everything else run on one core only. 16 users ask for /cpu?ms=5. "
        "Predict the throughput, in requests per second."
    )
    rel_tol = 0.15
    unit = "req/s"
    quantity = "the throughput"
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

    def measure(self, lab):
        return undisturbed_rps(lab.measure(sweep.Config("sync", 2), ["cpu"])[0])


class BestCellForWaiting(checks.Exercise):
    prompt = (
        "Which workers x threads of the matrix gives the most throughput on /sync-sleep, a handler that mostly "
        "waits? Answer as a tuple (workers, threads)."
    )
    correct_text = "Waiting costs no CPU, so what counts is how many requests can wait at once: workers x threads."
    hint_text = [
        "A request asleep in /sync-sleep holds its thread, but not the CPU or the GIL.",
        "So throughput is (requests held at once) / (the wait), until the CPU fills up.",
    ]
    solution_text = "The cell with the most workers x threads (as long as the CPU keeps up): k requests wait at once, X = k / Z."
    not_attempted_text = "set the answer to a tuple (workers, threads) and run the check again."

    def judge(self, answer, predicted=None):
        """`predicted` maps each cell (workers, threads) to the model's throughput on /sync-sleep."""
        try:
            workers, threads = answer
        except (TypeError, ValueError):
            return False, f"the answer should be a tuple (workers, threads), got {answer!r}."
        if not predicted:
            return False, "there is no matrix to check against: run the cells above first."
        if (workers, threads) not in predicted:
            return False, f"{answer!r} is not a cell of the matrix: {sorted(predicted)}."
        best_cell = max(predicted, key=predicted.get)
        mine, best = predicted[workers, threads], predicted[best_cell]
        if mine >= 0.9 * best:
            return True, self.correct_text
        return False, (
            f"({workers}, {threads}) holds {workers * threads} requests at once: the model gives it {mine:,.0f} req/s, "
            f"and {best_cell} {best:,.0f}."
        )


class WhatBendsTheCurveDown(checks.ChoiceExercise):
    prompt = (
        "Past its peak, the USL curve falls as workers are added. Which term makes it fall: "
        "'sigma' (contention) or 'kappa' (coherency)?"
    )
    choices = {
        "sigma": "σ alone only flattens the curve: it approaches λ / σ and never turns down.",
        "kappa": "",
    }
    correct = "kappa"
    correct_text = "κ N (N - 1) grows with the square of N: every pair of workers costs a little, and pairs outgrow workers."
    hint_text = "Set κ = 0 in X(N) = λN / (1 + σ(N - 1)): what does X do as N grows without bound?"
    solution_text = "'kappa': with κ = 0 the curve rises to λ / σ and stays there; the κN(N - 1) term is what brings it down."


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
