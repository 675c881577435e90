"""Lesson 03's results file and its closing claims, one line each.

Each claim is judged between two predictions made from the run's own figures: C answered as soon as it was
sent (plus what C takes alone, measured in C,A and C,B), or C answered only when the handler ahead of it
answered. The measurement must sit nearer the prediction the claim makes.
"""

import sys

from iolab.claims import Claims

LESSON = "03-handler-ordering"
# Whether C waits for the handler sent before it: the claim each two-request order makes.
C_WAITS = {"A,C": True, "B,C": False, "D,C": True, "A′,C": False}


def results(plan, *, orders, abc_done_ms, threaded_c_ms, exercises, neighbours=None):
    """This run's figures as plain data: what the results file holds and what the claims are checked on.
    `neighbours` maps each run ("A,C", "A,B,C", "threaded A,C", ...) to what else held the CPUs while it ran."""
    return {
        "orders": orders,
        "a_b_c_done_ms": abc_done_ms,
        "threaded_A,C_second_done_ms": threaded_c_ms,
        "switch_interval_ms": sys.getswitchinterval() * 1000,
        "parameters": {"delay_ms": plan.delay_ms, "gap_ms": plan.gap_ms},
        "neighbours": {run: others.as_dict() for run, others in (neighbours or {}).items()},
        "exercises": exercises,
    }


MS = {"unit": "ms", "spec": ".0f"}  # how this lesson's times print: whole milliseconds


def check_claims(results):
    """Check the lesson's claims on `results`, print one line each, and raise ClaimsFailed naming any that failed."""
    claims = Claims(LESSON)
    orders, abc_done_ms = results["orders"], results["a_b_c_done_ms"]
    delay_ms, gap_ms = results["parameters"]["delay_ms"], results["parameters"]["gap_ms"]
    c_alone_ms = max(orders["C,A"]["first_done_ms"], orders["C,B"]["first_done_ms"])
    c_at_once_ms = gap_ms + c_alone_ms
    for order, c_waits in C_WAITS.items():
        first_ms, c_ms = orders[order]["first_done_ms"], orders[order]["second_done_ms"]
        right, wrong = (first_ms, c_at_once_ms) if c_waits else (c_at_once_ms, first_ms)
        claim = f"{order}: C {'waits for' if c_waits else 'does not wait for'} {order[:-2]}"
        claims.nearer(claim, c_ms, right, wrong, **MS)
    # Nothing finishes its wait early, and nothing sleeps through another's delay: each sleeper answered nearer
    # one delay after it was sent than two. A timer never fires before its delay and D computes delay_ms of its
    # own CPU time, which takes at least as long on the clock; each starts after its request arrived, so after
    # the client sent it (the client's own send time, not the planned gap: a busy client sends late, never early).
    for order, o in orders.items():
        first, second = order.split(",")
        slow, sent = (first, 0) if second == "C" else (second, o["second_sent_ms"])
        took = (o["first_done_ms"] if second == "C" else o["second_done_ms"]) - sent
        claims.check(f"{order}: {slow} took at least its delay", took >= delay_ms, f"{took:.3f} ms",
                     f"[{delay_ms}, ∞) ms",
                     f"{order}: {slow} answered {took:.3f} ms after it was sent, under its {delay_ms} ms")
        if slow != "D":
            claims.nearer(f"{order}: {slow} slept one delay", took, delay_ms, 2 * delay_ms, **MS)
    # A, then B, then C: B is read only when A is done, so it answers after two delays; C right after A.
    claims.nearer("A,B,C: B's timer starts when the loop reads B", abc_done_ms["B"], 2 * delay_ms, delay_ms + gap_ms, **MS)
    claims.nearer("A,B,C: C waits for A only", abc_done_ms["C"], abc_done_ms["A"], 2 * gap_ms + c_alone_ms, **MS)
    claims.nearer("threaded A,C: C does not wait for A", results["threaded_A,C_second_done_ms"], c_at_once_ms,
                  orders["A,C"]["first_done_ms"], **MS)
    held = claims.report()
    print("C waited only behind A and D, which hold the loop's thread; B and A′ let it go.")
    return held

