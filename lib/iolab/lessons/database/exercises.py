"""Exercises for lesson 13, a real database.

Exercises for lesson 13, a real database: `from iolab.lessons.database import exercises as ex; ex.q1.check(a)`.
"""

from iolab import checks


class BlockingOnTheLoop(checks.NumberExercise):
    prompt = ("A Tornado handler calls a sync driver's query of 50 ms on the event loop. 20 users call it in a "
              "closed loop. What throughput X do you predict, in requests per second?")
    expected = 20.0
    rel_tol = 0.05
    unit = "req/s"
    mistakes = {400.0: "is 20 users at 50 ms each: but the loop waits inside each query, so one runs at a time."}
    hint_text = ["While the query runs, the loop runs nothing else. How many queries run at once?",
                 "One at a time, each 50 ms: X = 1 / Z."]
    solution_text = "X = 1 / Z = 1 / 0.05 s = 20 req/s. The loop is a pool of one."


class DefaultExecutor(checks.NumberExercise):
    prompt = ("The same query of 100 ms, now in loop.run_in_executor(None, ...) on a machine where os.cpu_count() "
              "is 2. 30 users. What X do you predict, in requests per second?")
    expected = 60.0
    rel_tol = 0.05
    unit = "req/s"
    mistakes = {20.0: "is two threads: the default executor adds 4 to the CPU count.",
                300.0: "is one thread per user: the executor has fewer threads than 30.",
                320.0: "is 32 threads: the executor takes min(32, cpu_count + 4)."}
    hint_text = ["The default executor has min(32, os.cpu_count() + 4) threads.",
                 "Each thread holds one query of 100 ms: X = threads / Z."]
    solution_text = "min(32, 2 + 4) = 6 threads, so X = 6 / 0.1 s = 60 req/s."


class AsyncPool(checks.NumberExercise):
    prompt = ("An async driver with a pool of P = 10 connections, the same query of 100 ms, 30 users and "
              "max_connections = 100. What X do you predict, in requests per second?")
    expected = 100.0
    rel_tol = 0.05
    unit = "req/s"
    mistakes = {300.0: "is 30 users at once: but only 10 hold a connection.",
                1000.0: "is max_connections: the pool is smaller.",
                60.0: "is the executor's 6 threads: the async pool needs none."}
    hint_text = "X = min(N, P, max_connections) / Z."
    solution_text = "min(30, 10, 100) / 0.1 s = 100 req/s. The pool is the bottleneck."


class PoolForTarget(checks.NumberExercise):
    prompt = ("Your service must answer 400 requests a second. Each request holds its connection 25 ms. What is "
              "the smallest pool size P that can carry it?")
    expected = 10.0
    rel_tol = 0.01
    unit = "connections"
    mistakes = {16.0: "is 400 / 25: Little's law multiplies, L = X · R, with R in seconds.",
                400.0: "is one connection per request a second: each is free again after 25 ms."}
    hint_text = ["Little's law on the pool: connections in use L = X · R, with R each one's hold.",
                 "X = 400 /s, R = 0.025 s."]
    solution_text = "L = X · R = 400 × 0.025 = 10 connections = P, all busy all the time: add a margin in practice."


class ExecutorAgainstPool(checks.NumberExercise):
    prompt = ("A FastAPI def endpoint (anyio's 40 threads) takes a connection from a pool of 10 and runs a query "
              "of 50 ms. 100 users call it. What X do you predict, in requests per second?")
    expected = 200.0
    rel_tol = 0.05
    unit = "req/s"
    mistakes = {800.0: "is 40 threads at once: but only 10 have a connection; 30 threads wait for one.",
                2000.0: "is 100 users at once: the threads and the pool both stand in the way."}
    hint_text = ["Two tiers in a row: 40 threads, then 10 connections. The smaller one sets X.",
                 "X = min(N, 40, 10) / Z."]
    solution_text = "min(100, 40, 10) / 0.05 s = 200 req/s. Thirty threads sit waiting for a connection."


class HeldAcross(checks.NumberExercise):
    prompt = ("A handler takes a connection from a pool of 10, runs a query of 20 ms, then calls another service for "
              "80 ms before it gives the connection back. Many users. What X do you predict, in requests per second?")
    expected = 100.0
    rel_tol = 0.05
    unit = "req/s"
    mistakes = {500.0: "counts only the query: but the connection is held during the other call too.",
                125.0: "counts only the other call: the connection is held for both."}
    hint_text = "Each request holds its connection T_db + T_other. X = P / (T_db + T_other)."
    solution_text = "10 / (0.02 + 0.08) s = 100 req/s. Released before the call: 10 / 0.02 = 500 req/s."


class TooManyClients(checks.ChoiceExercise):
    prompt = ("PostgreSQL runs with max_connections = 100, and 100 connections are open. A 101st client connects. "
              "What happens? 'it waits for a free slot', 'it is refused at once' or 'it gets a shared backend'.")
    choices = {
        "it waits for a free slot": "PostgreSQL keeps no queue of connections: that is what a pool is for.",
        "it is refused at once": "",
        "it gets a shared backend": "each connection has a backend process of its own; only pgbouncer shares them.",
    }
    correct = "it is refused at once"
    correct_text = "'FATAL: sorry, too many clients already'. Your pool or pgbouncer must stay below the limit."
    hint_text = "A connection is a process of its own, forked when it arrives. Is there one to give?"
    solution_text = "'it is refused at once': the server answers FATAL: sorry, too many clients already."


class RowsBound(checks.NumberExercise):
    prompt = ("A route returns 5,000 rows. Its driver spends 2 µs of CPU per row on the event loop. Ignoring "
              "everything else, at most how many such requests a second can one event loop serve?")
    expected = 100.0
    rel_tol = 0.05
    unit = "req/s"
    mistakes = {500_000.0: "is rows a second: each request decodes 5,000 of them.",
                200.0: "is 1 µs per row: use 2."}
    hint_text = "One request costs R × D_row of CPU; one loop has one CPU second a second."
    solution_text = "1 / (5000 × 2 µs) = 1 / 0.01 s = 100 req/s, whatever the pool."


class OneByOne(checks.NumberExercise):
    prompt = ("Your database is on another machine, 0.5 ms away (a round trip). You insert 200 rows one statement at "
              "a time, each waiting for its answer. About how long does it take, in milliseconds?")
    expected = 100.0
    rel_tol = 0.1
    unit = "ms"
    mistakes = {0.5: "is one round trip: that is the pipeline, or executemany."}
    hint_text = "Each statement waits one round trip before the next is sent."
    solution_text = "200 × 0.5 ms = 100 ms. In a pipeline, about one round trip and the CPU."


class ClientTimeout(checks.ChoiceExercise):
    prompt = ("A client sends a query of 5 s and gives up after 1 s, with no word to the server. What does "
              "PostgreSQL do? 'it stops the query', 'it runs the query to its end' or 'it closes the connection'.")
    choices = {
        "it stops the query": "only if someone tells it: a cancel request, or statement_timeout on the server.",
        "it runs the query to its end": "",
        "it closes the connection": "nothing reached the server: it still waits on the query.",
    }
    correct = "it runs the query to its end"
    correct_text = "the backend works on, and holds its connection, for an answer nobody reads."
    hint_text = "Did anything reach the server when the client gave up?"
    solution_text = "'it runs the query to its end'. statement_timeout stops it on the server."


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
