"""Lesson 14's tables and figure: draws, never measures."""

import statistics

from iolab import figures, neighbours, tables

from . import claims, model
from .parameters import WARM_UP_EXCHANGES


def _ms(seconds):
    return statistics.median(seconds) * 1000


def round_trips_table(found):
    """Section 1: each way of sending requests, its round trips, its time on loopback, the prediction, the link's, and
    what share of the link's run others held the CPUs."""
    link, loopback = found["link"], found["loopback"]
    rtt, n = _ms(link["connect_s"]), link["n"]
    rows = [("connect", 1, _ms(loopback["connect_s"]), rtt, link["connect_s"])]
    for way, trips, how in (("request_s", 1, "one request"), ("sequence_s", model.sequence_rtts(n), f"{n} in sequence"),
                            ("pipelined_s", model.pipelined_rtts(n), f"{n} pipelined"),
                            ("connections_s", model.connections_rtts(n), f"{n} on {n} connections")):
        rows.append((how, trips, _ms(loopback[way]), _ms(loopback[way]) + trips * rtt, link[way]))
    return tables.markdown(
        ["how", "round trips", "on loopback (ms)", "predicted: loopback + trips × RTT (ms)", "on the link (ms)",
         "fastest–slowest (ms)", neighbours.COLUMN],
        [(how, trips, f"{alone:.1f}", f"{predicted:.1f}", f"{_ms(s):.1f}", f"{min(s) * 1000:.1f}–{max(s) * 1000:.1f}",
          neighbours.held(link.get("neighbours"))) for how, trips, alone, predicted, s in rows])


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
        axes.set_title(f"{where}: RTT {rtt:.2f} ms, {neighbours.COLUMN} {neighbours.held(found.get('neighbours'))}",
                       loc="left", fontsize=9)
        axes.set_xlabel("exchange on one connection (dotted: the warm-up before it)")
        axes.set_ylabel("ms")
        axes.legend(fontsize=8)
    return figure


def stall_ms(found):
    """What Nagle's algorithm added per exchange: the medians' difference after the warm-up, in ms."""
    return _ms(found["nagle_s"][WARM_UP_EXCHANGES:]) - _ms(found["nodelay_s"][WARM_UP_EXCHANGES:])


def slow_start_table(found, round_trips):
    """Section 3: each size, its slow-start rounds, the prediction from the measured round trip, the run."""
    rtt = _ms(round_trips["link"]["connect_s"])
    rows, others = [], neighbours.held(found.get("neighbours"))
    for size, pairs in found["sizes"].items():
        times = [whole for whole, _ in pairs]
        rounds = model.answer_rounds(int(size))
        rows.append((f"{int(size):,}", rounds, f"{rounds * rtt:.0f}", f"{_ms(times):.0f}",
                     f"{_ms(times) / rtt:.1f}", others))
    return tables.markdown(["bytes", "rounds predicted", "predicted (ms)", "measured median (ms)",
                            "measured in round trips", neighbours.COLUMN], rows)


def loss_table(found, round_trips):
    """Section 4: each congestion control's rate against the two models, and the connects that waited a second."""
    rtt_s, p, size = _ms(round_trips["link"]["connect_s"]) / 1000, found["loss_percent"] / 100, found["size"]
    rows = [("Mathis, b = 2 (delayed ACKs)", f"{model.mathis_rate(rtt_s, p) / 1000:.0f}", "", ""),
            ("Mathis, b = 1", f"{model.mathis_rate(rtt_s, p, acked_per_ack=1) / 1000:.0f}", "", ""),
            ("Padhye, with timeouts", f"{model.padhye_rate(rtt_s, p) / 1000:.0f}", "", "")]
    others = neighbours.held(found.get("neighbours"))
    for congestion, times in found["transfer_s"].items():
        rates = sorted(size / 2 / second_half / 1000 for _, second_half in times)
        rows.append((f"measured: {congestion}", f"{statistics.median(rates):.0f}",
                     f"{rates[0]:.0f}–{rates[-1]:.0f}", others))
    slow = sum(seconds >= model.INITIAL_RTO_S for seconds in found["connect_s"])
    expected = len(found["connect_s"]) * model.slow_connect_chance(p)
    rows.append((f"connects of 1 s or more, of {len(found['connect_s'])}", f"{slow}",
                 f"predicted {expected:.1f}", others))
    return tables.markdown(["what", "kB/s over the second half (or a count)", "spread, or the prediction",
                            neighbours.COLUMN], rows)


def slow_clients_table(found):
    """Section 2: each server, its slow clients' answers a second against the link's, and a short request's time
    alone, predicted beside the slow clients at sync workers alone, and measured there."""
    tau = model.answer_on_link_s(found["size"], found["rate_mbit"])
    rows = []
    for name, run in found["servers"].items():
        waits = model.wait_for_a_worker_s(run["clients"], found["workers"], tau) * 1000
        rows.append((name, f"{len(run['transfer_s']) / run['wall_s']:.1f}", f"{1 / tau:.1f}",
                     f"{_ms(run['short_alone_s']):.1f}", f"{waits:.0f}", f"{_ms(run['short_s']):.1f}",
                     neighbours.held(run.get("neighbours"))))
    return tables.markdown(["server", "slow answers/s", "the link's 1/τ", "short request alone (ms)",
                            "(N − w)·τ (ms)", "short request beside the slow clients (ms)", neighbours.COLUMN], rows)


def pages_table(found, round_trips):
    """Section 5: each way, clean and lossy, predicted and measured (median and fastest–slowest)."""
    rtt, others = _ms(round_trips["link"]["connect_s"]), found.get("neighbours", {})
    rows = []
    for way, (name, clean, lossy) in claims.lossy_predictions(found, rtt).items():
        for where, predicted in (("clean", clean), (f"{found['loss_percent']:g} % loss", lossy)):
            run = "clean" if where == "clean" else "lossy"
            times = found[run][way]
            rows.append((name, where, f"{predicted:.0f}", f"{_ms(times):.0f}",
                         f"{min(times) * 1000:.0f}–{max(times) * 1000:.0f}", neighbours.held(others.get(run))))
    return tables.markdown(["way", "link", "predicted (ms)", "measured median (ms)", "fastest–slowest (ms)",
                            neighbours.COLUMN], rows)


def pages_figure(found, round_trips):
    """Section 5: every page's time, each way, clean and lossy, beside its prediction (a dash)."""
    rtt = _ms(round_trips["link"]["connect_s"])
    predictions = claims.lossy_predictions(found, rtt)
    figure = figures.figure(figsize=(11, 3.2), layout="constrained")
    panels = figure.subplots(1, 2)
    for axes, (where, index, title) in zip(panels, (("clean", 1, "clean link"),
                                                     ("lossy", 2, f"{found['loss_percent']:g} % loss each way"))):
        for x, (way, prediction) in enumerate(predictions.items()):
            times = [s * 1000 for s in found[where][way]]
            axes.plot([x] * len(times), times, "o", color="#1f77b4" if way == "h2" else "#d62728", alpha=0.7)
            axes.plot([x - 0.2, x + 0.2], [prediction[index]] * 2, color="grey", linestyle="--")
        axes.set_xticks(range(len(predictions)), [name for name, _, _ in predictions.values()])
        axes.set_xlim(-0.6, len(predictions) - 0.4)
        axes.set_ylim(bottom=0)
        axes.set_title(f"{title}: {found['requests']} answers of {found['size']:,} bytes (dashes: predicted)",
                       loc="left", fontsize=9)
        axes.set_ylabel("ms for the whole page")
    return figure
