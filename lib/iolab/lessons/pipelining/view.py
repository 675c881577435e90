"""Lesson 08's figures.

The ladder of costs per request, throughput and system calls against depth, a batch's answers in
time.
"""

from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

from iolab import figures


def ladder(rows):
    """D per server (log scale) with its throughput and system calls written beside it, and the share of D in the kernel."""
    rows = [row for row in rows if row.get("demand_us")]
    fig, (left, right) = figures.subplots(1, 2, figsize=(11, 0.45 * len(rows) + 1.6), layout="constrained",
                                          sharey=True, width_ratios=(3, 1))
    labels = [row["server"] for row in rows]
    places = range(len(rows))
    left.barh(places, [row["demand_us"] for row in rows], color="tab:blue")
    for place, row in zip(places, rows):
        calls = row.get("syscalls_per_request")
        said = f"  {row['rps']:,.0f} req/s" + (f", {calls:.2g} calls/req" if calls is not None else "")
        left.text(row["demand_us"], place, said, va="center", fontsize=8)
    left.set_xscale("log")
    left.set_xlim(right=max(row["demand_us"] for row in rows) * 12)  # room for the text beside the longest bar
    left.set_yticks(list(places), labels)
    left.invert_yaxis()
    left.set_xlabel("D: the server's CPU per request (µs, log scale)")
    left.set_title("The cost of one hello world")
    right.barh(places, [100 * row["system_us"] / row["demand_us"] for row in rows], color="tab:orange")
    right.set_xlim(0, 100)
    right.set_xlabel("% of D in the kernel (system calls)")
    return fig


def depth_sweep(rows, ceiling_rps=None):
    """Throughput and system calls per request against pipeline depth, one line per way of writing."""
    fig, (speed, calls) = figures.subplots(1, 2, figsize=(11, 4), layout="constrained")
    for batched, style in ((True, "o-"), (False, "s--")):
        mine = sorted((row for row in rows if row["batched"] == batched), key=lambda row: row["depth"])
        if not mine:
            continue
        label = "one write per batch" if batched else "one write per answer"
        depths = [row["depth"] for row in mine]
        speed.plot(depths, [row["rps"] for row in mine], style, label=label)
        counted = [(row["depth"], row["syscalls_per_request"]) for row in mine if row["syscalls_per_request"]]
        if counted:
            calls.plot(*zip(*counted), style, label=label)
    depths = sorted({row["depth"] for row in rows})
    calls.plot(depths, [2 / depth for depth in depths], ":", color="grey", label="2 / depth: a read and a write per batch")
    if ceiling_rps:
        speed.axhline(ceiling_rps, color="grey", linestyle=":", label="1 / D at the deepest batch: one core's ceiling")
    for axes in (speed, calls):
        axes.set_xscale("log", base=2)
        axes.set_xticks(depths, [str(depth) for depth in depths])
        axes.set_xlabel("pipeline depth (requests per batch)")
        axes.legend(fontsize=8)
    speed.set_ylabel("requests per second")
    speed.set_ylim(bottom=0)
    calls.set_yscale("log")
    calls.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
    calls.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    calls.yaxis.set_minor_formatter(NullFormatter())
    calls.set_ylabel("system calls per request (strace)")
    return fig


def batch_timeline(timings):
    """When each answer of a pipelined batch arrived, for each batch in `timings` ({label: hol.BatchTiming})."""
    fig, axes = figures.subplots(figsize=(9, 3.2), layout="constrained")
    count = len(timings)
    for index, ((label, timing), marker) in enumerate(zip(timings.items(), "os^dv")):
        shift = (index - (count - 1) / 2) * 0.15  # side by side, so answers that arrived together stay visible
        positions = [place + 1 + shift for place in range(len(timing.arrived_ms))]
        axes.plot(positions, timing.arrived_ms, marker, label=label)
    axes.set_xticks(range(1, max(len(timing.arrived_ms) for timing in timings.values()) + 1))
    axes.set_xlabel("answer, in the order of the requests")
    axes.set_ylabel("ms from the write to its arrival")
    axes.set_ylim(bottom=0)
    axes.legend(fontsize=8)
    axes.set_title("Answers leave in order: one slow request holds back the ones behind it")
    return fig
