"""Exercises for lesson 11, the client side.

Exercises for lesson 11, the client side: `from iolab.lessons.client_side import exercises as ex; ex.q1.check(a)`.
"""

from iolab import checks

from . import fanout


class OneAfterAnother(checks.NumberExercise):
    prompt = "40 calls of 200 ms each, one after another with requests: about how long in all, in seconds?"
    expected = 8.0
    rel_tol = 0.05
    unit = "s"
    mistakes = {0.2: "is one call: the next is sent only when the last one's answer is in."}
    hint_text = "Each call waits for the one before it. How many waits of 200 ms line up?"
    solution_text = "40 × 0.2 s = 8 s: n·Z. The program waits, and nothing else happens meanwhile."


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
    solution_text = "About Z = 0.2 s: the 40 waits overlap, and the server holds all 40 at once."


class WithSemaphore(checks.NumberExercise):
    prompt = "The same 40 calls with gather, each behind an asyncio.Semaphore(15): about how long, in seconds?"
    expected = 0.6
    rel_tol = 0.05
    unit = "s"
    mistakes = {40 / 15 * 0.2: "divides evenly, but each round takes a whole Z: round up.",
                0.2: "ignores the semaphore: only 15 calls may be inside it at once."}
    hint_text = "A semaphore of P lets P calls in at once: it is a pool of P, made of tasks instead of threads."
    solution_text = "⌈40 / 15⌉ = 3 rounds of 0.2 s = 0.6 s."


class InBatches(checks.Exercise):
    prompt = ("Write in_batches(session, url, n, size): n calls of fetch, sent size at a time; "
              "each batch goes out once every answer of the one before it is in.")
    hint_text = ["A loop over the batches: range(0, n, size) gives each batch's first call.",
                 "In the loop, gather min(size, n - first) calls of fetch(session, url), await them, and add "
                 "their (sent, answered) pairs to a list. Return the list."]
    solution_text = ("sent_and_answered = []\nfor first in range(0, n, size):\n    sent_and_answered += await"
                     " asyncio.gather(*(fetch(session, url) for _ in range(min(size, n - first))))\n"
                     "return sent_and_answered")

    def judge(self, answer, **context):
        calls = answer.get("calls") if isinstance(answer, dict) else None
        if not isinstance(calls, (list, tuple)) or not all(isinstance(c, (list, tuple)) and len(c) == 2 for c in calls):
            return False, f"in_batches should return the list of (sent, answered) pairs fetch gives, got {calls!r:.80}."
        n, size = answer["n"], answer["size"]
        if len(calls) != n:
            return False, f"it made {len(calls)} calls; it should make n = {n}."
        peak = fanout.most_at_once(calls)
        if peak > size:
            return False, f"{peak} calls were out at once: at most size = {size} may be."
        if peak == 1 < size:
            return False, "one call at a time: gather each batch, so its calls wait side by side."
        waves = fanout.waves(calls)
        expected = [(first, min(size, n - first)) for first in range(0, n, size)]
        if waves != expected:
            return False, (f"calls went out with {[already for already, _ in waves]} answers already in. "
                           f"Batches would send them with {[first for first, _ in expected]}: a new call went out "
                           "before its whole batch was in. That is a pool, like the semaphore, not batches.")
        rounds = len(expected)
        return True, (f"{len(waves)} batches of at most {size}, one after another: {answer['took_s']:.2f} s for "
                      f"{rounds} rounds of Z = {answer['T_s']:.2f} s.")


class PredictX(checks.NumberExercise):
    prompt = ("200 calls of 200 ms started at once through one aiohttp ClientSession, at its defaults. "
              "What throughput X do you predict, in calls per second?")
    expected = 500.0
    rel_tol = 0.05
    unit = "calls/s"
    mistakes = {1000.0: "is 200 calls in one Z: the session lets only 100 through at once.",
                50.0: "is Tornado's client, max_clients = 10."}
    hint_text = ["The table above gives aiohttp's limit.", "Little's law: L = X · Z, with L the calls on the wire, here P."]
    solution_text = ("P = 100 (TCPConnector's limit), so L = 100 and X = L / Z = 100 / 0.2 s = 500 calls/s: 200 calls"
                     " in 2 rounds, 0.4 s.")


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


class ReadTheLimitBack(checks.NumberExercise):
    prompt = ("A program starts 40 calls at once, 120 calls in all, each 250 ms on the server. They all finish "
              "in 5.0 s. How many calls did its library let through at once?")
    expected = 6.0
    rel_tol = 0.05
    unit = "calls"
    mistakes = {40.0: "is what the program asked for; the time says fewer went out.",
                24.0: "is X, the throughput: multiply by Z."}
    hint_text = ["X = 120 calls / 5.0 s.", "Little's law: L = X · Z, the calls on the wire at once."]
    solution_text = ("X = 120 / 5.0 = 24 calls/s, and L = X · Z = 24 × 0.25 s = 6 = P: the default executor's "
                     "min(32, cores + 4) threads on a 2-core machine.")


class WhenGatherCollectsErrors(checks.ChoiceExercise):
    prompt = ("Ten calls run under gather(..., return_exceptions=True). One fails after 50 ms; the others take 1 s "
              "each. When does the await return, and what happened to the other nine? '50 ms, cancelled', "
              "'1 s, answered' or '50 ms, still running'.")
    choices = {
        "50 ms, cancelled": "that is a TaskGroup: it cancels the rest at the first failure.",
        "1 s, answered": "",
        "50 ms, still running": "that is a plain gather: it raises at once and leaves the others running.",
    }
    correct = "1 s, answered"
    correct_text = ("With return_exceptions=True an error is a result like any other: gather waits for all ten, "
                    "and its list holds nine answers and one exception.")
    hint_text = ["return_exceptions=True turns each error into a value in gather's list, instead of raising it.",
                 "A list of every result cannot be returned before the last call has ended."]
    solution_text = "'1 s, answered': gather waits for every call, and returns the failure in its list."


class RetryArrivals(checks.NumberExercise):
    prompt = ("A client sends 50 calls a second to a server that takes 2 s. Its timeout is 0.5 s, with 3 retries. "
              "How many requests a second arrive at the server?")
    expected = 50 * (1 + 3)
    rel_tol = 0.01
    unit = "requests/s"
    mistakes = {
        50: "counts each call once: but every attempt times out, and each is retried.",
        150: "counts the retries only: the first attempt reaches the server too.",
        400: "is how many the server holds at once (Little's law: 200/s × 2 s), not how many arrive per second.",
    }
    hint_text = ["The timeout, 0.5 s, is shorter than the 2 s the server takes. So how many attempts does each call make?",
                 "Each call makes 1 + r attempts, and each reaches the server."]
    solution_text = ("50 × (1 + 3) = 200 requests a second, and the server holds 200 × 2 = 400 at once. The client "
                     "sees 50 failures a second; the server does four times the work.")


class DefEndpointPool(checks.NumberExercise):
    prompt = ("A FastAPI `def` endpoint takes 0.5 s. 100 clients call it at once. About how long until the last answer,"
              " in seconds?")
    expected = 1.5
    rel_tol = 0.05
    unit = "s"
    mistakes = {
        0.5: "would need a pool of 100 threads: FastAPI runs 40 def endpoints at once.",
        50.0: "is one at a time: an async def that blocks. A def runs in anyio's pool.",
        1.25: "is 100 / 40 × 0.5: the rounds are whole. 40, 40, then 20.",
    }
    hint_text = ["How many def endpoints does FastAPI run at once?",
                 "40 at a time: how many rounds of 0.5 s does 100 need?"]
    solution_text = "⌈100 / 40⌉ = 3 rounds of 0.5 s: 1.5 s."


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
