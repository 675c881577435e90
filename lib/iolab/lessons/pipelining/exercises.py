"""Exercises for lesson 08, pipelining.

`from iolab.lessons.pipelining import exercises as ex; ex.q1.check(answer)`.
"""

import math
import numbers

from iolab import checks


def _number(answer):
    """A finite real number, or None (strings and booleans only look like one), as checks judges them."""
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not math.isfinite(answer):
        return None
    return float(answer)


class LadderOrder(checks.PredictThenMeasure):
    prompt = (
        "Before the ladder runs: put tornado_app, aiohttp_app and 'uvloop + httptools' in order from the most CPU "
        "per request (D) to the least, and predict how many times D of the first is D of the last: "
        "answer (['first', 'second', 'third'], ratio)."
    )
    servers = ("tornado_app", "aiohttp_app", "uvloop + httptools")
    unit = "times"
    quantity = "D of the first over D of the last"
    # A prediction of an order of magnitude, judged as one: within a factor of 2 of what this run measured.
    factor = 2.0
    correct_text = (
        "The spread is the Python run per request: Tornado parses and builds request and response objects, headers,"
        " a route and a log line in Python; aiohttp parses in C (llhttp) but builds the rest in Python; a bare"
        " Protocol on uvloop and httptools leaves little Python but the route."
    )
    off_text = (
        "What does each run per request besides the read and the write it cannot avoid? A framework runs a hundred"
        " microseconds or more of Python; a parser and a loop in C, a few."
    )
    hint_text = ["Every server pays a read and a write per request: a few microseconds of kernel time each.",
                 "The difference is the Python per request: where does each parse (Python or C), and does it build a"
                 " framework's request and response objects?"]
    solution_text = (
        "(['tornado_app', 'aiohttp_app', 'uvloop + httptools'], 16): Tornado's Python costs over a hundred"
        " microseconds a request, aiohttp's (its parser in C) tens, the bare Protocol on uvloop and httptools about"
        " ten; any ratio within a factor of 2 of the measured one is right."
    )

    def measure(self, demands_us):
        """`demands_us`: {server: D in µs} of the ladder that ran; the three servers' order and first-over-last ratio."""
        order = sorted(self.servers, key=lambda name: -demands_us[name])
        return order, demands_us[order[0]] / demands_us[order[-1]]

    def judge(self, answer, demands_us):
        if not (isinstance(answer, (tuple, list)) and len(answer) == 2 and isinstance(answer[0], (tuple, list))):
            return False, f"answer (['first', 'second', 'third'], ratio), most CPU per request first; got {answer!r}."
        order, ratio = [str(name) for name in answer[0]], _number(answer[1])
        if sorted(order) != sorted(self.servers) or ratio is None or ratio <= 0:
            return False, f"name each of {list(self.servers)} once, then a positive ratio; got {answer!r}."
        measured_order, measured = self.measure(demands_us)
        self.prediction, self.measured = ratio, measured
        said = ", ".join(f"{name} {demands_us[name]:.3g} µs" for name in measured_order)
        if order != measured_order:
            return False, f"this run measured, most CPU first: {said}. {self.off_text}"
        both = f"you predicted {ratio:.3g} times, {self.quantity} measured {measured:.3g} ({said})"
        if measured / self.factor <= ratio <= measured * self.factor:
            return True, f"{both}: the order, and within a factor of {self.factor:g}. {self.correct_text}"
        off = "high" if ratio > measured else "low"
        return False, f"{both}: the order is right, the ratio more than a factor of {self.factor:g} too {off}."


class SyscallsAtDepth16(checks.PredictThenMeasure):
    prompt = (
        "The pipelining server reads a batch of 16 requests with one system call and writes the 16 answers back "
        "with one more. Predict its system calls per request at depth 16, before the run counts them."
    )
    depth = 16
    # Judged per batch of 16: at least its read and its write (2), at most those, one epoll_wait (3) and whatever
    # more this run counted, give or take half a call for the edges of the counted window.
    at_least_per_batch = 2
    designed_at_most_per_batch = 3
    slack_per_batch = 0.5
    unit = "calls per request"
    quantity = "the count"
    off_text = "Count per batch: how many reads, how many writes, and how many requests share them?"
    forgot_the_write = (
        "is one call per batch of 16: it counts the read that brings the requests and forgets the write that"
        " sends the 16 answers back."
    )
    correct_text = (
        "Two calls carry a whole batch, so each request pays 2/16. The rest is epoll_wait, which many"
        " connections ready at once share."
    )
    hint_text = ["Per batch: one read brings all 16 requests, one write sends all 16 answers.",
                 "Then divide by the 16 requests of the batch."]
    solution_text = "2 / 16 = 0.125: a read and a write per batch of 16, plus a share of epoll_wait."

    def measure(self, measured):
        # Without strace, the count the design promises stands in for the measurement (and the check says so).
        return 2 / 16 if measured is None else measured

    def judge(self, answer, measured=None):
        value = _number(answer)
        if value is None:
            return False, f"the prediction should be a number of {self.unit}, got {answer!r}."
        self.prediction = value
        self.measured = self.measure(measured)
        per_batch = value * self.depth
        low = self.at_least_per_batch - self.slack_per_batch
        high = max(self.designed_at_most_per_batch, self.measured * self.depth) + self.slack_per_batch
        if measured is None:
            source = ("strace could not count here, so your prediction is judged against the design's count, not a"
                      " measurement: 2/16 (a read and a write per batch), up to 3/16 with an epoll_wait per batch")
        else:
            source = f"strace counted {self.measured:.3g} ({self.measured * self.depth:.2g} per batch of 16)"
        both = f"you predicted {value:.3g} {self.unit} ({per_batch:.2g} per batch of 16); {source}"
        if low <= per_batch <= high:
            return True, f"{both}. {self.correct_text}"
        if abs(per_batch - 1) <= self.slack_per_batch:
            return False, f"{value:.3g} {self.forgot_the_write} ({source}.)"
        off = "high" if per_batch > high else "low"
        return False, f"{both}: too {off}. {self.off_text}"


class WritesPerResponse(checks.NumberExercise):
    prompt = (
        "The same server with --write per-response calls transport.write once for every answer. "
        "At depth 16, how many write system calls does it make per request?"
    )
    expected = 1.0
    rel_tol = 0.1
    unit = "writes per request"
    mistakes = {1 / 16: "is the batched server's figure: per-response writes each answer on its own."}
    too_high_text = "each answer is written once: no more than one write per request."
    too_low_text = "every answer gets a write of its own, whatever the depth."
    hint_text = "transport.write sends at once when nothing is queued before it: one write, one system call."
    solution_text = "1: each transport.write is a write (or send) system call, one per answer."


class OneProcessCeiling(checks.PredictThenMeasure):
    prompt = (
        "From D, the server's CPU per request at depth 16 (in microseconds, printed above), how many requests "
        "per second can one Python process serve at most, with a whole core to itself?"
    )
    rel_tol = 0.05
    unit = "req/s"
    quantity = "1 / D"
    off_text = "One process is one thread on one core: it is busy D per request, however many cores the machine has."
    correct_text = "The utilization law: U = X·D can be at most 1 for one thread, so X ≤ 1/D."
    hint_text = ["The utilization law: U = X × D.", "One thread's U is at most 1. Mind the units: D is in µs."]
    solution_text = "1e6 / D_us: one core's second divided by the CPU each request needs."

    def measure(self, demand_us):
        return 1e6 / demand_us


class LastAnswerBehindAWait(checks.PredictThenMeasure):
    prompt = (
        "A batch of 8 requests arrives in one read: /async-sleep?ms=300 first, then 7 instant hello worlds. "
        "Predict, in ms from the write, when the last of the 8 answers arrives."
    )
    rel_tol = 0.2
    unit = "ms"
    quantity = "the last answer"
    off_text = "The 7 answers are ready at once, but they may not leave before the answer ahead of them."
    correct_text = "Head-of-line blocking: ready answers wait for the one ahead of them, HTTP/1.1's order rule."
    hint_text = ["When are the 7 hello worlds computed? When may they be sent?",
                 "HTTP/1.1 answers in the order the requests came."]
    solution_text = "About 300 ms: the wait ends, and its answer and the 7 behind it leave together."

    def measure(self, last_ms):
        return last_ms


class WhatHttp2Did(checks.ChoiceExercise):
    prompt = (
        "Browsers gave HTTP/1.1 pipelining up. What did HTTP/2 do instead: 'multiplexing' (many streams on one "
        "connection, each answer in frames tagged with its stream, in any order), 'more connections', or "
        "'deeper pipelines'?"
    )
    choices = {
        "multiplexing": "",
        "more connections": "that is what browsers did under HTTP/1.1 (six per host), and what HTTP/2 set out to end.",
        "deeper pipelines": "a deeper pipeline only makes the line longer: one slow answer still holds all behind it.",
    }
    correct = "multiplexing"
    correct_text = (
        "Frames carry a stream id, so a slow answer no longer holds the others back in HTTP. TCP still delivers"
        " bytes in order, so one lost packet stalls every stream: HTTP/3 moved to QUIC over UDP for that."
    )
    hint_text = "What made pipelining fragile? A slow answer at the head of the line. What removes the line?"
    solution_text = "'multiplexing': independent streams, answers in any order, on one connection."


class PerBatchOverPerRequest(checks.PredictThenMeasure):
    prompt = (
        "From the two D's at depth 16 (pipeline_app's per request, pipeline_batch_app's per batch), how many times "
        "more requests per second can the batch server serve on one core?"
    )
    rel_tol = 0.05
    unit = "times"
    quantity = "the ratio of the two 1 / D"
    off_text = "One core serves at most 1 / D requests a second: compare the two ceilings, not the two D's."
    correct_text = (
        "The ceilings go as 1 / D, so their ratio is D per request over D per batch: what the batch path saves is"
        " the Python that ran for every request."
    )
    hint_text = ["One core serves at most 1 / D requests a second.", "Divide the two ceilings: the larger D on top."]
    solution_text = "D per request / D per batch: at[16, True]['demand_us'] / batch_alone.demand_us."

    def measure(self, per_request_us, per_batch_us):
        return per_request_us / per_batch_us


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
