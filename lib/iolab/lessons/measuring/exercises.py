"""Exercises for lesson 09, measuring right: `from iolab.lessons.measuring import exercises as ex; ex.q1.check(answer)`."""

from iolab import checks

from . import decoded


class OpenLoopP99UnderAStall(checks.NumberExercise):
    prompt = (
        "An open loop sends 200 requests per second for 20 s on a fixed clock; the server stops for 1 s in the middle "
        "and serves each request in well under a millisecond otherwise. Predict the p99 latency, in ms."
    )
    expected = 800.0
    rel_tol = 0.1
    unit = "ms"
    mistakes = {
        1000.0: "is the longest wait, the first request of the stall's: the p99 is 40 requests further down.",
        1.0: "is what a closed loop would report: the open loop keeps sending during the stall.",
        500.0: "is the mean wait of the stalled requests, not the p99 of all of them.",
    }
    too_high_text = "the slowest 1% is 40 requests, and they are the first 0.2 s of the stall."
    too_low_text = "200 requests wait for the stall to end, and they are 5% of the run."
    hint_text = [
        "How many requests does the run send, and how many of them are due while the server is stopped?",
        "The slowest 1% of 4000 are 40 requests: the first 40 of the stall, due in its first 0.2 s.",
    ]
    solution_text = "S − (1 − p) t = 1 s − 0.01 × 20 s = 0.8 s: the 40th slowest request was due 0.2 s into the stall."
    correct_text = "x_p = S − (1 − p)·t, as long as (1 − p)·t < S."


class ClosedLoopStalledRequests(checks.PredictThenMeasure):
    prompt = ("A closed loop of N users, each waiting for its answer before it sends again:"
              " at most how many requests see the stall?")
    rel_tol = 0.0
    abs_tol = 0.5
    unit = "requests"
    quantity = "the users' count"
    off_text = "Each user has at most one request out; while it waits it sends nothing."
    hint_text = "While the server is stopped, what does each user do after its request has left?"
    solution_text = "N: one per user. Each user waits for its answer, so the stall costs each of them one request."
    correct_text = "The closed loop politely stops sending: its stall shows as N slow requests among thousands."

    def measure(self, users):
        return users


class ConcurrencyFromAbsTwoLines(checks.PredictThenMeasure):
    prompt = "ab printed the two 'Time per request' lines above. Infer the concurrency -c it ran with, from them alone."
    rel_tol = 0.01
    unit = "requests in flight"
    quantity = "the ratio of the two lines"
    off_text = "Line one is concurrency × time / requests, line two is time / requests."
    hint_text = ["Write both lines as formulas of the time taken, the requests and the concurrency.", "Divide one by the other."]
    solution_text = "line one / line two = concurrency (Little's law: L = X × R with X = 1 / line two)."

    def measure(self, line_one_ms, line_two_ms):
        return line_one_ms / line_two_ms


class ShareWrkDescribes(checks.NumberExercise):
    prompt = (
        f"The write-up's wrk run ({decoded.SEED_FIRE_AND_FORGET['server']}) counted "
        f"{decoded.SEED_FIRE_AND_FORGET['requests']:,} requests and {decoded.SEED_FIRE_AND_FORGET['timeouts']:,} timeouts. "
        "What share of the requests do its latency figures describe (a number from 0 to 1)?"
    )
    seed = decoded.SEED_FIRE_AND_FORGET
    expected = (seed["requests"] - seed["timeouts"]) / seed["requests"]
    rel_tol = 0.05
    mistakes = {decoded.SEED_FIRE_AND_FORGET["timeouts"] / decoded.SEED_FIRE_AND_FORGET["requests"]:
                "is the share of timeouts: their latencies are the ones wrk left out."}
    too_high_text = "wrk records no latency for an answer slower than its timeout."
    too_low_text = "the timed-out requests are counted in the requests; the others were recorded."
    hint_text = "A timeout is counted in the requests, but its latency is not recorded anywhere."
    solution_text = "(14,627 − 11,849) / 14,627 ≈ 0.19: the Latency line describes the fastest fifth only."


class GoodputOfTheErrorRun(checks.NumberExercise):
    prompt = (
        f"The write-up's {decoded.SEED_ERRORS['server']} printed {decoded.SEED_ERRORS['rps']} req/s and "
        f"'Non-2xx or 3xx responses: {decoded.SEED_ERRORS['non_2xx']:,}', one for every request. "
        "How many requests per second did it serve successfully (its goodput)?"
    )
    expected = 0.0
    abs_tol = 0.01
    rel_tol = 0.0
    unit = "req/s"
    mistakes = {decoded.SEED_ERRORS["rps"]: "is the rate wrk printed, errors included: every one of them was an error."}
    too_high_text = "every answer was an error."
    hint_text = "wrk's Requests/sec counts every answer, whatever its status."
    solution_text = "0 req/s: all 7,486 answers were errors, so the 124.63 req/s measured how fast the route said no."


class OpenVersusClosedPrinciple(checks.ChoiceExercise):
    prompt = (
        "Past 1 / D, which did this run show? (a) closed response times are lower than open ones at the same load; "
        "(b) both grow without bound; (c) the open loop slows its own arrivals."
    )
    choices = {
        "a": "",
        "b": "the closed loop's users wait for their answers, so at most N are ever queued: its latency stays bounded.",
        "c": "the open loop sends on its schedule whatever the answers do: that is what makes it open.",
    }
    correct = "a"
    hint_text = "Compare the two loops' latency in the last row of the table, and whose queue is bounded by N."
    solution_text = (
        "(a): Schroeder, Wierman and Harchol-Balter's first principle. The closed loop's N users bound its queue; "
        "the open loop's queue grows as long as arrivals outpace 1 / D."
    )


class AveragedP99(checks.ChoiceExercise):
    prompt = "Four windows' p99s were averaged, and the p99 of all requests merged was computed. Which is the run's p99?"
    choices = {
        "merged": "",
        "averaged": ("a percentile of the whole is not the mean of the parts' percentiles:"
                     " it can lie anywhere between their min and max."),
    }
    correct = "merged"
    hint_text = "Which of the two counts the slowest 1% of all the requests?"
    solution_text = "The merged one: add the windows' histograms (or their samples), then take the percentile."


checks.bind(globals())
