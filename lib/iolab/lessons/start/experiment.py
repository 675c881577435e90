"""Lesson 00's first experiment: each handler's run, and what theory allows from the CPU it measured."""

from dataclasses import dataclass

from iolab import metrics, theory


@dataclass
class Handler:
    """One handler's run: its summary (with the server's CPU) and what theory allows from that CPU."""

    name: str
    summary: metrics.Summary
    prediction: theory.Prediction


def window_s(result):
    # The CPU counters stay open until the clients have gone: what the server does then, or waits for a CPU
    # under a container's quota, falls after the last answer (lesson 02 explains the window).
    return getattr(result.usage, "wall_s", None)


def bounds_from_cpu(delay_ms, blocking):
    """For a dashboard's last frame: the bounds from the CPU the server spent on each request of that run."""
    return lambda result: theory.predict_run(metrics.summarize(result), delay_ms, blocking,
                                             window_s=window_s(result)).lines()


def finish(name, result, delay_ms, blocking):
    """The Handler for a finished run: its summary, and what theory allows from the CPU it measured."""
    summary = metrics.summarize(result)
    return Handler(name, summary, theory.predict_run(summary, delay_ms, blocking=blocking, window_s=window_s(result)))
