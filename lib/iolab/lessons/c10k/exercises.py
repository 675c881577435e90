"""Exercises for lesson 07, C10k.

`from iolab.lessons.c10k import exercises as ex; ex.q1.check(answer)`.
"""

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


class ThreadServerRss(checks.PredictThenMeasure):
    prompt = (
        "From the thread server's memory at the probe (its RSS with no connection, and its slope in KiB per "
        "connection), predict its RSS in MiB when it holds N connections."
    )
    rel_tol = 0.2
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


class WrkHidesTheWait(checks.PredictThenMeasure):
    prompt = (
        "wrk reported its requests per second X for the four sync workers, with C connections open all the "
        "time. Predict the median latency in seconds that the lab's client, which records every request, measures."
    )
    rel_tol = 0.2
    unit = "s"
    quantity = "the lab client's median latency"
    off_text = "Little's law: C requests are always in flight, X leave per second, so each spends C / X in the system."
    correct_text = (
        "wrk's own throughput gives the wait away: C / X is well past its timeout, and it is the latency that"
        " wrk left out of its report, counting those requests as timeouts instead."
    )
    hint_text = ["Little's law: L = X × R. What are L and X here?", "L is the connections (always busy), X wrk's req/s."]
    solution_text = "connections / wrk's requests per second: each request waits behind all the others, C / X seconds."

    def measure(self, measured_s):
        return measured_s


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
