"""Exercises for lesson 10, a slow backend: `from iolab.lessons.backend import exercises as ex; ex.q1.check(answer)`."""

from iolab import checks

from . import article


class WorkerCapacity(checks.NumberExercise):
    prompt = ("The article's three front ends, waiting for each result, made 6.92, 6.21 and 7.42 req/s. "
              "About how many tasks per second could its worker pool finish?")
    expected = 7.0
    rel_tol = 0.1
    unit = "tasks/s"
    mistakes = {
        21.0: ("is 3 sync workers x 7 req/s, or the three rows added up: gunicorn's workers would have allowed that,"
               " yet it made 7.42, and the three rows were three runs against the same backend, not one."),
        452.0: "is hello world: nothing there went through the backend.",
    }
    too_high_text = "then at least one of the three front ends (gevent has no limit of its own) would have gone faster."
    too_low_text = "every front end pushed more than that through it."
    hint_text = ["Three front ends that hold 1, 3 and 'as many as there are connections' requests at once all land on "
                 "about the same throughput. What do they share?",
                 "The bottleneck law: the tier with the least capacity caps them all. Whatever it is, it finished "
                 "about as many tasks per second as the runs show."]
    solution_text = ("About 7 tasks/s (6.2 to 7.4). A blocking Tornado (1 at a time), gunicorn (3 at a time) and gevent "
                     "(1000 at a time) cannot all be limited by themselves and land on the same figure: the shared "
                     "backend was the bottleneck. With 1 slot, that is T = 1/7 s = 145 ms a task; with c slots, c/T = 7.")


class QueueAfterAMinute(checks.NumberExercise):
    prompt = ("In the article's fire-and-forget run Tornado answered 243.5 req/s for 60 s, and its worker pool could "
              "finish about 6.92 tasks/s. How many tasks were waiting in the broker's queue at the end?")
    expected = (article.FORGETS["tornado_backend"] - article.WAITS["tornado_backend"]) * article.DURATION_S
    rel_tol = 0.01  # every task sent, 243.5 x 60, is only 3% more: the departures must count
    unit = "tasks"
    mistakes = {
        243.5 * 60: "counts every task sent; the workers took some of them meanwhile.",
        243.5 - 6.92: "is the growth per second: the run lasted a minute.",
    }
    hint_text = ["Arrivals per second minus departures per second is how fast the queue grows.",
                 "(243.5 - 6.92) tasks/s x 60 s."]
    solution_text = ("(243.5 - 6.92) x 60 = about 14,200 tasks, which the workers would need another 14,200 / 6.92 s "
                     "= 34 minutes to finish. Fire and forget did not make the backend faster: it moved the wait "
                     "from the user into the broker.")


class WhereIsTheBottleneck(checks.ChoiceExercise):
    prompt = ("Tornado waits for each result on a pool of k = 2 threads, in front of a worker pool of c = 4, with 16 "
              "users. Which tier limits the throughput? 'users', 'front end' or 'worker pool'.")
    choices = {
        "users": "16 users could keep 16 requests out at once: more than either other tier holds.",
        "front end": "",
        "worker pool": "4 slots, but only 2 requests ever reach it at once: its other 2 slots sit idle.",
    }
    correct = "front end"
    correct_text = "min(16, 2, 4) / R = 2 / R: the two threads. Give the front end more threads and it moves to the workers."
    hint_text = "X <= min over tiers of (servers at once / time each is held). Each tier holds a request for about R."
    solution_text = "'front end': min(N, k, c) = min(16, 2, 4) = 2 requests at a time, each for about R."


class BoundedQueueAcceptance(checks.NumberExercise):
    prompt = ("Fire and forget at 40 req/s for 10 s, a worker pool that takes 10 tasks/s, and a front end that "
              "answers 503 whenever 20 tasks are waiting. About how many of the 400 requests are accepted?")
    expected = 20 + 10 * 10
    rel_tol = 0.1
    unit = "requests"
    mistakes = {
        400: "is all of them: the limit refuses the ones that would make the queue longer than 20.",
        100: "leaves out the 20 that fill the queue before the first refusal.",
        20: "forgets that the workers keep taking tasks from the queue, making room.",
    }
    hint_text = ["At first every request is accepted, until the queue holds 20.",
                 "After that, a place frees up each time a worker takes a task: 10 per second."]
    solution_text = ("About 20 + 10 tasks/s x 10 s = 120 (a few more: the tasks the workers hold while they run). "
                     "The rest, about 280, get a quick 503: a user told 'busy, try later' at once instead of a "
                     "task that would have waited minutes in the queue.")


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
