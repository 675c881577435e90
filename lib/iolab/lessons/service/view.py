"""Lesson 15's figures and tables.

Lesson 15's figures and tables: the heartbeat's lateness through a window and its tail against the residual life's,
then a table per section.
"""

from iolab import figures, neighbours, tables

from . import model


def lag(runs, found):
    """Left: each beat's lateness against when it was due, over the first periods. Right: the share of beats later
    than x, quiet and blocked, with the residual life's prediction from the measured blocks."""
    figure, (timeline, tail) = figures.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
    blocked, quiet = runs["lag"], runs["quiet"]
    shown_ms = min(blocked["window_ms"], 4 * found["period_ms"])
    points = [(at, late) for at, late in zip(blocked["due_ms"], blocked["lateness_ms"]) if at <= shown_ms]
    timeline.scatter([at for at, _ in points], [late for _, late in points], s=6)
    timeline.axhline(found["mean_ms"], color="tab:green", linestyle="--", label=f"mean {found['mean_ms']:.1f} ms")
    timeline.axhline(found["p99_ms"], color="tab:red", linestyle=":", label=f"p99 {found['p99_ms']:.1f} ms")
    timeline.set_xlabel("when the beat was due (ms into the window)")
    timeline.set_ylabel("lateness (ms)")
    timeline.legend(loc="upper right", fontsize=8)
    for name, run, color in (("quiet", quiet, "tab:grey"), ("blocked", blocked, "tab:blue")):
        ranked = sorted(run["lateness_ms"])
        n = len(ranked)
        tail.step(ranked, [1 - (k + 1) / n for k in range(n)], where="post", color=color, label=f"{name}, measured")
    xs = [found["block_ms"] * 1.2 * k / 200 for k in range(201)]
    tail.plot(xs, [model.residual_exceeds(blocked["blocks_ms"], blocked["window_ms"], x) for x in xs],
              color="black", linestyle="--", label="residual life, predicted")
    tail.set_yscale("log")
    tail.set_ylim(0.5 / len(blocked["lateness_ms"]), 1)
    tail.axhline(0.01, color="tab:red", linestyle=":", linewidth=0.8)
    tail.set_xlabel("lateness x (ms)")
    tail.set_ylabel("share of beats later than x")
    tail.legend(fontsize=8)
    figure.suptitle(f"A block of {found['block_ms']} ms every {found['period_ms']} ms: {found['beats']} beats")
    return figures.render(figure)


def lag_table(found):
    """The lag's figures from the blocked window, a request's from the served one: each with its window's share
    others held the CPUs."""
    others = found.get("neighbours") or {}
    lag, served = neighbours.held(others.get("lag")), neighbours.held(others.get("served"))
    rows = [["mean lag", found["textbook_mean_ms"], found["predicted_mean_ms"], found["mean_ms"],
             f"[{found['mean_low_ms']:.2f}, {found['mean_high_ms']:.2f}]", lag],
            ["p99 lag", found["textbook_p99_ms"], found["predicted_p99_ms"], found["p99_ms"],
             f"[{found['p99_low_ms']:.1f}, {found['p99_high_ms']:.1f}]", lag],
            ["p99 of a request", "", found["predicted_request_p99_ms"], found["request_p99_ms"],
             f"[{found['request_p99_low_ms']:.1f}, {found['request_p99_high_ms']:.1f}]", served],
            ["mean of a request", "", "", found["request_mean_ms"], "", served]]
    return tables.markdown(["figure (ms)", "b²/(2Δ) and b − Δ/100", "predicted from the blocks", "measured",
                            "bounds", neighbours.COLUMN], rows)


def lost_tasks_table(rows):
    return tables.markdown(["way", "tasks", "destroyed pending", "alive after gc.collect()"],
                           [[row["way"], row["tasks"], row["destroyed"], row["alive"]] for row in rows])


def shutdown_table(rows):
    return tables.markdown(
        ["server and setting", "sent before SIGTERM", "L = X·R", "in flight at SIGTERM", "failed",
         "exit after SIGTERM (ms)", neighbours.COLUMN],
        [[row["how"], row["sent"], row["little_L"], row["in_flight"], row["failed"], row["exit_ms"],
          neighbours.held(row.get("neighbours"))] for row in rows])


def upstreams(runs):
    """Each request through nginx by when it was sent, against how long it took or took to fail; the restart's
    time shaded. Restarted abruptly, the failures are those sent in the R before it, and those sent during it."""
    figure, panels = figures.subplots(1, len(runs), figsize=(11, 3.2), layout="constrained", sharey=True)
    for panel, (how, run) in zip(panels, runs.items()):
        began, ended = run["began_s"], run["ended_s"]
        for ok, color, label in ((True, "tab:blue", "answered"), (False, "tab:red", "failed")):
            points = [(sent - began, (done - sent) * 1000) for sent, done, answered in run["calls"] if answered == ok]
            panel.scatter([x for x, _ in points], [y for _, y in points], s=6, color=color,
                          label=f"{label} ({len(points)})")
        panel.axvspan(0, ended - began, color="tab:grey", alpha=0.2, label="the restart")
        panel.set_title(f"upstream 2: {how}", fontsize=10)
        panel.set_xlabel("sent (s after the restart began)")
        panel.legend(fontsize=8, loc="center right")
    panels[0].set_ylabel("time to answer or fail (ms)")
    return figures.render(figure)


def upstream_table(rows):
    return tables.markdown(
        ["upstream 2", "X (requests/s)", "R (ms)", "L = X·R", "in flight at the start", "took (ms)",
         "predicted failures", "failed", "sent", neighbours.COLUMN],
        [[row["how"], row["rate"], row["mean_ms"], row["little_L"], row["in_flight"], row["procedure_ms"],
          row["predicted"], row["failed"], row["sent"], neighbours.held(row.get("neighbours"))] for row in rows])


def leak_table(rows):
    return tables.markdown(
        ["handler", "cancelled so far", "free slots", "predicted free", "X (requests/s)", "s/T",
         "predicted n/(⌈n/s⌉·T + ramp)", "answered", "cancelled in the run", neighbours.COLUMN],
        [[row["how"], step["cancelled_so_far"], step["free"], step["predicted_free"], step["rate"],
          step["bottleneck_rate"], step["predicted_rate"], step["answered"], step["cancelled"],
          neighbours.held(step.get("neighbours"))] for row in rows for step in row["steps"]])
