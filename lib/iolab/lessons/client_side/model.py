"""Lesson 11's prediction for a fan-out.

Lesson 11's prediction for a fan-out: ⌈n/P⌉ rounds of Z, with its bounds built from the same run.
"""

import math

TIMER_RESOLUTION_S = 0.001  # asyncio's epoll waits in whole milliseconds: a sleep may end up to 1 ms late


def predict(how, P, T_s, calls, work_s):
    """The row a fan-out keeps: its calls, (sent, answered) each in seconds, of Z at most P at once.

    The P calls answered first are the first round: their median time beyond Z is a call's overhead in this run.
    `work_s` is every second of CPU the client and the server spent in the run, and every second either waited
    for a CPU: the most that can lie on the path besides the rounds of Z (and the timer's resolution, once a
    round). No call of a second round can be answered within 2Z of the start: it waited for a first-round call.
    And every call of the first round is answered within Z and all that could lie on its path: so the calls
    answered within 2Z are at most P, and those answered within Z + work at least P (or n, if fewer).
    """
    n = len(calls)
    rounds = math.ceil(n / P)
    began = min(sent for sent, _ in calls)
    measured_s = max(answered for _, answered in calls) - began
    first = sorted(calls, key=lambda call: call[1])[:P]
    excess = sorted(answered - sent - T_s for sent, answered in first)
    overhead_s = excess[len(excess) // 2]
    return {
        "how": how, "limit": P, "calls": n, "T_ms": T_s * 1000, "rounds": rounds,
        "predicted_s": rounds * (T_s + overhead_s), "measured_s": measured_s,
        "low_s": rounds * T_s, "high_s": rounds * T_s + work_s + rounds * TIMER_RESOLUTION_S,
        "overhead_ms": overhead_s * 1000, "work_ms": work_s * 1000,
        "answered_in_two_T": sum(1 for _, answered in calls if answered - began < 2 * T_s),
        "answered_in_T_and_work": sum(1 for _, answered in calls
                                      if answered - began <= T_s + work_s + TIMER_RESOLUTION_S),
        "predicted_rps": P / (T_s + overhead_s), "measured_rps": n / measured_s,
    }
