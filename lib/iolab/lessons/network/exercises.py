"""Exercises for lesson 14, the network: `from iolab.lessons.network import exercises as ex; ex.q1.check(answer)`."""

from iolab import checks

from . import model
from .parameters import PAGE_ANSWER_BYTES


class TenInSequence(checks.NumberExercise):
    prompt = ("A new connection, then 10 short requests one after another, each sent when the last answer is in: how"
              " many round trips in all?")
    expected = 11
    rel_tol = 0.0
    abs_tol = 0.1
    unit = "round trips"
    mistakes = {10: "counts the requests and forgets the connect: the SYN and the SYN-ACK are a round trip too.",
                20: "counts a connect for every request: these 10 share one connection.",
                2: "is the pipelined case: here each request waits for the answer before it."}
    hint_text = ["The connect is one round trip: the SYN goes out, the SYN-ACK comes back.",
                 "Each request then waits for its answer before the next leaves."]
    solution_text = "1 + 10 = 11: the connect, then one round trip per request."


class TenPipelined(checks.NumberExercise):
    prompt = "The same 10 requests written all at once on a new connection (pipelined): how many round trips?"
    expected = 2
    rel_tol = 0.0
    abs_tol = 0.1
    unit = "round trips"
    mistakes = {1: "forgets the connect.", 11: "is one after another: here no request waits for an answer."}
    hint_text = "The 10 requests leave together, so they cross the link together. And before them?"
    solution_text = "2: the connect, then one round trip that carries all 10 requests and brings back all 10 answers."


class AnswerOnTheLink(checks.NumberExercise):
    prompt = ("τ: how many milliseconds does one answer of B bytes (`plan.answer_bytes`) take on a link of"
              " `plan.rate_mbit` megabits a second, once the link is full? Write it from the two.")
    rel_tol = 0.1  # the headers each segment carries add 4 %
    unit = "ms"
    hint_text = ["A megabit is a million bits, and a byte is 8 bits.",
                 "Bytes × 8 is bits; bits divided by bits a second is seconds."]
    solution_text = "τ = B × 8 / (rate × 10⁶) seconds: 400,000 bytes at 16 Mbit/s take 0.2 s, 200 ms."

    def judge(self, answer, answer_bytes=0, rate_mbit=1, **context):
        seconds = answer_bytes * 8 / (rate_mbit * 1e6)
        self.expected = seconds * 1000
        self.mistakes = {seconds / 8 * 1000: "forgets that a byte is 8 bits.", seconds: "is in seconds: the unit is ms."}
        return super().judge(answer)


class WhoWaits(checks.ChoiceExercise):
    prompt = ("2w slow clients download while a short request arrives. At which server does the short request wait"
              " for a slow answer: 'gunicorn alone', 'nginx in front' or 'Tornado'?")
    choices = {"gunicorn alone": "",
               "nginx in front": "nginx reads the whole answer from gunicorn at loopback speed, then sends it itself.",
               "Tornado": "Tornado's loop hands each answer to the kernel and its own buffer, then serves the next."}
    correct = "gunicorn alone"
    correct_text = ("Each sync worker writes its answer to the socket and waits until the slow link has taken it."
                    " The short request waits in the kernel's queue for a worker.")
    hint_text = "Which of the three has a process that can do nothing else while an answer crosses the link?"
    solution_text = "'gunicorn alone': its w workers are held by the slow answers; nginx and Tornado are not."


class RoundsFor500kB(checks.NumberExercise):
    prompt = "How many round trips does an answer of 500,000 bytes take on a new connection, from ten segments?"
    expected = 6
    rel_tol = 0.0
    abs_tol = 0.1
    unit = "round trips"
    mistakes = {35: "keeps the window at ten segments: it doubles every round.",
                34: "keeps the window at ten segments: it doubles every round.",
                5: "is one round short: five rounds carry 10 × 31 = 310 segments, and 500,000 bytes are 346."}
    hint_text = ["500,000 bytes are 346 segments of 1,448 bytes.",
                 "k rounds carry 10, 30, 70, 150, 310, 630... segments: 10 × (2^k − 1)."]
    solution_text = "6: 346 segments need 10 × (2^k − 1) ≥ 346, so k = 6 (five rounds carry only 310)."


class FastestUnderLoss(checks.ChoiceExercise):
    prompt = "At this loss, which of 'reno', 'cubic' and 'bbr' sends the same bytes fastest?"
    choices = {"reno": "Reno halves its window at every loss and grows back one segment a round: the slowest.",
               "cubic": "CUBIC grows back faster than Reno, but still halves at every loss.",
               "bbr": ""}
    correct = "bbr"
    correct_text = ("BBR sends at the rate it measures, and a random loss does not change that rate. On a link"
                    " whose losses are not congestion, that is many times faster.")
    hint_text = "Which of the three reads a lost packet as a sign to slow down?"
    solution_text = "'bbr': Reno and CUBIC halve at each loss; BBR does not read loss as congestion."


class SlowConnects(checks.NumberExercise):
    prompt = ("At `plan.loss_percent` % loss each way, about how many of `plan.connects` connects take a second or"
              " more? Write it from the two.")
    rel_tol = 0.15
    unit = "connects"
    hint_text = ["A connect waits the second when its SYN is lost, or when the SYN-ACK back is lost.",
                 "At p = 2 %, the chance that neither is lost is 0.98 × 0.98."]
    solution_text = ("connects × (1 − (1 − p)²), about twice the loss rate times the connects: at 2 % and 200"
                     " connects, 200 × (1 − 0.98²) = 7.9.")

    def judge(self, answer, loss_percent=2.0, connects=200, **context):
        p = loss_percent / 100
        self.expected = connects * (1 - (1 - p) ** 2)
        self.mistakes = {connects * p: "counts the lost SYNs only: a lost SYN-ACK leaves the client waiting the same"
                                       " second."}
        return super().judge(answer)


class WhichWinsClean(checks.ChoiceExercise):
    prompt = ("A page of `plan.page_requests` answers of 20 kB on a new clean link: which finishes first, 'h2' (HTTP/2,"
              " all on one connection) or 'h1' (HTTP/1.1 on six connections, one request at a time on each)?")
    hint_text = ["Count round trips, as in sections 1 and 3. HTTP/2 asks for every answer at once.",
                 "HTTP/1.1 asks for an answer only once the last one on that connection is in."]
    solution_text = ("Count both. At 60 answers, 'h2': 1 + 7 = 8 round trips (1.2 MB in slow start) against"
                     " 1 + 2 + 9 = 12 (each connection's first answer in 2 rounds, its 9 others in one each).")

    def judge(self, answer, page_requests=60, **context):
        h2 = model.page_h2_rtts(page_requests, PAGE_ANSWER_BYTES)
        h1 = model.page_h1_rtts(page_requests, PAGE_ANSWER_BYTES, 6)
        self.correct = "h2" if h2 < h1 else "h1"
        self.choices = {"h2": f"{page_requests} answers on one window: {h2} round trips, against {h1} on six.",
                        "h1": f"Six connections take {h1} round trips: each waits one for every answer after its"
                              f" first. One connection takes {h2}."}
        self.correct_text = f"{h2} round trips for 'h2' against {h1} for 'h1'."
        return super().judge(answer)


class WhichWinsLossy(checks.ChoiceExercise):
    prompt = ("The same page at `plan.loss_percent` % loss each way, the server's sender Reno: which finishes first now,"
              " 'h2' or 'h1'? Use section 4's rate.")
    choices = {"h2": "Its one connection has one window for every stream: each loss halves it for all of them.",
               "h1": ""}
    correct = "h1"
    correct_text = ("A loss halves one window of six, and only that connection's answers wait. HTTP/2's one window"
                    " carries six times the bytes at one connection's Mathis rate.")
    hint_text = ["Section 4: a Reno connection under loss moves about Mathis's rate, whatever it carries.",
                 "Six connections move six such rates; one moves one. Compare the page's bytes over each."]
    solution_text = ("'h1': at Mathis's rate, HTTP/2 needs the whole page's time on one connection; HTTP/1.1's six"
                     " each carry a sixth, plus a round trip an answer. HTTP/2 moved head-of-line blocking into TCP.")


class NagleOnLoopback(checks.PredictThenMeasure):
    prompt = ("On loopback, a request sent as two writes before one read, with Nagle's algorithm on: how many"
              " milliseconds more than with TCP_NODELAY, per request?")
    rel_tol = 0.3
    unit = "ms"
    quantity = "the stall"
    off_text = "Which timer does the first write's ACK wait for, on the server's side?"
    correct_text = ("The stall is the receiver's delayed-ACK timer, 40 ms at least on Linux: a round trip on loopback"
                    " costs microseconds, so the timer is all of it.")
    hint_text = ["Nagle holds a small write while an earlier one is not yet acknowledged.",
                 "The server gets half a request and has nothing to send, so it delays its ACK. For how long?"]
    solution_text = "About 40 ms: Linux's shortest delayed ACK (TCP_DELACK_MIN), plus a loopback round trip of ~0."

    def measure(self, stall_ms):
        return stall_ms


class NagleOnTheLink(checks.PredictThenMeasure):
    prompt = ("On the link, the same two writes before one read with Nagle on: how many milliseconds more than with"
              " TCP_NODELAY? Give a number from the link's RTT.")
    rel_tol = 0.25
    unit = "ms"
    quantity = "the stall"
    off_text = "The second write leaves only when the first write's ACK is back: how long is that, and then?"
    correct_text = ("The delayed ACK, then the ACK's way back and the second write's way out: one round trip more"
                    " than with TCP_NODELAY, and the 40 ms.")
    hint_text = ["With TCP_NODELAY, both writes leave at once: the answer comes one round trip later.",
                 "With Nagle on, the second write waits for the ACK: out, 40 ms, back, then out again."]
    solution_text = "40 ms + RTT: the second write starts one round trip and the delayed ACK late."

    def measure(self, stall_ms):
        return stall_ms


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
