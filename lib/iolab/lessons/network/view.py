"""Lesson 14's tables and figure: draws, never measures."""

import statistics

from iolab import figures, tables

from . import model
from .parameters import WARM_UP_EXCHANGES


def _ms(seconds):
    return statistics.median(seconds) * 1000


def round_trips_table(found):
    """Section 1: each way of sending n requests, its round trips, the prediction from the measured RTT, the run."""
    rtt, n = _ms(found["connect_s"]), found["n"]
    rows = [("connect", 1, rtt, rtt, found["connect_s"]), ("one request", 1, rtt, _ms(found["request_s"]),
                                                             found["request_s"])]
    for key, how, trips in (("sequence_s", f"{n} in sequence", model.sequence_rtts(n)),
                            ("pipelined_s", f"{n} pipelined", model.pipelined_rtts(n)),
                            ("connections_s", f"{n} on {n} connections", model.connections_rtts(n))):
        rows.append((how, trips, trips * rtt, _ms(found[key]), found[key]))
    return tables.markdown(
        ["how", "round trips", "predicted (ms)", "measured median (ms)", "fastest–slowest (ms)"],
        [(how, trips, f"{predicted:.1f}", f"{measured:.1f}", f"{min(s) * 1000:.1f}–{max(s) * 1000:.1f}")
         for how, trips, predicted, measured, s in rows])


def nagle_figure(runs):
    """Section 6: each write-write-read's time, TCP_NODELAY on and off, one panel per place (`runs`: {where: found})."""
    figure = figures.figure(figsize=(11, 3.2), layout="constrained")
    panels = figure.subplots(1, len(runs), squeeze=False)[0]
    for axes, (where, found) in zip(panels, runs.items()):
        for key, label, colour in (("nodelay_s", "TCP_NODELAY on", "#2ca02c"), ("nagle_s", "Nagle on", "#d62728")):
            times = [s * 1000 for s in found[key]]
            axes.plot(range(1, len(times) + 1), times, "o-", color=colour, label=label, markersize=3)
        axes.axvline(WARM_UP_EXCHANGES + 0.5, color="grey", linestyle=":", linewidth=0.8)
        rtt = _ms(found["connect_s"])
        axes.axhline(model.nagle_stall_ms(rtt) + _ms(found["nodelay_s"][WARM_UP_EXCHANGES:]), color="grey",
                     linestyle="--", linewidth=0.8, label="predicted with Nagle")
        axes.set_title(f"{where}: RTT {rtt:.2f} ms", loc="left", fontsize=9)
        axes.set_xlabel("exchange on one connection (dotted: the warm-up before it)")
        axes.set_ylabel("ms")
        axes.legend(fontsize=8)
    return figure
