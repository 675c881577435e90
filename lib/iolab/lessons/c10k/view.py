"""Lesson 07's figures.

Memory per connection by server, fresh latency against N, the thread server's growth, connect times,
wrk's blind spot.
"""

from iolab import figures

from . import lineup


def memory_per_connection(steps):
    """Bars: KiB per held connection for each server (its RSS slope), with the kernel's share for both ends beside it.

    `steps` maps a server's label to its largest held holding.Step.
    """
    figure, axes = figures.subplots(figsize=(9, 3.6), layout="constrained")
    labels = list(steps)
    positions = range(len(labels))
    server_kb = [steps[label].kb_per_connection or 0 for label in labels]
    kernel_kb = [steps[label].kernel_kb_per_connection or 0 for label in labels]
    axes.bar([p - 0.2 for p in positions], server_kb, width=0.4, color="C0", label="server RSS slope")
    axes.bar([p + 0.2 for p in positions], kernel_kb, width=0.4, color="C7", label="kernel, both ends (machine-wide)")
    for position, value, step in zip(positions, server_kb, steps.values()):
        axes.annotate(f"{value:.1f}\n({step.held:,})", (position - 0.2, value), ha="center", va="bottom", fontsize=8)
    axes.axhline(lineup.TARGET_KB, color="C3", linestyle=":", linewidth=1)
    axes.text(len(labels) - 0.5, lineup.TARGET_KB, f"{lineup.TARGET_KB} KiB", color="C3", va="bottom", ha="right", fontsize=8)
    axes.set_xticks(list(positions), labels, fontsize=9)
    axes.set_ylabel("KiB per idle connection")
    axes.set_title("What one idle keep-alive connection costs (in brackets: connections held)")
    axes.set_ylim(0, max(server_kb + kernel_kb + [lineup.TARGET_KB]) * 1.3)
    axes.legend(fontsize=8, loc="upper left")
    return figure


def fresh_latency(results):
    """Lines: a fresh request's p50 and p99 against the connections held, one colour per server.

    `results` maps a server's label to its holding.HoldResult.
    """
    figure, axes = figures.subplots(figsize=(9, 3.8), layout="constrained")
    for index, (label, result) in enumerate(results.items()):
        steps = [step for step in [result.baseline, *result.steps] if step.fresh_ms]
        held = [max(step.held, 1) for step in steps]
        axes.plot(held, [step.fresh_p50_ms for step in steps], "o-", color=f"C{index}", label=f"{label} p50")
        axes.plot(held, [step.fresh_p99_ms for step in steps], "^--", color=f"C{index}", alpha=0.6,
                  label=f"{label} p99")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.axhline(20, color="C3", linestyle=":", linewidth=1)
    axes.set_xlabel("idle connections held (1 = none)")
    axes.set_ylabel("fresh request latency (ms)")
    axes.set_title("A new request beside N idle connections")
    axes.legend(fontsize=7, ncol=2, loc="upper left")
    return figure


def thread_server_growth(result):
    """The thread server's threads and RSS (and address space) against the connections it holds."""
    steps = [result.baseline, *result.steps]
    held = [step.held for step in steps]
    figure, (threads_axes, memory_axes) = figures.subplots(1, 2, figsize=(10, 3.4), layout="constrained")
    threads_axes.plot(held, [step.threads for step in steps], "o-", color="C3")
    threads_axes.set_xlabel("connections held")
    threads_axes.set_ylabel("threads")
    threads_axes.set_title(f"{result.server}: threads")
    memory_axes.plot(held, [step.footprint.rss_kb / 1024 for step in steps], "o-", color="C0", label="RSS")
    memory_axes.set_xlabel("connections held")
    memory_axes.set_ylabel("RSS (MiB)", color="C0")
    virtual_axes = memory_axes.twinx()
    virtual_axes.plot(held, [step.footprint.vsz_kb / 2**20 for step in steps], "s--", color="C1", label="virtual")
    virtual_axes.set_ylabel("virtual size (GiB)", color="C1")
    memory_axes.set_title(f"{result.server}: resident vs reserved memory")
    return figure


def connect_times(meeting):
    """Histograms of connect times in a burst: the run beyond the backlog and the run with a backlog large enough."""
    figure, axes = figures.subplots(figsize=(9, 3.2), layout="constrained")
    bad, good = meeting.met.connect_ms, meeting.fixed.connect_ms
    top = max(bad + good + [1000.0]) / 1000
    bins = [index * 0.05 for index in range(int(top / 0.05) + 2)]
    details = meeting.details
    axes.hist([ms / 1000 for ms in good], bins=bins, color="C2", alpha=0.7,
              label=f"backlog {details['fixed_backlog']}")
    axes.hist([ms / 1000 for ms in bad], bins=bins, color="C3", alpha=0.7, label=f"backlog {details['backlog']}")
    for retry_s in (1, 3, 7):
        if retry_s <= top + 0.1:
            axes.axvline(retry_s, color="grey", linestyle=":", linewidth=1)
    axes.axvline(details["block_ms"] / 1000, color="C0", linestyle="--", linewidth=1, label="the loop frees up")
    axes.set_xlabel("connect time (s); dotted: TCP's SYN retries at 1 s, 3 s, 7 s")
    axes.set_ylabel("connections")
    axes.set_title(f"{details['burst']:,} connects at once while the loop sleeps {details['block_ms']} ms")
    axes.legend(fontsize=8)
    return figure


def wrk_blind_spot(scenes):
    """Each server's latencies as the lab's client saw them, with wrk's timeout and what wrk reported."""
    shown = [scene for scene in scenes if scene.lab_latencies_ms]
    figure, axes_list = figures.subplots(1, max(1, len(shown)), figsize=(10, 3.4), layout="constrained",
                                         squeeze=False)
    for axes, scene in zip(axes_list[0], shown):
        seconds = [ms / 1000 for ms in scene.lab_latencies_ms]
        axes.hist(seconds, bins=40, color="C0", alpha=0.8, label="lab client: every request")
        axes.axvline(scene.timeout_s, color="C3", linewidth=2, label=f"wrk's timeout ({scene.timeout_s} s)")
        if scene.wrk and scene.wrk.get("mean_ms") is not None:
            axes.axvline(scene.wrk["mean_ms"] / 1000, color="C1", linestyle="--", label="wrk's mean latency")
        axes.set_xlabel("latency (s)")
        axes.set_title(f"{scene.server}: {scene.connections:,} connections", fontsize=10)
        axes.legend(fontsize=7)
    axes_list[0][0].set_ylabel("requests")
    return figure
