"""Exercises for lesson 04, the five IO models.

`from iolab.lessons.io_models import exercises as ex; ex.q1.check(answer)`.
"""

from iolab import checks

from . import multiplexing, nonblocking


def allow_for_a_busy_machine(exercise, run, delay_ms):
    """Allow what a busy machine added to this run, in both directions, by as much as the run measured it.

    A peer the scheduler ran late makes the wait longer than `delay`. An application
    thread that asked late, or queued for a CPU between two waits, makes it shorter:
    the data arrived while the thread was not waiting. Neither is the IO model's doing.
    """
    late_peer_ms = max(0.0, run.last_sent_ms - delay_ms)
    off_its_waits_ms = max(0.0, run.ready_ms - run.wait_ms)  # from "go" to the last wake-up, not waiting
    late_ms = late_peer_ms + off_its_waits_ms
    exercise.allowance, exercise.allowance_text = 0.0, ""
    if late_ms >= 0.5:  # less is timing, which the tolerance covers
        exercise.allowance = late_ms
        exercise.allowance_text = (f"(on this run the peer sent {late_peer_ms:.1f} ms late and this thread "
                                   f"spent {off_its_waits_ms:.1f} ms outside its waits)")


class BusyLoopCpu(checks.PredictThenMeasure):
    prompt = ("The non-blocking program spins on recv() until its peer sends after `delay` ms. "
              "Predict how many ms of CPU it demands (CPU time used, plus time queued for a CPU on a busy machine).")
    rel_tol = 0.2
    unit = "ms"
    quantity = "the busy loop's CPU demand"
    off_text = "Between EAGAINs the loop never sleeps: what does that make its CPU demand, compared to its waiting time?"
    correct_text = "Every millisecond of waiting was a millisecond of a whole core, spent asking 'anything yet?'."
    hint_text = ["How long does the loop run? Does it ever sleep?",
                 "A thread that never sleeps wants a CPU for its whole wall-clock time."]
    solution_text = "About `delay` ms: the loop never sleeps, so it wants a CPU for as long as it waits."

    def measure(self, delay_ms=200, payload_bytes=4096):
        run = nonblocking.run(delay_ms, payload_bytes)
        allow_for_a_busy_machine(self, run, delay_ms)
        # A shared machine hands the spinning thread only part of a core; the rest it
        # spends queued, still wanting one. Where the kernel does not say, count the CPU alone.
        return run.cpu_ms + (run.queued_ms or 0.0)


class MultiplexedWait(checks.PredictThenMeasure):
    prompt = ("One thread serves 4 connections with epoll; their peers send at delay/4, delay/2, 3*delay/4 and delay. "
              "Predict the total time (ms) the thread spends asleep in epoll_wait.")
    rel_tol = 0.15
    unit = "ms"
    quantity = "the time asleep in epoll_wait"
    off_text = "One epoll_wait sleeps for every socket at once: the waits do not add up per socket."
    correct_text = "Four connections cost one thread the wait of the slowest: that is what Tornado's IOLoop relies on."
    hint_text = ["Does the thread wait for each socket in turn, or for all of them at once?",
                 "It wakes at delay/4, reads, sleeps again until delay/2, ... When does it wake for the last time?"]
    solution_text = "About `delay`: the sleeps are consecutive stretches between arrivals, and they end at the last one."

    def measure(self, delay_ms=200, payload_bytes=4096):
        run = multiplexing.run(delay_ms, payload_bytes, peers=4, mechanism="epoll")
        allow_for_a_busy_machine(self, run, delay_ms)
        return run.wait_ms


class SignalBlocksWhen(checks.ChoiceExercise):
    prompt = "In signal-driven IO, in which phase is the application blocked: 'wait', 'copy', 'both' or 'neither'?"
    choices = {
        "wait": "after fcntl(O_ASYNC) returns, the application carries on with its own work until the signal comes.",
        "copy": "",
        "both": "the wait costs the application nothing: the kernel interrupts it with SIGIO only once the data is there.",
        "neither": "someone still has to call recv(), and that call blocks while the kernel copies: whose call is it?",
    }
    correct = "copy"
    correct_text = "SIGIO only says 'ready'; the recv() that copies still runs on the application's thread."
    hint_text = ["What does the application do between arming SIGIO and the signal's arrival?",
                 "What does the signal handler call, and on whose thread?"]
    solution_text = ("'copy': the wait is the kernel's; the handler's recv() blocks for the copy. "
                     "Only asynchronous IO frees both.")


class HighestSelectFd(checks.NumberExercise):
    prompt = "What is the highest descriptor NUMBER select() can watch with glibc's fd_set?"
    expected = 1023
    rel_tol, abs_tol = 0.0, 0.0
    mistakes = {
        1024: "is FD_SETSIZE, the number of bits in an fd_set; bits are numbered from 0.",
        1000: "is a round number, not a bitmap size: look at FD_SETSIZE.",
    }
    too_high_text = "that bit lies past the end of the fd_set bitmap."
    too_low_text = "select() can go higher than that."
    hint_text = ["An fd_set is a bitmap with one bit per descriptor number.",
                 "It has FD_SETSIZE = 1024 bits. Which is the last?"]
    solution_text = ("1023: bits 0..1023 of a 1024-bit fd_set. Descriptor 1024 raises ValueError in Python "
                     "(memory corruption in C).")


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
