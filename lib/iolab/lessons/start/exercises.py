"""Exercises for lesson 00, the first experiment, and q0, a warm-up that shows how exercises work.

`from iolab.lessons.start import exercises as ex; ex.q1.check(answer)`.
"""

from iolab import checks


class CpuWhileRequestsWait(checks.ChoiceExercise):
    prompt = (
        "20 users, a non-blocking handler that waits 0.5 s: the server answers about 40 requests a second. "
        "How much of one CPU core does the server use meanwhile: 'little' (under a tenth), 'half' or 'all'?"
    )
    choices = {
        "little": "",
        "half": (
            "a request costs the server well under a millisecond of CPU: it reads a few hundred bytes, sets a timer "
            "and writes an answer. Forty of those a second is a few percent of a core."
        ),
        "all": (
            "that is what a loop that keeps asking 'anything yet?' would use. Tornado's loop sleeps in the kernel "
            "until a timer is due or a socket has data, and costs nothing while it sleeps."
        ),
    }
    correct = "little"
    correct_text = "Waiting costs no CPU. That is why one thread can keep thousands of requests waiting at once."
    hint_text = [
        "What does the server's CPU have to do for one request? Not the wait: the work around it.",
        "Parse a request, set a timer, format an answer: well under a millisecond. Now count 40 of them a second.",
    ]
    solution_text = (
        "'little': each request costs the server well under a millisecond of CPU (the table after the run shows it), "
        "so 40 a second keep it busy a few percent of the time. The 20 waits are timers; while they run, "
        "the process sleeps in epoll_wait."
    )


class SyncTime(checks.NumberExercise):
    prompt = (
        "The blocking run: 40 requests to a handler that calls time.sleep(0.5), 20 users sending at once. "
        "How many seconds does the run take?"
    )
    expected = 20
    rel_tol = 0.03
    unit = "s"
    mistakes = {
        0.5: "would be right if the 40 waits overlapped; time.sleep makes them queue.",
        1: "is two rounds of 20 waits that overlap: the non-blocking handler. time.sleep makes them queue.",
        10: "is 20 users x 0.5 s, but each of the 40 requests takes its own turn.",
    }
    hint_text = "One request at a time, half a second each. How many users there are does not matter."
    solution_text = "40 x 0.5 s = 20 s, whatever the number of users: time.sleep holds the server's only thread."


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())


class WaitInSeconds(checks.NumberExercise):
    """A warm-up that counts for nothing: it shows how checking, hints and solutions work."""

    prompt = "The parameters cell sets delay_ms = 500. How many seconds does each handler wait?"
    expected = 0.5
    rel_tol = 0.01
    unit = "s"
    mistakes = {500: "is too long: 500 is the wait in milliseconds, and a second has 1,000 of them."}
    correct_text = "That is how a right answer looks. Now the two questions that count."
    hint_text = "A millisecond is a thousandth of a second."
    solution_text = "500 ms / 1000 = 0.5 s."


# q0 is the warm-up before the lesson's own questions, which bind() numbers from 1.
q0 = WaitInSeconds()
checks.statuses_of(globals())  # names q0 as well
