"""Exercises for lesson 02, sync vs async.

`from iolab.lessons.sync_async import exercises as ex; ex.q1.check(answer)`.
"""

from iolab import checks, load


class ThroughputFromResponseTime(checks.NumberExercise):
    prompt = ("ab keeps 40 users at once on an async server whose handlers wait 1 s, and reports a mean time per "
              "request of 1.25 s. What throughput does it measure, in req/s?")
    expected = 32
    rel_tol = 0.02
    unit = "req/s"
    mistakes = {
        40: "is 40 users / 1 s: every request took 1.25 s here, not the handler's 1 s. Use what ab measured.",
        1: "is one request at a time for 1 s each: that is the synchronous server. Here the 40 waits overlap.",
        0.8: "is one user's rate (1 / 1.25 s); 40 users send side by side.",
        50: "multiplies where Little's law divides: throughput = requests in flight / time each one takes.",
    }
    hint_text = ["Little's law: requests in flight = throughput x time per request.",
                 "40 in flight; the time per request is what ab measured, not what the handler waits."]
    solution_text = ("40 / 1.25 s = 32 req/s. Little's law holds for whatever time each request really took: "
                     "the extra 0.25 s is time spent queued, and it costs throughput.")


class WhatAbMeasures(checks.ChoiceExercise):
    prompt = (
        "In the synchronous run ab printed 'Time per request: 40149 ms'. What is that figure? "
        "'a' the time the server worked on each request; 'b' concurrency x total time / requests, which is the mean "
        "time a user waits only if all 40 are waiting all the time; 'c' the slowest request; 'd' network latency."
    )
    choices = {
        "a": "the handler slept 1 s per request and the server did nothing else; 40 s is the queue in front of it.",
        "b": "",
        "c": "the slowest request is the '100%' line of ab's table (200746 ms in the article).",
        "d": "ab and the server share one machine here: the network adds well under a millisecond.",
    }
    correct = "b"
    correct_text = "ab never times a request for that line: it divides. Little's law turns 40 users and 1 req/s into 40 s."
    hint_text = ["Compute 40 x 200.7 s / 200 and compare.", "Which ab line is the same total divided without the 40?"]
    solution_text = "'b': ab prints concurrency x time taken / complete requests = 40 x 200.7 s / 200 = 40.1 s."


class AsyncLimit(checks.ChoiceExercise):
    prompt = (
        "The async run topped out just under 40 req/s. Why not more? 'cpu': the server's CPU is saturated; "
        "'users': only 40 users, each of whom waits 1 s per answer; 'tornado': Tornado cannot go faster."
    )
    choices = {
        "cpu": "a hello-world request costs the server well under a millisecond: 40 req/s keeps the CPU nearly idle.",
        "users": "",
        "tornado": "the same Tornado answers thousands of hello-world requests a second (lesson 05 measures it).",
    }
    correct = "users"
    correct_text = "The closed loop is the limit: 40 users x 1 request per second each. Add users and it rises."
    hint_text = "Where is the time going: in the server's CPU, or in each user's one-second wait?"
    solution_text = "'users': Little's law bounds it by concurrency / wait = 40 / 1 s; the server's CPU is mostly idle."


class SyncTotalTime(checks.PredictThenMeasure):
    prompt = "The synchronous server, 3 users, 6 requests of 200 ms each. Predict the run's total time in seconds."
    rel_tol = 0.15
    unit = "s"
    quantity = "the run's total time"
    off_text = "The blocking server does one request at a time, however many users queue."
    correct_text = "Users do not help a server that blocks: n x the wait, whatever the concurrency."
    hint_text = ["How many requests can the blocking server work on at once?", "6 requests, one at a time, 0.2 s each."]
    solution_text = "6 x 0.2 s = 1.2 s: concurrency only lengthens the queue."

    def measure(self, url):
        return load.run_load(url + "/sync-sleep?ms=200", requests=6, concurrency=3, timeout_s=10).duration_s


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
