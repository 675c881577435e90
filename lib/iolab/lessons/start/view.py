"""Lesson 00's table of the first run: each handler's figures beside what theory allows."""

from iolab import tables


def table(*handlers):
    """The results table: each run's figures beside what theory allows."""
    return tables.markdown(
        ["handler", "requests", "took (s)", "req/s", "theory allows (req/s)", "mean latency (ms)",
         "server CPU per request (ms)", "server CPU busy (% of a core)"],
        [[h.name, h.summary.completed, h.summary.duration_s, h.summary.rps,
          f"{h.prediction.low_rps:.3g} to {h.prediction.high_rps:.3g}", h.summary.mean_ms, h.summary.demand_ms,
          100 * h.summary.utilization] for h in handlers],
    )
