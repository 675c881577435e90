"""Lesson 14's closing claims, each checked against this run's bounds and printed on a line of its own."""

import math
import statistics

from iolab.claims import Claims

from . import model
from .parameters import WARM_UP_EXCHANGES

LESSON = "14-the-network"
# The delay line sleeps in epoll, whose timeout is whole milliseconds: each direction may be up to 1 ms late.
DELAY_LINE_LATE_MS = 2.0
# A kernel timer fires on a clock tick: 10 ms at HZ = 100, the coarsest clock Linux builds with, so the delayed ACK
# may come up to one tick after its 40 ms.
TIMER_TICK_MS = 10.0
# The delay line must not be the bottleneck: it may use at most this share of one CPU over the sections it carried.
DELAY_LINE_MOST_CPU_SHARE = 0.5
# The chance, each side, that section 4's count of slow connects falls outside its band by chance alone.
SLOW_CONNECTS_TAIL = 1e-5
# Which claims a neighbour can fail: every round trip crosses the delay line, a process on our CPUs, and every
# exchange needs the server's and the client's CPU. Those claims are judged with the run's neighbours
# (Claims.timing): a miss on the slow side that others explain is excused, with the figures. The link's own rate
# (a tbf qdisc, section 2) and its loss (a random drop, sections 4 and 5 under loss) do not wait for a CPU: those
# claims, and the counts and CPU shares, are judged as they are.


def results(plan, *, link_reason, round_trips=None, slow_start=None, loss=None, nagle_loopback=None, nagle_link=None,
            delay_line=None, exercises=None, slow_clients=None, pages=None, pages_missing=None):
    """The lesson's results, as the results file keeps them: plain lists of seconds, and why the link (or section 5's
    parts) is missing."""
    return {"plan": plan.as_dict(), "link_missing": link_reason, "round_trips": round_trips,
            "slow_clients": slow_clients, "pages": pages, "pages_missing": pages_missing,
            "slow_start": slow_start, "loss": loss, "nagle": {"loopback": nagle_loopback, "link": nagle_link},
            "delay_line": delay_line, "exercises": exercises or {}}


def ms(seconds):
    return statistics.median(seconds) * 1000


def spread_ms(seconds):
    """The middle half's width (upper quartile less lower), in ms: this run's noise on one figure."""
    quartiles = statistics.quantiles(seconds, n=4, method="inclusive")
    return (quartiles[2] - quartiles[0]) * 1000


def range_ms(seconds):
    """The slowest less the fastest, in ms: this run's noise on a figure repeated only a few times."""
    return (max(seconds) - min(seconds)) * 1000


def check_claims(found):
    """Check every claim of lesson 14 against `found` (the results), print one line each, and raise
    iolab.claims.ClaimsFailed naming each that failed with its values."""
    claims = Claims(LESSON)
    reason = found["link_missing"]
    if found["round_trips"] is not None:
        round_trip_claims(claims, found["round_trips"], found["plan"]["rtt_ms"])
    else:
        for claim in ("a connect costs the link's round trip", "a request costs one more",
                      "n requests in sequence, pipelined, on n connections"):
            claims.skip(claim, reason or "section 1 did not run")
    if found.get("slow_clients") is not None:
        slow_client_claims(claims, found["slow_clients"], found["plan"]["rtt_ms"])
    else:
        for claim in ("a download alone: its bytes at the link's rate", "the link limits the slow clients",
                      "short requests beside slow clients: gunicorn alone, nginx in front, Tornado"):
            claims.skip(claim, reason or "section 2 did not run")
    link = found["round_trips"]["link"] if found["round_trips"] is not None else None
    rtt = ms(link["connect_s"]) if link is not None else None
    if found["slow_start"] is not None and rtt is not None:
        slow_start_claims(claims, found["slow_start"], rtt, range_ms(link["connect_s"]), found["plan"]["rtt_ms"])
    else:
        claims.skip("transfer time as slow-start rounds", reason or "section 3 did not run")
    if found["loss"] is not None and rtt is not None:
        loss_claims(claims, found["loss"], rtt)
    else:
        for claim in ("Reno and CUBIC against Mathis", "BBR beside them", "connects that wait out the SYN timeout"):
            claims.skip(claim, reason or "section 4 did not run")
    if found.get("pages") is not None and rtt is not None:
        page_claims(claims, found["pages"], rtt, range_ms(link["connect_s"]), found["plan"]["rtt_ms"])
    else:
        for claim in PAGE_CLAIMS:
            claims.skip(claim, reason or found.get("pages_missing") or "section 5 did not run")
    if found.get("delay_line"):
        delay_line_claim(claims, found["delay_line"])
    nagle_claims(claims, found["nagle"]["loopback"], "on loopback")
    if found["nagle"]["link"] is not None:
        nagle_claims(claims, found["nagle"]["link"], "on the link", rtt_set_ms=found["plan"]["rtt_ms"])
    else:
        claims.skip("Nagle's stall on the link", reason or "section 6 ran on loopback only")
    claims.report()
    return claims


WAYS = {"request_s": "one request", "sequence_s": "in sequence", "pipelined_s": "pipelined",
        "connections_s": "on n connections"}


def trips_of(way, n):
    """The round trips each of section 1's ways costs on a new connection (a request alone: on an open one)."""
    return {"request_s": 1, "sequence_s": model.sequence_rtts(n), "pipelined_s": model.pipelined_rtts(n),
            "connections_s": model.connections_rtts(n)}[way]


def round_trip_claims(claims, found, rtt_set_ms):
    """Section 1: the round trip against the one set; then each way of sending requests costs what it costs on
    loopback (the server's and the client's own time) plus its round trips: at least the set RTT each (the delay
    line never hurries), at most the measured one and the delay line's lateness."""
    link, loopback = found["link"], found["loopback"]
    rtt, noise = ms(link["connect_s"]), range_ms(link["connect_s"])
    others = link.get("neighbours")
    claims.timing("a connect costs the round trip set on the link (ms)", rtt, rtt_set_ms - noise,
                  rtt_set_ms + DELAY_LINE_LATE_MS + 2 * noise, neighbours=others, unit="ms")
    for way, name in WAYS.items():
        trips = trips_of(way, link["n"])
        base, width = ms(loopback[way]), range_ms(link[way]) + range_ms(loopback[way]) + trips * noise
        name = name.replace("n connections", f"{link['n']} connections")
        what = name if way == "request_s" else f"{link['n']} requests {name}"
        claims.timing(f"{what}: its time on loopback + {trips} round trip{'s' if trips > 1 else ''} (ms)",
                      ms(link[way]), base + trips * rtt_set_ms - width,
                      base + trips * (rtt + DELAY_LINE_LATE_MS) + width, neighbours=others, unit="ms")


def slow_client_claims(claims, found, rtt_set_ms):
    """Section 2: a download alone takes τ = B / rate, plus at most its slow-start rounds and the request's round
    trip; the slow clients get no more than the link, 1 / τ answers a second, whichever the server; beside them a
    short request waits for N − w answers at sync workers alone (the link is their tier), and only its own time
    behind nginx or at Tornado (the link is not theirs)."""
    size, rate = found["size"], found["rate_mbit"]
    # The download alone and the slow clients' answers a second are the link's rate: no neighbour slows a tbf qdisc.
    tau, alone = model.answer_on_link_s(size, rate), [whole for whole, _ in found["alone_s"]]
    noise, rounds = range_ms(alone), model.slow_start_rounds(size) + 1
    claims.within(f"a download of {size:,} bytes alone: τ = B / rate, plus at most {rounds} round trips (ms)",
                  ms(alone), tau * 1000 - noise, tau * 1000 + rounds * (rtt_set_ms + DELAY_LINE_LATE_MS) + noise,
                  unit="ms")
    fastest = max(len(run["transfer_s"]) / run["wall_s"] for run in found["servers"].values())
    claims.within(f"the slow clients get no more than the link on any server, 1 / τ ({rate} Mbit/s) (answers/s)",
                  fastest, 0.0, (1 + noise / ms(alone)) / tau, unit="answers/s")
    for name, run in found["servers"].items():
        waits = model.wait_for_a_worker_s(run["clients"], found["workers"], tau) * 1000
        mine = ms(run["short_alone_s"])
        if name == "gunicorn alone":  # the link is the workers' tier: each is held while its answer crosses it
            claims.nearer(f"{name}: a short request beside {run['clients']} slow clients waits (N − w)·τ, not its"
                          f" own time (ms)", ms(run["short_s"]), waits, mine, "ms", ".3g")
        else:  # nginx takes the answers at loopback speed; Tornado's loop only hands them to the kernel
            claims.nearer(f"{name}: a short request beside {run['clients']} slow clients takes its own time, not"
                          f" (N − w)·τ (ms)", ms(run["short_s"]), mine, waits, "ms", ".3g",
                          neighbours=run.get("neighbours"), slower="above")


def slow_start_claims(claims, found, rtt, noise, rtt_set_ms):
    """Section 3: each transfer takes its slow-start rounds: at least the set RTT each, at most the measured one
    (and a delayed ACK); and the window doubles each round."""
    others = found.get("neighbours")
    found = {size: [whole for whole, _ in times] for size, times in found["sizes"].items()}
    for size, times in found.items():
        rounds = model.answer_rounds(int(size))
        measured, width = ms(times), range_ms(times) + rounds * noise
        # A round may end up to a delayed ACK late: the receiver holds the ACK of a flight's odd last segment.
        claims.timing(f"{int(size):,} bytes: {rounds} slow-start round trips, plus at most a delayed ACK (ms)",
                      measured, rounds * rtt_set_ms - width, rounds * rtt + model.DELAYED_ACK_MS + width,
                      neighbours=others, unit="ms", predicted=rounds * rtt)
    largest = max(found, key=int)
    claims.nearer(f"{int(largest):,} bytes: the window doubles each round, it does not stay at 10 segments (ms)",
                  ms(found[largest]), model.answer_rounds(int(largest)) * rtt,
                  model.linear_rounds(int(largest)) * rtt, "ms", ".3g", neighbours=others, slower="above")


def rates(times, size):
    """Bytes a second of each transfer of `size` bytes over its second half, once slow start is over: sorted."""
    return sorted(size / 2 / second_half for _, second_half in times)


def loss_claims(claims, found, rtt):
    """Section 4: Reno between Padhye (timeouts) and Mathis (b = 1), CUBIC no slower, BBR above both; slow connects.
    The loss sets these rates, with section 1's round trip, and the slow connects: they are judged without the
    neighbours."""
    p, rtt_s, size = found["loss_percent"] / 100, rtt / 1000, found["size"]
    low, high = model.padhye_rate(rtt_s, p), model.mathis_rate(rtt_s, p, acked_per_ack=1)
    for congestion in ("reno", "cubic"):
        measured = rates(found["transfer_s"][congestion], size)
        median = statistics.median(measured)
        # The run's own noise: the middle half's width, as a share of the median, widens the models' band each way.
        quartiles = statistics.quantiles(measured, n=4, method="inclusive")
        spread = 1 + (quartiles[2] - quartiles[0]) / median
        if congestion == "reno":  # the models are Reno's
            claims.within(f"reno at {found['loss_percent']:g} % loss: between Padhye's rate and Mathis's with b = 1"
                          f" (kB/s)", median / 1000, low / spread / 1000, high * spread / 1000, unit="kB/s")
        else:  # CUBIC backs off less (to 0.7 of its window) and never grows slower than Reno would: no upper model
            claims.within(f"cubic at {found['loss_percent']:g} % loss: no slower than Reno's Padhye rate (kB/s)",
                          median / 1000, low / spread / 1000, math.inf, unit="kB/s")
    bbr = rates(found["transfer_s"]["bbr"], size)
    claims.within("BBR ignores random loss: above Mathis's rate for Reno (kB/s)", statistics.median(bbr) / 1000,
                  high / 1000, math.inf, unit="kB/s")
    slow = sum(seconds >= model.INITIAL_RTO_S for seconds in found["connect_s"])
    count, chance = len(found["connect_s"]), model.slow_connect_chance(p)
    # The count of slow connects is binomial. Three standard deviations of a normal curve were too narrow on the high
    # side: 100 connects at 2 % loss would fail one run in 160 by chance alone. Exact sums, SLOW_CONNECTS_TAIL a side.
    fewest, most = model.binomial_range(count, chance, SLOW_CONNECTS_TAIL)
    claims.within(f"connects of {model.INITIAL_RTO_S:g} s or more: a SYN or its SYN-ACK lost (of {count})", slow,
                  fewest, most, unit="", digits=0)


def delay_line_claim(claims, usage):
    """The delay line kept up: its CPU over the wall time it carried the sections is below half a core."""
    share = usage["cpu_s"] / usage["wall_s"]
    claims.within("the delay line was not the bottleneck (its share of one CPU)", share, 0.0,
                  DELAY_LINE_MOST_CPU_SHARE, unit="", digits=3)


def nagle_claims(claims, found, where, rtt_set_ms=None):
    """Section 6: write-write-read with Nagle on stalls for the delayed ACK and a round trip more than with it off.
    On the link the stall is at least the delayed ACK and the round trip set there (`rtt_set_ms`): a connect the
    run timed beside a busy CPU can come out longer than the link's own round trip."""
    rtt = ms(found["connect_s"])
    nagle, nodelay = found["nagle_s"][WARM_UP_EXCHANGES:], found["nodelay_s"][WARM_UP_EXCHANGES:]
    stall = ms(nagle) - ms(nodelay)
    predicted, noise = model.nagle_stall_ms(rtt), spread_ms(nagle) + spread_ms(nodelay)
    least = model.nagle_stall_ms(min(rtt, rtt_set_ms)) if rtt_set_ms is not None else predicted
    claims.nearer(f"Nagle's stall {where}: the delayed ACK and a round trip, not nothing (ms)", stall, predicted, 0.0,
                  "ms", ".3g")
    claims.timing(f"Nagle's stall {where}: {model.DELAYED_ACK_MS:g} ms + RTT, up to a timer tick late (ms)", stall,
                  least - noise, predicted + TIMER_TICK_MS + noise, neighbours=found.get("neighbours"), unit="ms",
                  predicted=predicted)


PAGE_CLAIMS = ("a page over HTTP/2 on one connection, and over HTTP/1.1 on six, on the clean link",
               "which of them wins on the clean link", "which of them wins under loss")


def page_ways(found):
    """Section 5's predictions for this page: {way: (its name, its round trips on the clean link, its connections,
    its answers one after another on the busiest connection)}."""
    n, size, six = found["requests"], found["size"], found["connections_h1"]
    return {"h2": ("HTTP/2 on 1 connection", model.page_h2_rtts(n, size), 1, 1),
            "h1": (f"HTTP/1.1 on {six} connections", model.page_h1_rtts(n, size, six), six, math.ceil(n / six))}


def page_claims(claims, found, rtt, noise, rtt_set_ms):
    """Section 5: on the clean link each way takes its round trips (at least the set RTT each), plus at most its
    time on loopback, a delayed ACK and the delay line's lateness; the way with fewer round trips wins
    wherever the difference is larger than this run's noise. Under loss the winner is the one section 3's and 4's
    models predict, wherever the difference is larger than the run's spread."""
    ways, clean, lossy = page_ways(found), found["clean"], found["lossy"]
    for way, (name, trips, _, _) in ways.items():
        base, width = ms(found["loopback"][way]), range_ms(clean[way]) + range_ms(found["loopback"][way]) + trips * noise
        # At least the round trips: the server's own time on loopback may hide under them (it writes the later
        # answers while the earlier ones cross the link), so it only raises the upper bound.
        claims.timing(f"{name}, clean: {trips} round trips, plus at most its time on loopback (ms)", ms(clean[way]),
                      trips * rtt_set_ms - width,
                      base + trips * (rtt + DELAY_LINE_LATE_MS) + model.DELAYED_ACK_MS + width,
                      neighbours=found.get("neighbours", {}).get("clean"), unit="ms")
    # The winner: the two ways took turns, so a neighbour falls on both; under loss the loss sets the times.
    faster = (ways["h1"][1] - ways["h2"][1]) * rtt + ms(found["loopback"]["h1"]) - ms(found["loopback"]["h2"])
    judge_winner(claims, "clean", ms(clean["h1"]) - ms(clean["h2"]), faster, range_ms(clean["h1"]) + range_ms(clean["h2"]))
    # Under loss the models are rough (section 4's rate is a steady state; a page ends with its slowest connection),
    # so the claim is their ranking: the page's bytes on one window against six windows each with a sixth of them.
    predicted = {way: prediction[2] for way, prediction in lossy_predictions(found, rtt).items()}
    judge_winner(claims, f"at {found['loss_percent']:g} % loss", ms(lossy["h1"]) - ms(lossy["h2"]),
                 predicted["h1"] - predicted["h2"], spread_ms(lossy["h1"]) + spread_ms(lossy["h2"]))


def judge_winner(claims, where, measured, predicted, noise):
    """Which way wins `where`: HTTP/1.1's time less HTTP/2's lies on the side the models predict, judged only where
    the predicted difference is larger than this run's noise (else the run cannot tell, and says so)."""
    winner = "HTTP/2 on one connection" if predicted > 0 else "HTTP/1.1 on six"
    claim = f"{where}: {winner} wins, HTTP/1.1's time less HTTP/2's (ms)"
    if abs(predicted) <= noise:
        claims.skip(claim, f"the predicted difference, {predicted:.0f} ms, is within this run's noise, {noise:.0f} ms:"
                           " repeat with more repeats or a larger page")
        return
    claims.nearer(claim, measured, predicted, -predicted, "ms", ".4g")


def lossy_predictions(found, rtt):
    """Section 5 under loss, from this run's round trip (ms): {way: (name, clean prediction, lossy prediction)} in
    ms; clean from loopback and round trips, lossy from slow start until the first loss and Mathis's rate (b = 2)."""
    p, size, rtt_s = found["loss_percent"] / 100, found["requests"] * found["size"], rtt / 1000
    return {way: (name, ms(found["loopback"][way]) + trips * rtt,
                  model.lossy_page_s(size, connections, answers, rtt_s, p, model.mathis_rate(rtt_s, p)) * 1000)
            for way, (name, trips, connections, answers) in page_ways(found).items()}
