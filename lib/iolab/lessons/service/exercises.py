"""Exercises for lesson 15, running an async service: `from iolab.lessons.service import exercises as ex`."""

from iolab import checks

# --- Section 1: the loop's lag -----------------------------------------------------------------------------------


class MeanLag(checks.NumberExercise):
    prompt = ("A handler blocks the loop 40 ms every 400 ms. A heartbeat runs at random moments. What is its mean "
              "lateness, in ms?")
    expected = 40 ** 2 / (2 * 400)
    rel_tol = 0.1
    unit = "ms"
    mistakes = {20: "is the mean of a beat that lands in a block: only 1 beat in 10 does.",
                4: "is b²/Δ: a beat inside a block waits b/2 on average, not b."}
    hint_text = ["A beat lands in a block with probability b/Δ.", "Inside a block, it waits what is left of it: b/2 on"
                 " average."]
    solution_text = "(b/Δ)·(b/2) = b²/(2Δ) = 1600 / 800 = 2 ms."


class P99Lag(checks.NumberExercise):
    prompt = "The same loop: what is the heartbeat's 99th percentile lateness, in ms?"
    expected = 40 - 400 / 100
    rel_tol = 0.1
    unit = "ms"
    mistakes = {2: "is the mean: the p99 is set by the 1 % of beats that waited longest.",
                40: "is the longest wait: 1 beat in 100 waits more than the p99, and a block holds 1 in 10."}
    hint_text = ["A beat waits more than x when it lands in the first b − x of a block: probability (b − x)/Δ.",
                 "Set (b − x)/Δ = 1/100 and solve for x."]
    solution_text = "(b − x)/Δ = 0.01, so x = b − Δ/100 = 40 − 4 = 36 ms: eighteen times the mean."


class BlockFromMean(checks.NumberExercise):
    prompt = ("A dashboard shows a mean loop lag of 3 ms. You know one handler blocks the loop 60 ms each time it "
              "runs. How often does it run, in ms between runs?")
    expected = 60 ** 2 / (2 * 3)
    rel_tol = 0.1
    unit = "ms"
    mistakes = {20: "is b / mean: the mean lag is b²/(2Δ), so Δ = b²/(2·mean)."}
    hint_text = "Solve mean = b²/(2Δ) for Δ."
    solution_text = "Δ = b²/(2·mean) = 3600 / 6 = 600 ms. Its p99 would be about 60 − 6 = 54 ms, not 3."


# --- Section 2: lost tasks ---------------------------------------------------------------------------------------


class Destroyed(checks.NumberExercise):
    prompt = ("500 tasks are started with asyncio.create_task and not kept. Each awaits a future that nothing else "
              "holds. Then gc.collect() runs. How many are destroyed while pending?")
    expected = 500
    rel_tol = 0
    unit = "tasks"
    mistakes = {0: "assumes the loop keeps them: it holds only weak references to its tasks."}
    hint_text = "Who holds each task? Its future's callback, and the future only the task's own coroutine."
    solution_text = "All 500: each task and its future hold only each other, a cycle nothing reaches."


class WhereToKeep(checks.ChoiceExercise):
    prompt = ("Where must a reference live to keep a background task alive? 'a local variable of the function that "
              "started it', 'a set that outlives that function, until the task is done' or 'nowhere: the loop "
              "holds it'.")
    choices = {
        "a local variable of the function that started it": "it is gone when that function returns.",
        "a set that outlives that function, until the task is done": "",
        "nowhere: the loop holds it": "the loop holds a weak reference only, which does not keep it alive.",
    }
    correct = "a set that outlives that function, until the task is done"
    correct_text = "add it to the set, and let add_done_callback(tasks.discard) remove it once done."
    hint_text = "The reference must last as long as the task runs."
    solution_text = ("'a set that outlives that function, until the task is done': asyncio's own documentation "
                     "shows it, with add_done_callback(background_tasks.discard). A TaskGroup does the same.")


# --- Section 3: graceful shutdown --------------------------------------------------------------------------------


class CutAnswers(checks.NumberExercise):
    prompt = ("A server gets 200 requests a second, each taking 300 ms. It gets SIGTERM and exits at once. About how "
              "many requests fail?")
    expected = 200 * 0.3
    rel_tol = 0.1
    unit = "requests"
    mistakes = {200: "counts a second of requests: only those in flight fail.",
                0: "assumes the server finishes its requests: without a drain it does not."}
    hint_text = "Little's law: L = X·R requests are in flight at any moment."
    solution_text = "L = X·R = 200 × 0.3 = 60 requests in flight, and each loses its connection."


class ShortestDrain(checks.NumberExercise):
    prompt = "Requests take up to 2 s. What is the shortest drain that lets every request in flight finish, in s?"
    expected = 2
    rel_tol = 0.1
    unit = "s"
    mistakes = {1: "is half of it: a request that just started needs its whole 2 s."}
    hint_text = "Think of the request that arrived just before SIGTERM."
    solution_text = "2 s: the request that arrived last needs all of R. Give it more, for the slow ones."


class RestartBehindNginx(checks.NumberExercise):
    prompt = ("Two upstreams behind nginx share 100 requests a second, each taking 400 ms; nginx takes turns. One is "
              "restarted without a drain and is down for 0.6 s, while nginx still sends to it. About how many "
              "requests fail?")
    expected = 100 * 0.4 / 2 + 100 * 0.6 / 2
    rel_tol = 0.1
    unit = "requests"
    mistakes = {20: "counts only those in flight on it: those sent to it while it is down fail too.",
                30: "counts only those sent while it is down: it also held half of L when it stopped.",
                100: "forgets that nginx takes turns: this upstream gets every other request."}
    hint_text = ["L = X·R are in flight through nginx, and half of them on each upstream.",
                 "While it is down, every other request is sent to it, and fails at once."]
    solution_text = ("Half of L = X·R = 40, so 20 in flight on it, and half of the 60 sent in its 0.6 s down: 30. "
                     "50 in all.")


# --- Section 4: cancellation that leaks --------------------------------------------------------------------------


class LeakedRate(checks.NumberExercise):
    prompt = ("A pool of 10 connections, each request holding one for 100 ms. 4 requests were cancelled while holding "
              "one, and the handler releases on the line after its await. What throughput now, in requests a second?")
    expected = (10 - 4) / 0.1
    rel_tol = 0.1
    unit = "requests/s"
    mistakes = {100: "is the whole pool: the 4 slots never came back.", 40: "counts the lost slots, not the left."}
    hint_text = "The bottleneck law: X = slots / T, with the slots that are left."
    solution_text = "(10 − 4) / 0.1 s = 60 requests a second, and each further cancellation takes 10 more away."


class UntilStall(checks.NumberExercise):
    prompt = "The same pool: how many more cancellations until it serves nothing at all?"
    expected = 6
    rel_tol = 0
    unit = "cancellations"
    mistakes = {10: "forgets the 4 already lost."}
    hint_text = "Each cancellation inside the handler keeps one slot for good."
    solution_text = "6: the slots left. Then every request waits for a slot that never comes back."


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
