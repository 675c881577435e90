"""Exercises for lesson 12, long-lived connections.

`from iolab.lessons.long_lived import exercises as ex`.
"""

from iolab import checks

# --- Section 1: what an open connection costs -------------------------------------------------------------------


class IdleMemory(checks.NumberExercise):
    prompt = ("A server process takes 40 MiB with no one connected. Each idle WebSocket adds 14 KiB. "
              "How much memory does it take with 10,000 subscribers, in MiB?")
    expected = 40 + 10_000 * 14 / 1024
    rel_tol = 0.03
    unit = "MiB"
    mistakes = {10_000 * 14 / 1024: "leaves out the 40 MiB the process takes before anyone connects.",
                40 + 10_000 * 14 / 1000: "divides by 1000: a MiB is 1024 KiB."}
    hint_text = "RSS(N) = M0 + N·m, with M0 = 40 MiB and m = 14 KiB. Turn KiB into MiB: divide by 1024."
    solution_text = "40 + 10,000 × 14 / 1024 ≈ 40 + 137 = 177 MiB."


class CompressedBudget(checks.NumberExercise):
    prompt = ("With permessage-deflate on, each subscriber costs 160 KiB. The process starts at 40 MiB. How many "
              "subscribers fit in Binder's 2 GiB (2,048 MiB)?")
    expected = (2048 - 40) * 1024 / 160
    rel_tol = 0.03
    unit = "subscribers"
    mistakes = {2048 * 1024 / 160: "forgets the 40 MiB the process needs before the first subscriber.",
                (2048 - 40) * 1024 / 14: "is without compression: 14 KiB each."}
    hint_text = ["N_max = (budget − M0) / m.", "Work in KiB: (2,048 − 40) MiB × 1024 KiB a MiB, over 160 KiB."]
    solution_text = "(2,048 − 40) × 1024 / 160 ≈ 12,850 subscribers: ten times fewer than the 147,000 without it."


# --- Section 2: long polling on sync workers ---------------------------------------------------------------------


class SyncPolls(checks.NumberExercise):
    prompt = "4 sync workers: how many long polls can they hold at once?"
    expected = 4
    rel_tol = 0
    unit = "long polls"
    mistakes = {5: "counts the backlog: a poll waiting there is not held by a worker yet, and gets no answer.",
                1: "is one worker: each of the 4 holds one."}
    hint_text = "A sync worker serves one request at a time, start to end. A parked poll is a request not yet ended."
    solution_text = "4: one per worker. The fifth waits in the listen backlog until a worker is free."


class GetWaits(checks.NumberExercise):
    prompt = ("4 sync workers hold 4 long polls. A GET / arrives now, and the next message comes in 10 s. About how "
              "long does the GET wait, in seconds?")
    expected = 10
    rel_tol = 0.1
    unit = "s"
    mistakes = {0: "is an event loop: here no worker is free to read the GET before the message frees one.",
                40: "adds up the 4 polls: the message frees all 4 workers at once."}
    hint_text = ["Which worker could read the GET? Each is parked until the message.",
                 "The message frees every parked worker at the same moment."]
    solution_text = "About 10 s: a closed system with N = w = 4. The GET waits for a worker, so for the message."


class ParkedTimeout(checks.ChoiceExercise):
    prompt = ("A sync worker runs with --timeout 30. Its long poll waits for a message that comes every 60 s. "
              "What happens? 'it answers after 60 s', 'its worker is killed after about 30 s' or "
              "'it answers after 30 s with no news'.")
    choices = {
        "it answers after 60 s": "only if nothing watched the worker: gunicorn's arbiter does.",
        "its worker is killed after about 30 s": "",
        "it answers after 30 s with no news": "the server would have to be written to do that; gunicorn kills, it "
                                              "does not answer.",
    }
    correct = "its worker is killed after about 30 s"
    correct_text = "the arbiter kills a worker silent for longer than --timeout, and the client gets an error."
    hint_text = "A worker parked in a loop says nothing to the arbiter. What does the arbiter do after 30 s of silence?"
    solution_text = ("'its worker is killed after about 30 s': gunicorn logs WORKER TIMEOUT, and the client gets "
                     "status 500 instead of the message.")


# --- Section 3: fan-out ------------------------------------------------------------------------------------------


class LastOnOneCpu(checks.NumberExercise):
    prompt = ("One message goes to 10,000 subscribers. The server spends 20 µs of CPU per delivery, the client "
              "10 µs. Both share one CPU. When does the 10,000th subscriber get it, in ms?")
    expected = 10_000 * 30e-3
    rel_tol = 0.05
    unit = "ms"
    mistakes = {200.0: "is the server alone, or two CPUs: on one CPU the client's work waits its turn too.",
                100.0: "is the client alone.",
                0.03: "is one delivery: the 10,000th waits for the 9,999 before it."}
    hint_text = ["On one CPU, every delivery's server work and client work take turns.",
                 "The last one comes after N × (D_server + D_client)."]
    solution_text = "10,000 × (20 + 10) µs = 300 ms."


class LastOnTwoCpus(checks.NumberExercise):
    prompt = ("The same broadcast, but the server and the client each have a CPU of their own. When does the last one "
              "get it, in ms?")
    expected = 10_000 * 20e-3
    rel_tol = 0.05
    unit = "ms"
    mistakes = {300.0: "is one CPU: now the two stations work at the same time.",
                100.0: "is the client, but the slower station sets the pace."}
    hint_text = ["The client reads message i while the server sends message i + 1.",
                 "Two stations in series: the slower one, the bottleneck, sets the pace."]
    solution_text = "10,000 × max(20, 10) µs = 200 ms: the server is the bottleneck."


class DearestTransport(checks.ChoiceExercise):
    prompt = ("Which transport costs the server the most CPU per delivered message: 'long poll', 'sse' or "
              "'websocket'?")
    choices = {"long poll": "",
               "sse": "an SSE event is a few bytes written to a response that stays open.",
               "websocket": "a WebSocket message is a frame header and the payload, on an open connection."}
    correct = "long poll"
    correct_text = "each message ends a response, and the client sends a whole new request for the next."
    hint_text = "After each message, what does a long-polling client have to do before it can get the next one?"
    solution_text = ("'long poll': every message is a whole HTTP exchange: parse a request, route it, write "
                     "headers, close the response. SSE and WebSocket only write a frame.")


# --- Section 4: the ladder ---------------------------------------------------------------------------------------


class FrameOnceBudget(checks.NumberExercise):
    prompt = ("The floor here is 5 µs per subscriber: one send() each. A broadcaster spends 1.5 times the floor. "
              "How long does its one CPU take to reach 10,000 subscribers, in ms?")
    expected = 10_000 * 7.5e-3
    rel_tol = 0.05
    unit = "ms"
    mistakes = {50.0: "is the floor itself: the broadcaster spends 1.5 times it.",
                7.5: "is 1,000 subscribers."}
    hint_text = "N × D, with D = 1.5 × 5 µs."
    solution_text = "10,000 × 7.5 µs = 75 ms."


# --- Section 5: a slow consumer ----------------------------------------------------------------------------------


class AwaitBehindStopped(checks.ChoiceExercise):
    prompt = ("A broadcaster awaits each send in turn. Subscriber 1 stops reading, and its kernel buffers fill. "
              "What do subscribers 2 to 1,000 see? 'on time', 'late, until subscriber 1 reads or is dropped', "
              "or 'nothing, ever'.")
    choices = {"on time": "that is a broadcaster that does not wait for each send.",
               "late, until subscriber 1 reads or is dropped": "",
               "nothing, ever": "the wait ends when subscriber 1 reads again, or when a limit drops it."}
    correct = "late, until subscriber 1 reads or is dropped"
    correct_text = "the loop waits on subscriber 1's send, and everyone behind it in the loop waits too."
    hint_text = "`await ws.send(...)` returns only when the bytes are handed to the kernel. Can they be, for subscriber 1?"
    solution_text = ("'late, until subscriber 1 reads or is dropped': head-of-line blocking in a fan-out. One "
                     "stopped reader holds the loop, and everyone behind it waits.")


class BufferGrowth(checks.NumberExercise):
    prompt = ("A broadcaster that does not wait sends 50 messages a second of 64 KiB each. One subscriber has "
              "stopped, and its kernel buffers are full. How fast do the server's unsent bytes for it grow, in "
              "KiB a second?")
    expected = 50 * 64
    rel_tol = 0.03
    unit = "KiB/s"
    mistakes = {64.0: "is one message: 50 arrive each second.", 50.0: "counts messages, not KiB."}
    hint_text = "Nothing leaves: every message stays in the server's buffer. Rate × size."
    solution_text = "50 × 64 KiB = 3,200 KiB a second."


class DroppedAfter(checks.NumberExercise):
    prompt = ("The same stopped subscriber, and a cap of 1,024 KiB of unsent bytes. How many seconds after its "
              "kernel buffers fill is it dropped?")
    expected = 1024 / 3200
    rel_tol = 0.05
    unit = "s"
    mistakes = {3200 / 1024: "is upside down: bytes to hold over bytes a second."}
    hint_text = "The cap over the growth rate of the last question."
    solution_text = "1,024 KiB / 3,200 KiB a second = 0.32 s."



# --- Section 6: through a proxy ----------------------------------------------------------------------------------


class NoUpgrade(checks.ChoiceExercise):
    prompt = ("Without the two proxy_set_header lines, what does the WebSocket handshake get? "
              "'101 Switching Protocols', 'a refusal from the upstream server' or "
              "'a WebSocket that opens but gets no messages'.")
    choices = {
        "101 Switching Protocols": "needs the Upgrade header to reach the server, and nginx dropped it.",
        "a refusal from the upstream server": "",
        "a WebSocket that opens but gets no messages": "a WebSocket opens only with a 101, and that needs the "
                                                       "headers.",
    }
    correct = "a refusal from the upstream server"
    correct_text = "the server sees a plain GET /ws, with no Upgrade header, and refuses it (Tornado: 400)."
    hint_text = "Hop-by-hop headers stop at the proxy. What request reaches the server without them?"
    solution_text = ("'a refusal from the upstream server': it gets a GET with no Upgrade header, which is not a "
                     "WebSocket handshake. Tornado answers 400 Bad Request.")


class QuietWebSocket(checks.NumberExercise):
    prompt = ("nginx's proxy_read_timeout is 60 s. Through it, a chat page's WebSocket gets a message at t = 0 s "
              "and another at t = 45 s; then it stays quiet for 5 minutes. At what t, in seconds, does nginx close it?")
    expected = 105
    rel_tol = 0.05
    unit = "s"
    mistakes = {60: "counts from the first message: nginx's timer starts again with every read from the upstream.",
                45: "is when the last message came: nginx waits the timeout after it.",
                345: "is when the quiet ends: nginx gives up first.",
                0: "an open WebSocket is fine to nginx until the upstream has been silent for the timeout."}
    hint_text = "proxy_read_timeout counts the time since nginx last read anything from the upstream."
    solution_text = "45 + 60 = 105 s: nginx closes a connection whose upstream sent nothing for proxy_read_timeout."


class Heartbeat(checks.ChoiceExercise):
    prompt = ("Which heartbeat keeps that quiet WebSocket open? 'a ping every 30 s', 'a ping every 90 s' or "
              "'none: an open WebSocket stays open'.")
    choices = {
        "a ping every 30 s": "",
        "a ping every 90 s": "leaves 90 s between pongs: nginx closes it at 60 s.",
        "none: an open WebSocket stays open": "nginx closes any connection whose upstream is silent for the timeout.",
    }
    correct = "a ping every 30 s"
    correct_text = "each pong is data from the upstream, and restarts nginx's 60 s timer."
    hint_text = "The timer restarts each time the server sends something. The pong is such a thing."
    solution_text = "'a ping every 30 s': each pong restarts the timer before it reaches 60 s."


# --- Section 7: your browser -------------------------------------------------------------------------------------


class PageEchoes(checks.NumberExercise):
    prompt = "Five messages are published while the page is open. How many echoes do you expect the server to get?"
    expected = 10
    rel_tol = 0
    unit = "echoes"
    mistakes = {5: "counts one subscription: the page holds two, a WebSocket and an EventSource."}
    hint_text = "The page echoes every message it gets, on each of its subscriptions."
    solution_text = "10: each message arrives twice, once by WebSocket and once by EventSource, and each is echoed."


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
