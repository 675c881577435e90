"""Lesson 12's figures.

Lesson 12's figures: RSS against N with its fit, delivery time against send order with the predicted line, the
ladder of broadcasters with the floor as a line.
"""

import ast
import textwrap
from pathlib import Path

from IPython.display import Code
from matplotlib import patches

from iolab import figures, servers

from . import model

MIB = 2**20


def branch(server, cls, method, test):
    """The branch `if <test>:` (or `elif`) of `cls.method` in servers/<server>.py, as it runs: the lines of one
    broadcaster, without the others beside it."""
    text = (Path(servers.SERVERS_DIR) / f"{server}.py").read_text()
    tree = ast.parse(text)
    lines = text.splitlines()
    klass = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == cls)
    function = next(node for node in klass.body if getattr(node, "name", None) == method)
    for node in ast.walk(function):
        if isinstance(node, ast.If) and ast.get_source_segment(text, node.test) == test:
            body = "\n".join(lines[node.lineno - 1:node.body[-1].end_lineno])
            return Code(textwrap.dedent(body.replace("elif ", "if ", 1)), language="python")
    raise ValueError(f"servers/{server}.py: {cls}.{method} has no branch `if {test}:`")


def memory(rows):
    """RSS against N, a panel per compression; each series its points, its fit (dashed, over the smaller N) and the
    fit carried on to the held-out largest N."""
    panels = sorted({row["compression"] for row in rows})
    figure = figures.figure(figsize=(11, 3.8), layout="constrained")
    axes_all = figure.subplots(1, len(panels), squeeze=False)[0]
    for axes, compression in zip(axes_all, panels):
        for index, row in enumerate(r for r in rows if r["compression"] == compression):
            color = f"C{index}"
            ns, rss = row["ns"], [b / MIB for b in row["rss_bytes"]]
            axes.plot(ns, rss, "o", color=color, label=f"{row['server']} {row['kind']}: {row['kib_per_connection']:.1f} KiB")
            axes.plot([0, ns[-1]], [row["m0_bytes"] / MIB, row["predicted_last_bytes"] / MIB], "--", color=color,
                      linewidth=1)
            axes.plot([ns[-1]], [row["predicted_last_bytes"] / MIB], "x", color=color, markersize=9)
        axes.set_xlabel("subscribers N (× marks the fit's prediction of the last point)")
        axes.set_ylabel("server RSS (MiB)")
        axes.set_title(f"compression {'on' if compression else 'off'}: RSS = M0 + N·m", loc="left", fontsize=10)
        axes.set_xlim(left=0)
        axes.legend(fontsize=8)
    return figures.render(figure)


def fanout(rows):
    """Each subscriber's delivery time against its place in the send order, a panel per server; the predicted
    line i × D (D from the same run's CPU) dashed in the same colour."""
    servers = list(dict.fromkeys(row["server"] for row in rows))
    figure = figures.figure(figsize=(11, 3.4 * len(servers)), layout="constrained")
    panels = figure.subplots(len(servers), 1, squeeze=False)[:, 0]
    for axes, server in zip(panels, servers):
        for index, row in enumerate(r for r in rows if r["server"] == server):
            color = f"C{index}"
            order, delivery = row["timeline"]
            axes.plot(order, delivery, ".", markersize=2, color=color, alpha=0.6,
                      label=f"{row['transport']}: last {row['last_ms']:.0f} ms, predicted {row['predicted_last_ms']:.0f}")
            xs, ys = model.delivery_line(row["subscribers"], row["first_ms"] / 1000, row["predicted_last_ms"] / 1000)
            axes.plot(xs, ys, "--", color=color, linewidth=1.2)
        axes.set_title(f"{server}: one message to N subscribers (dashed: the first's, then D more each, predicted)",
                       loc="left", fontsize=10)
        axes.set_ylabel("delivery (ms)")
        axes.set_ylim(bottom=0)
        axes.legend(fontsize=8, markerscale=4)
    panels[-1].set_xlabel("place in the send order (the order they subscribed)")
    return figures.render(figure)


def stations_picture(deliveries=4, server_units=2, client_units=1):
    """Section 3's picture before its run: the server and the client as two stations in series, each delivery a
    bar, first on two CPUs (they overlap: the slower sets the pace), then on one (they take turns: the sum does)."""
    figure, axes = figures.subplots(figsize=(10, 2.6), dpi=80)
    lanes = [("two CPUs: server", 3.0), ("two CPUs: client", 2.3), ("one CPU: both", 0.8)]
    for index in range(deliveries):
        start = index * server_units
        axes.broken_barh([(start, server_units)], (3.0, 0.5), facecolors="C0", edgecolor="white")
        axes.broken_barh([(start + server_units, client_units)], (2.3, 0.5), facecolors="C1", edgecolor="white")
        turn = index * (server_units + client_units)
        axes.broken_barh([(turn, server_units), (turn + server_units, client_units)], (0.8, 0.5),
                         facecolors=("C0", "C1"), edgecolor="white")
        axes.text(start + server_units / 2, 3.25, f"{index + 1}", ha="center", va="center", fontsize=8, color="white")
    two_cpus = deliveries * max(server_units, client_units) + min(server_units, client_units)
    one_cpu = deliveries * (server_units + client_units)
    axes.annotate("last ≈ N × max(D_server, D_client)", (two_cpus, 2.55), (two_cpus + 0.4, 2.55), va="center",
                  fontsize=9, arrowprops={"arrowstyle": "->"})
    axes.annotate("last ≈ N × (D_server + D_client)", (one_cpu, 1.05), (one_cpu + 0.4, 1.05), va="center",
                  fontsize=9, arrowprops={"arrowstyle": "->"})
    axes.set_yticks([lane + 0.25 for _, lane in lanes], [name for name, _ in lanes], fontsize=9)
    axes.set_xticks([])
    axes.set_xlim(0, one_cpu + 8)
    axes.set_ylim(0.5, 3.8)
    axes.set_xlabel("time →   (blue: the server's CPU for one delivery, D_server; orange: the client's, D_client)")
    axes.set_title(f"{deliveries} deliveries through two stations in series", loc="left", fontsize=10)
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    return figures.render(figure)


def ladder(found, reach=10_000):
    """Bars: each broadcaster's CPU per delivery, and the time one CPU takes to reach `reach` subscribers at that
    rate; the floor (one send per subscriber) a red line."""
    rungs = sorted(found["rungs"], key=lambda rung: rung["cpu_us_per_delivery"], reverse=True)
    floor = found["floor"]["cpu_us_per_send"]
    figure, axes = figures.subplots(figsize=(10, 0.6 + 0.45 * len(rungs)), layout="constrained")
    labels = [rung["label"] for rung in rungs]
    values = [rung["cpu_us_per_delivery"] for rung in rungs]
    axes.barh(labels, values, color=["C2" if rung["how"] == "frame" else "C0" for rung in rungs])
    for position, value in enumerate(values):
        axes.annotate(f" {value:.1f} µs, {model.time_to_reach(reach, value * 1e-6) * 1000:.0f} ms to {reach:,}",
                      (value, position), va="center", fontsize=8)
    axes.axvline(floor, color="C3", linewidth=1.5)
    axes.text(floor, len(rungs) - 0.4, f" floor {floor:.1f} µs: one send() each", color="C3", fontsize=8)
    axes.set_xlabel("server CPU per delivery (µs)")
    axes.set_xlim(0, max(values + [floor]) * 1.45)
    axes.set_title("The ladder of broadcasters, and the floor", loc="left", fontsize=10)
    return figures.render(figure)


LADDER_WORK = [  # (broadcaster, what it does for each subscriber beyond the floor's one send)
    ("how=await (each server)", "frames the message, then waits for each send before the next"),
    ("how=tasks (aiohttp)", "starts a task for each subscriber, each framing the message"),
    ("how=loop (Tornado)", "frames the message, makes a Future and queues a write, each"),
    ("websockets.broadcast()", "frames once, then a write into each connection, no waiting"),
    ("how=frame (by hand)", "frames once, then a check and a send() straight to each socket"),
]


def ladder_picture():
    """Section 4's picture before its run: each broadcaster as a rung, with the work it adds for each subscriber,
    above the floor (one send() each, which no broadcaster over TCP skips). The run measures how far above."""
    figure, axes = figures.subplots(figsize=(10, 2.9), dpi=80)
    for place, (name, work) in enumerate(reversed(LADDER_WORK)):
        y = 0.9 + place * 0.75
        axes.add_patch(patches.FancyBboxPatch((0, y), 9.2, 0.5, boxstyle="round,pad=0.04", facecolor="#eef3fa",
                                              edgecolor="#1f77b4"))
        axes.text(0.15, y + 0.25, name, va="center", fontsize=9, weight="bold")
        axes.text(3.1, y + 0.25, work, va="center", fontsize=8.5)
    axes.axhline(0.55, color="C3", linewidth=2)
    axes.text(0.15, 0.2, "the floor: one send() of the same frame to each subscriber's socket", color="C3", fontsize=9,
              va="center")
    axes.set_xlim(-0.1, 9.4)
    axes.set_ylim(0, 0.9 + len(LADDER_WORK) * 0.75)
    axes.axis("off")
    axes.set_title("Each broadcaster's work per subscriber over the floor, in the order we expect; the run measures it",
                   loc="left", fontsize=10)
    return figures.render(figure)


def slow_consumer(runs):
    """The others' delivery times while one subscriber is stopped, one panel per broadcaster; the stall shaded."""
    figure = figures.figure(figsize=(11, 2.6 * len(runs)), layout="constrained")
    panels = figure.subplots(len(runs), 1, squeeze=False, sharex=True)[:, 0]
    for axes, run in zip(panels, runs):
        sent, delivery = run["timeline"]
        axes.plot(sent, delivery, ".", markersize=3, color="C3" if run["blocking"] else "C2")
        axes.axvspan(0, run["stall_ms"] / 1000, color="grey", alpha=0.15)
        axes.set_ylabel("others' delivery (ms)")
        axes.set_title(f"{run['server']} how={run['how']}: worst {run['others_worst_ms']:.0f} ms,"
                       f" {run['dropped']} dropped (grey: one subscriber stopped)", loc="left", fontsize=10)
    panels[-1].set_xlabel("seconds since the subscriber was stopped (when each message was published)")
    return figures.render(figure)
