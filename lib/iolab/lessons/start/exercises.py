"""Exercises for lesson 00, the first experiment: `from iolab.lessons.start import exercises as ex; ex.q1.check(answer)`."""

from iolab import checks


class AsyncThroughput(checks.NumberExercise):
    prompt = "40 users, handlers that wait 0.5 s without blocking. How many requests per second can the async server answer?"
    expected = 80
    rel_tol = 0.02
    unit = "req/s"
    mistakes = {
        2: "is one request at a time: the blocking server. The async one waits on all 40 at once.",
        40: "is one request per user per second; each wait takes half a second.",
        20: "divides the wrong way round: 40 users, each answered twice a second.",
    }
    hint_text = "Each of the 40 users gets an answer every 0.5 s."
    solution_text = "40 / 0.5 s = 80 req/s."


class SyncTime(checks.NumberExercise):
    prompt = "The blocking server gets 40 requests of 0.5 s each, 40 users at once. How many seconds does the run take?"
    expected = 20
    rel_tol = 0.03
    unit = "s"
    mistakes = {
        0.5: "would be right if the 40 waits overlapped; time.sleep makes them queue.",
        1: "is one request per user at 40 per second; the blocking server does 2 per second.",
    }
    hint_text = "One request at a time, half a second each."
    solution_text = "40 x 0.5 s = 20 s, whatever the number of users."


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
