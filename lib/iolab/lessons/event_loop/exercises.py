"""Exercises for lesson 05, an event loop from scratch.

`from iolab.lessons.event_loop import exercises as ex; ex.q1.check(answer)`.
"""

from iolab import checks

from . import probes


class HalfSentOnBlockingServer(checks.PredictThenMeasure):
    prompt = (
        "Step 1 (blocking) has accepted a client that sent half a request; it sends the rest 500 ms later. "
        "You ask for / right away on another connection. Predict how long you wait, in ms."
    )
    rel_tol = 0.25
    unit = "ms"
    quantity = "your wait for /"
    off_text = "Step 1 is stuck in recv() on the first client until its request is complete; you are in the backlog."
    correct_text = "One thread blocked in recv() serves nobody else: the slowest sender sets everyone's pace."
    hint_text = [
        "What is step 1's only thread doing while the first client thinks?",
        "It is inside recv() for that client. When does that recv() get the rest of the request?",
    ]
    solution_text = "About 500 ms: step 1 cannot accept you until the first client's request is complete and answered."

    def measure(self, url, finish_after_ms=500):
        return probes.half_sent_wait_s(url, finish_after_ms / 1000) * 1000


class WhichStepSpins(checks.ChoiceExercise):
    prompt = "No client is connected. Which step uses a whole core anyway: 'step1', 'step2', 'step3' or 'step4'?"
    choices = {
        "step1": "step 1 is asleep in accept(): the kernel wakes it when someone connects, and not before.",
        "step2": "",
        "step3": "step 3 sleeps in select() until a socket is ready or a timer is due: no CPU at all while idle.",
        "step4": "step4_event_loop sleeps in select() too; its loop only runs when something happens.",
    }
    correct = "step2"
    correct_text = "Non-blocking calls without a selector mean asking again and again: every EAGAIN is wasted CPU."
    hint_text = ["Which step never calls anything that sleeps?",
                 "The table at the top says how each step waits: which one asks again and again?"]
    solution_text = "'step2': its loop calls accept() and recv() non-stop and they all come back with EAGAIN."


class TwoSleepsInOneCoroutine(checks.NumberExercise):
    prompt = (
        "A coroutine on step 5's loop yields sleep(loop, 0.2), then sleep(loop, 0.3), then returns its answer. "
        "Ten clients ask at the same moment, each getting its own Task. How many ms after they asked does the last "
        "answer arrive?"
    )
    expected = 500
    rel_tol = 0.0
    abs_tol = 30.0
    unit = "ms"
    mistakes = {
        300: "is the longer sleep alone, as if one coroutine's two sleeps ran side by side. The Task sends the "
             "coroutine on to its second yield only when the first future is done.",
        200: "is the first sleep alone. The coroutine goes on to its second yield only once the first is done.",
        5000: "is ten clients one after another. Each has its own Task; while one coroutine waits, the loop runs the others.",
        3000: "is ten clients one after another. Each has its own Task; while one coroutine waits, the loop runs the others.",
    }
    too_high_text = "the ten coroutines wait at the same time: each yield hands the loop back."
    too_low_text = "within one coroutine, the second sleep starts only when the first is over."
    hint_text = [
        "Within one coroutine, when does the second sleep start?",
        "And across the ten: while one coroutine is paused at a yield, what does the loop do?",
    ]
    solution_text = (
        "About 500 ms: within one coroutine the sleeps follow one another (200 + 300), because the Task resumes it "
        "only when the future it yielded is done; across coroutines they overlap, because every yield hands the "
        "loop back to the others."
    )


class WhereTheLoopSpendsItsTime(checks.ChoiceExercise):
    prompt = (
        "In the trace of 40 users on /async-sleep, where does the loop spend most of its wall-clock time: "
        "'select' (waiting for sockets and timers), 'callbacks' (parsing and answering) or 'timers' (sorting the heap)?"
    )
    choices = {
        "select": "",
        "callbacks": "each callback takes tens of microseconds;"
        " 40 users each waiting a whole delay give it almost nothing to do.",
        "timers": "a heap push or pop costs about a microsecond; and the trace counts it inside the callbacks anyway.",
    }
    correct = "select"
    correct_text = "An event loop serving waits is mostly asleep: that is why one thread can hold thousands of them."
    hint_text = "Compare the two totals under the trace plot: time in select vs time in callbacks."
    solution_text = "'select': the loop sleeps in epoll_wait until the next timer; the callbacks are a sliver."


class BlockedBySyncSleep(checks.PredictThenMeasure):
    prompt = (
        "On step4_event_loop, one client asks for /sync-sleep?ms=300; 50 ms later another asks for /. "
        "Predict how long / takes, in ms."
    )
    rel_tol = 0.2
    abs_tol = 20.0
    unit = "ms"
    quantity = "the wait for /"
    off_text = "time.sleep() runs inside a callback: the loop cannot select(), accept or read until it returns."
    correct_text = "That is the wait the slow-callback warning reports: the loop was blocked, and / paid for it."
    hint_text = [
        "While a callback runs, the loop does nothing else. How long does the sync-sleep callback run?",
        "/ arrives 50 ms into a 300 ms callback.",
    ]
    solution_text = "About 250 ms: / waits for the rest of the 300 ms sleep (300 - 50), then takes well under a millisecond."

    def measure(self, url, sleep_ms=300, gap_ms=50):
        return probes.blocked_wait_s(url, f"/sync-sleep?ms={sleep_ms}", gap_ms / 1000) * 1000


class PipelinedBehindAWait(checks.NumberExercise):
    prompt = (
        "On one keep-alive connection, a client sends /async-sleep?ms=300 and / in the same write (pipelining). "
        "How many ms after sending does the answer to / arrive?"
    )
    expected = 300
    rel_tol = 0.0
    abs_tol = 40.0
    unit = "ms"
    mistakes = {
        0: "would be right on two connections. On one, HTTP/1.1 answers arrive in the order the requests were sent.",
        600: "adds the waits, but / costs nothing: it is answered the moment the first answer has gone.",
    }
    too_high_text = "/ costs nothing by itself: what is it waiting for?"
    too_low_text = "an HTTP/1.1 connection answers in order: can / overtake the request in front of it?"
    hint_text = ["Answers carry no request id: how would the client know which answer is which?", "So they come in order."]
    solution_text = ("About 300 ms: / is parsed only after the sleep's answer has been sent, so it waits its turn"
                     " (head-of-line blocking).")


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
