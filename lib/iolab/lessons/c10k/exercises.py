"""Exercises for lesson 07, C10k.

`from iolab.lessons.c10k import exercises as ex; ex.q1.check(answer)`.
"""

import numbers

from iolab import checks

from . import limits


class SocketsForTenThousand(checks.NumberExercise):
    prompt = (
        "The lab's client holds 10,000 connections to a server on this same machine. "
        "How many TCP sockets does the kernel keep for them?"
    )
    expected = 20_000
    rel_tol = 0.0
    abs_tol = 10.0
    mistakes = {
        10_000: "counts one end of each connection. Over loopback both ends live in this kernel: the client's and the server's.",
        30_000: "counts a listening socket per connection: there is one listening socket for the whole server.",
    }
    too_high_text = "there is one listening socket for the whole server, not one per connection."
    too_low_text = "every connection has two ends, and on one machine the kernel keeps both."
    hint_text = ["Whose sockets are they? Count the client's, then the server's.", "Loopback: both ends are here."]
    solution_text = "20,000: a socket at each end of every connection (/proc/net/sockstat's `inuse` goes up by 2 per connection)."


class WhatAStackCosts(checks.ChoiceExercise):
    prompt = (
        "Each thread of the thread server gets an 8 MiB stack. Which grows by about 8 MiB per connection: "
        "'rss' (memory the process actually touched), 'vsz' (address space it reserved) or 'both'?"
    )
    choices = {
        "rss": "RSS counts only pages written to. A thread waiting in recv() has used a few KiB of its stack.",
        "vsz": "",
        "both": "only one of them: a stack is reserved whole, but its pages are given out only when touched.",
    }
    correct = "vsz"
    correct_text = (
        "The stack is address space reserved up front; the kernel gives it pages one at a time as they are touched."
        " Address space runs out (RLIMIT_AS, 32-bit processes, strict overcommit) long before memory does."
    )
    hint_text = "Compare the thread server's 'virtual KiB per connection' with its 'RSS KiB per connection' above."
    solution_text = "'vsz': about 8 MiB of address space per thread, against a few dozen KiB of RSS."


class ThreadServerRss(checks.PredictThenMeasure):
    prompt = (
        "From the thread server's memory at the probe (its RSS with no connection, and its slope in KiB per "
        "connection), predict its RSS in MiB when it holds N connections."
    )
    # The lesson's own check of this prediction uses this same tolerance, of the measured RSS (rss_prediction_holds):
    # a run that passes it never marks the formula wrong.
    rel_tol = 0.25
    unit = "MiB"
    quantity = "the thread server's RSS"
    off_text = "RSS grows by the slope for every connection: base + N × slope / 1024."
    correct_text = "A thread per connection costs memory in a straight line: what a probe measures, N times over."
    hint_text = [
        "RSS at N = RSS with no connection + N × (KiB per connection).",
        "Mind the units: the slope is in KiB, the answer in MiB (divide by 1024).",
    ]
    solution_text = "base_mb + N * slope_kb / 1024, with the probe's figures: the slope hardly changes with N."

    def measure(self, measured_mb):
        return measured_mb

    @classmethod
    def holds(cls, predicted_mb, measured_mb):
        """The lesson's claim: base + N × slope predicts the RSS at N within this exercise's tolerance."""
        return abs(measured_mb - predicted_mb) <= cls.rel_tol * abs(measured_mb)


class WhatAnIdleConnectionCosts(checks.ChoiceExercise):
    prompt = (
        "The probe measured what one idle connection costs the thread server in RSS. Predict what one costs an "
        "event loop (Tornado, the hand-built loop): 'more', 'about the same' or 'less'?"
    )
    choices = {
        "more": "an event loop keeps no thread per connection: no stack, no thread structures, only a few objects.",
        "about the same": (
            "both keep a socket object and a buffer per connection, but only the thread server adds a thread:"
            " its stack pages, its thread-local state and the kernel's record of it."
        ),
        "less": "",
    }
    correct = "less"
    correct_text = (
        "An idle connection is a socket and a few objects waiting on a read; a thread per connection adds the"
        " touched part of a stack and a thread's state in the process and in the kernel."
    )
    hint_text = ["What does the thread server keep for a connection that an event loop does not?",
                 "A thread: a stack (partly touched), thread state, and a kernel stack of its own."]
    solution_text = "'less': no thread per connection, so no stack pages and no thread state for it."


class FreshRequestAgainstN(checks.ChoiceExercise):
    prompt = (
        "An event loop on epoll holds N/100, then N/10, then N idle connections, and times one more request "
        "beside them each time. How does that fresh request's latency change from N/100 to N: 'flat', "
        "'grows in proportion to N' or 'grows as N squared'?"
    )
    choices = {
        "flat": "",
        "grows in proportion to N": (
            "that is select() and poll(): they hand the kernel every descriptor on every call. epoll keeps the"
            " interest list in the kernel and reports only the ready ones, so the idle ones cost nothing per wait."
        ),
        "grows as N squared": "nothing here visits every pair of connections; and epoll does not even visit each one.",
    }
    correct = "flat"
    correct_text = (
        "epoll_wait() returns the ready descriptors only: its cost follows the active connections, not the idle"
        " ones. select() and poll() pass the whole list on every call, so with them it would grow with N."
    )
    hint_text = ["When the loop waits, who walks the list of connections: the kernel on every call, or nobody?",
                 "epoll keeps the interest list in the kernel, between calls."]
    solution_text = "'flat': epoll_wait() reports only ready descriptors, so idle connections cost a wait nothing."


class PortsPerSourceAddress(checks.NumberExercise):
    prompt = (
        "net.ipv4.ip_local_port_range on this machine is printed above. How many connections can one source "
        "address open to one server address and port?"
    )
    rel_tol = 0.0
    abs_tol = 0.0
    too_high_text = "connect() picks the source port from ip_local_port_range only, not from all 65,535 ports."
    too_low_text = "count every port of the range: both ends are included."
    hint_text = ["The 4-tuple (source address, source port, server address, server port) must be unique.",
                 "Only the source port varies: count the ports in the range, both ends included."]
    solution_text = "high - low + 1 of ip_local_port_range (28,232 for 32768-60999): one connection per source port."

    def expected(self):
        return limits.ports_per_source()

    @property
    def mistakes(self):
        low, high = limits.port_range()
        return {
            high - low: "leaves out one end: the range is inclusive.",
            65_535: "is every port there is; connect() only picks from ip_local_port_range.",
        }


class WhenTheDroppedGetIn(checks.ChoiceExercise):
    prompt = (
        "600 connects reach tornado_app (listen backlog 128) while its only thread sleeps 500 ms in a handler. "
        "The kernel completes 129 of them. When do most of the others get in: '0.5 s', '1 s' or '2 s'?"
    )
    choices = {
        "0.5 s": "nobody tells the client when the loop frees up: its SYN was dropped, not queued.",
        "1 s": "",
        "2 s": "TCP's first retransmission comes sooner: after 1 s (then 3 s, 7 s, each wait twice the last).",
    }
    correct = "1 s"
    correct_text = (
        "A full accept queue drops the SYN without a word; the client's TCP resends it after its initial"
        " retransmission timeout, 1 s. One dropped SYN adds a second to a connect."
    )
    hint_text = ["Does the kernel queue a SYN it has no room for, or drop it?", "Who sends it again, and when?"]
    solution_text = "'1 s': the SYNs were dropped; the client resent them after TCP's initial 1 s timeout."


class WhomTheOomKillerKills(checks.ChoiceExercise):
    prompt = (
        "A server and an idle process that holds more memory than the server share one cgroup. The server's new "
        "connections push the group past its memory limit. Which does the kernel kill first: 'the server', "
        "'the bystander' or 'both at once'?"
    )
    choices = {
        "the server": (
            "the OOM killer does not look for the process that asked for the page; it scores every process in the"
            " group (oom_score: mostly resident memory) and kills the highest."
        ),
        "the bystander": "",
        "both at once": "the kernel kills one process, the highest oom_score, then looks again if memory is still short.",
    }
    correct = "the bystander"
    correct_text = (
        "The OOM killer picks by oom_score, which is mostly how much memory a process holds, not by who crossed the"
        " line. In a container, that can be your notebook's kernel while the server that grew lives on."
    )
    hint_text = ["Does the kernel know which process 'caused' the shortage, or only how much each one holds?",
                 "Look up /proc/PID/oom_score: what is it made of?"]
    solution_text = "'the bystander': it has the highest oom_score (the most memory), so it dies first, idle as it is."


class WrkHidesTheWait(checks.PredictThenMeasure):
    prompt = (
        "wrk reported its requests per second X for the four sync workers, with C connections open all the "
        "time. Predict the median latency in seconds that the lab's client, which records every request, measures."
    )
    rel_tol = 0.2
    unit = "s"
    quantity = "the lab client's median latency"
    timeout_text = (
        "is wrk's --timeout: where wrk stops timing, not where the requests stop waiting. The requests wrk counted"
        " as timeouts kept waiting, and the lab's client timed them."
    )
    off_text = "Little's law: C requests are always in flight, X leave per second, so each spends C / X in the system."
    correct_text = (
        "wrk's own throughput gives the wait away: C / X is well past its timeout, and it is the latency that"
        " wrk left out of its report, counting those requests as timeouts instead."
    )
    hint_text = ["Little's law: L = X × R. What are L and X here?", "L is the connections (always busy), X wrk's req/s."]
    solution_text = "connections / wrk's requests per second: each request waits behind all the others, C / X seconds."

    def measure(self, measured_s, timeout_s=None):
        return measured_s

    def judge(self, answer, measured_s=None, timeout_s=None):
        # wrk's timeout is the answer wrk's report invites; the scene waits well past it (scene.OVER_TIMEOUT), and
        # an answer nearer the timeout than the measured median is that answer, whatever the tolerance says.
        value = float(answer) if isinstance(answer, numbers.Real) and not isinstance(answer, bool) else None
        if value is not None and timeout_s is not None and abs(value - timeout_s) < abs(value - measured_s):
            self.prediction, self.measured = value, float(measured_s)
            return False, (f"you predicted {value:g} s, the lab client's median was {measured_s:.2f} s: {value:g} s"
                           f" is nearer {timeout_s:g} s, which {self.timeout_text}")
        return super().judge(answer, measured_s=measured_s)


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
