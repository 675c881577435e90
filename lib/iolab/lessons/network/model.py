"""Lesson 14's predictions: round trips, an answer's time on a rated link, slow start, Mathis, SYN timeout, Nagle.

Each takes what this run measured (a round trip, a loss rate) and the kernel's constants, each named with its source.
"""

import math

MSS_BYTES = 1448  # a 1500-byte Ethernet MTU less 20 (IP), 20 (TCP) and 12 (the timestamp option)
INITIAL_WINDOW = 10  # segments a new connection may send before its first ACK (RFC 6928, Linux since 2.6.39)
HEAD_SEGMENTS = 1  # the bulk sender's answer head: written, and so sent, before the body's first byte
DELAYED_ACK_MS = 40.0  # Linux's shortest delayed-ACK timer, TCP_DELACK_MIN = HZ / 25 (include/net/tcp.h)
INITIAL_RTO_S = 1.0  # the retransmission timeout before any round trip is measured (RFC 6298, 2.1)
MIN_RTO_S = 0.2  # Linux's shortest retransmission timeout once round trips are measured (TCP_RTO_MIN)
# What tbf counts for a full segment: the MSS, the TCP header with its timestamp (32), IP's (20) and Ethernet's (14).
FRAME_BYTES = MSS_BYTES + 32 + 20 + 14


def sequence_rtts(n):
    """Round trips for n short requests sent one after another on one connection: the connect, then one each."""
    return n + 1


def pipelined_rtts(n):
    """Round trips for n requests written at once on one connection: the connect, then one for all n."""
    return 2


def connections_rtts(n):
    """Round trips for n requests on n connections opened at once: each its connect and its request, side by side."""
    return 2


def answer_on_link_s(size_bytes, rate_mbit, mss=MSS_BYTES, frame=FRAME_BYTES):
    """τ: the seconds an answer of `size_bytes` takes on a link of `rate_mbit` once it is full, B / rate, counting
    the headers each segment carries through the rate's queue (tbf counts whole frames)."""
    return size_bytes / (rate_mbit * 1e6 / 8 * mss / frame)


def wait_for_a_worker_s(clients, workers, answer_s):
    """A short request behind N slow clients at w sync workers: the N − w slow requests ahead of it in the kernel's
    queue each hold a worker while their answer crosses the link, and the link passes one answer per τ at best."""
    return max(0, clients - workers) * answer_s


def slow_start_rounds(size_bytes, window=INITIAL_WINDOW, mss=MSS_BYTES, head_segments=0):
    """Round trips to deliver `size_bytes` in slow start: `window` segments in the first, twice as many in each next,
    so k rounds carry window · (2^k − 1) segments; `head_segments` more where the answer's head travels alone."""
    segments = math.ceil(size_bytes / mss) + head_segments
    return max(1, math.ceil(math.log2(segments / window + 1)))


def answer_rounds(size_bytes):
    """Section 3's rounds for an answer of `size_bytes` from the lab's bulk sender: its head goes out first, in a
    segment of its own (http.server writes the head before the body), then the body's segments."""
    return slow_start_rounds(size_bytes, head_segments=HEAD_SEGMENTS)


def mathis_rate(rtt_s, loss, mss=MSS_BYTES, acked_per_ack=2):
    """Bytes a second of a Reno sender in steady state at random loss `loss` (Mathis et al. 1997), with b segments
    acknowledged by each ACK (2 with delayed ACKs): (MSS / RTT) · √(3 / (2 · b · p))."""
    if loss <= 0:
        return math.inf
    return mss / rtt_s * math.sqrt(3 / (2 * acked_per_ack * loss))


def padhye_rate(rtt_s, loss, mss=MSS_BYTES, acked_per_ack=2, timeout_s=None):
    """Bytes a second of a Reno sender that also meets timeouts (Padhye et al. 1998): Mathis's rate with each loss
    that empties the window costing a timeout T0 (here the shortest RTO plus a round trip): slower than Mathis."""
    if loss <= 0:
        return math.inf
    timeout_s = MIN_RTO_S + rtt_s if timeout_s is None else timeout_s
    b, p = acked_per_ack, loss
    per_segment = rtt_s * math.sqrt(2 * b * p / 3) + timeout_s * min(1, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p)
    return mss / per_segment


def linear_rounds(size_bytes, window=INITIAL_WINDOW, mss=MSS_BYTES):
    """Round trips if the window never grew: `window` segments every round (the alternative slow start rules out)."""
    return max(1, math.ceil(math.ceil(size_bytes / mss) / window))


def slow_connect_chance(loss):
    """The chance a connect waits out the initial timeout: its SYN or the SYN-ACK is lost (each with chance p)."""
    return 1 - (1 - loss) ** 2


def binomial_range(count, chance, tail):
    """(fewest, most) of `count` trials, each a success with `chance`, such that fewer or more happens by chance at
    most `tail` of the time on each side: exact binomial sums, not a normal curve's, which are too narrow on the
    long side when successes are rare."""
    probabilities = [math.comb(count, k) * chance ** k * (1 - chance) ** (count - k) for k in range(count + 1)]
    below, fewest = 0.0, 0
    while below + probabilities[fewest] <= tail:
        below += probabilities[fewest]
        fewest += 1
    above, most = 0.0, count
    while above + probabilities[most] <= tail:
        above += probabilities[most]
        most -= 1
    return fewest, most


def nagle_stall_ms(rtt_ms):
    """What a write-write-read costs over a write-read when Nagle holds the second write: the first write's ACK waits
    the receiver's delayed-ACK timer, then the second write needs half a round trip more each way."""
    return DELAYED_ACK_MS + rtt_ms


def page_h2_rtts(requests, size_bytes):
    """Round trips for a page of `requests` answers of `size_bytes` over HTTP/2 on one new connection: the connect,
    then slow start for all the page's bytes, since every stream shares the one connection's window."""
    return 1 + slow_start_rounds(requests * size_bytes)


def page_h1_rtts(requests, size_bytes, connections):
    """Round trips for the same page over HTTP/1.1 on `connections` new connections, one request at a time on each:
    the connect, the first answer's slow-start rounds, then one round trip for each next answer on the busiest
    connection (the first answer opened its window wide enough for the next)."""
    return 1 + slow_start_rounds(size_bytes) + math.ceil(requests / connections) - 1


def lossy_page_s(page_bytes, connections, answers, rtt_s, loss, rate):
    """Seconds for a page over `connections` connections at random loss `loss`, each carrying its share of the bytes
    in `answers` exchanges one after another. A connection is in slow start until its first loss, about 1 / p
    segments in (section 3's rounds); the rest goes at `rate`, section 4's rate of a window halved at each loss.
    Plus the connect, and a round trip for each next answer."""
    share = page_bytes / connections
    before_loss = min(share, MSS_BYTES / loss) if loss > 0 else share
    return rtt_s * (1 + slow_start_rounds(before_loss) + answers - 1) + (share - before_loss) / rate
