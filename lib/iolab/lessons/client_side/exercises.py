"""Exercises for lesson 11, the client side: `from iolab.lessons.client_side import exercises as ex; ex.q1.check(a)`."""

from iolab import checks


class OneAfterAnother(checks.NumberExercise):
    prompt = "40 calls of 200 ms each, one after another with requests: about how long in all, in seconds?"
    expected = 8.0
    rel_tol = 0.05
    unit = "s"
    mistakes = {0.2: "is one call: the next is sent only when the last one's answer is in."}
    hint_text = "Each call waits for the one before it. How many waits of 200 ms line up?"
    solution_text = "40 × 0.2 s = 8 s: n·T. The program waits, and nothing else happens meanwhile."


class InThreads(checks.NumberExercise):
    prompt = "The same 40 calls of 200 ms, on a pool of 6 threads: about how long, in seconds?"
    expected = 1.4
    rel_tol = 0.03
    unit = "s"
    mistakes = {
        40 / 6 * 0.2: "divides the calls evenly, but a thread makes whole calls: count the rounds.",
        8.0: "is one thread: six of them wait side by side.",
        0.2: "would need 40 threads.",
    }
    hint_text = ["Six calls run at once, each for 200 ms: that is one round.",
                 "How many rounds of six does it take to make 40 calls? Round up."]
    solution_text = "⌈40 / 6⌉ = 7 rounds of 0.2 s = 1.4 s. The last round has only 4 calls, but it still takes 0.2 s."


class WithGather(checks.NumberExercise):
    prompt = "The same 40 calls with asyncio.gather on one aiohttp session: about how long, in seconds?"
    expected = 0.2
    rel_tol = 0.1
    unit = "s"
    mistakes = {8.0: "is one after another: gather starts every call before it waits for any.",
                1.4: "is six threads: gather has no pool of six."}
    hint_text = "gather starts all 40 coroutines; each one waits for its answer without holding up the others."
    solution_text = "About T = 0.2 s: the 40 waits overlap, and the server holds all 40 at once."


class WithSemaphore(checks.NumberExercise):
    prompt = "The same 40 calls with gather, each behind an asyncio.Semaphore(15): about how long, in seconds?"
    expected = 0.6
    rel_tol = 0.05
    unit = "s"
    mistakes = {40 / 15 * 0.2: "divides evenly, but each round takes a whole T: round up.",
                0.2: "ignores the semaphore: only 15 calls may be inside it at once."}
    hint_text = "A semaphore of s lets s calls in at once: it is a pool of s, made of tasks instead of threads."
    solution_text = "⌈40 / 15⌉ = 3 rounds of 0.2 s = 0.6 s."


class PredictX(checks.NumberExercise):
    prompt = ("200 calls of 200 ms started at once through one aiohttp ClientSession, at its defaults. "
              "What throughput X do you predict, in calls per second?")
    expected = 500.0
    rel_tol = 0.05
    unit = "calls/s"
    mistakes = {1000.0: "is 200 calls in one T: the session lets only 100 through at once.",
                50.0: "is Tornado's client, max_clients = 10."}
    hint_text = ["The table above gives aiohttp's limit.", "Little's law: X = P / T, with P the calls on the wire."]
    solution_text = "P = 100 (TCPConnector's limit), so X = 100 / 0.2 s = 500 calls/s: 200 calls in 2 rounds, 0.4 s."


class PoolFull(checks.ChoiceExercise):
    prompt = ("20 threads share one requests Session at its defaults (pool_maxsize=10, pool_block=False), each "
              "making a 200 ms call. What happens to the 11th call? 'it waits', 'it opens another connection' or "
              "'it fails'.")
    choices = {
        "it waits": "that is pool_block=True; the default does not block.",
        "it opens another connection": "",
        "it fails": "requests raises nothing here; urllib3 only logs a warning when it throws a connection away.",
    }
    correct = "it opens another connection"
    correct_text = "all 20 go out at once; the pool keeps 10 afterwards and throws the rest away."
    hint_text = "Read pool_block in the table: False means the pool never makes a call wait."
    solution_text = ("'it opens another connection': urllib3 makes a new one when the pool is empty, and discards it "
                     "afterwards ('Connection pool is full, discarding connection'). No limit on calls, only churn.")


class FastAPIDef(checks.NumberExercise):
    prompt = ("80 calls at once reach a FastAPI `def` endpoint that sleeps 400 ms, served by uvicorn at its "
              "defaults. About how long until the last answer, in seconds?")
    expected = 0.8
    rel_tol = 0.05
    unit = "s"
    mistakes = {0.4: "is an `async def` endpoint: a `def` one runs on a thread pool.",
                32.0: "is one at a time: that is an `async def` endpoint that calls time.sleep."}
    hint_text = "A `def` endpoint runs on anyio's thread pool: its limiter lets 40 run at once."
    solution_text = "⌈80 / 40⌉ = 2 rounds of 0.4 s = 0.8 s."


class ReadTheLimitBack(checks.NumberExercise):
    prompt = ("A program starts 40 calls at once, 120 calls in all, each 250 ms on the server. They all finish "
              "in 5.0 s. How many calls did its library let through at once?")
    expected = 6.0
    rel_tol = 0.05
    unit = "calls"
    mistakes = {40.0: "is what the program asked for; the time says fewer went out.",
                24.0: "is X, the throughput: multiply by T."}
    hint_text = ["X = 120 calls / 5.0 s.", "Little's law: P = X · T."]
    solution_text = ("X = 120 / 5.0 = 24 calls/s, and P = X · T = 24 × 0.25 s = 6: the default executor's "
                     "min(32, cores + 4) threads on a 2-core machine.")


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
