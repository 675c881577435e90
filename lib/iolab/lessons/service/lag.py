"""Section 1: the heartbeat's lateness while a handler blocks.

How late the loop runs a heartbeat while a handler blocks it, and what requests see meanwhile.
One window without the blocker (the loop's own lateness, the requests' own latency) and one with it, each under
the same open loop of requests to `/`, on one service_app.
"""

import time

import requests

from iolab import neighbours
from iolab.load import run_load
from iolab.servers import serve

from . import model

HEARTBEAT_MS = 2  # a beat every 2 ms on average: hundreds of samples a second, at about 1 % of a CPU
TIMEOUT_S = 10


def open_window(url, seconds, block_ms, period_ms):
    """Open a window of `seconds` on the server: its blocker (none at block_ms=0) and its heartbeat; its (start, end)
    on time.monotonic(), the clock of the server's loop and of the load's samples."""
    answer = requests.get(f"{url}/window", timeout=TIMEOUT_S, params={
        "ms": int(seconds * 1000), "block_ms": block_ms, "period_ms": period_ms, "heartbeat_ms": HEARTBEAT_MS})
    answer.raise_for_status()
    return answer.json()["window"]


def window(url, seconds, block_ms, period_ms, rate=0):
    """One window, with an open loop of Poisson requests to `/` at `rate` a second through it where rate > 0.

    The window opens just before the load's go, and lasts the load's length and a little more."""
    opened = []
    with neighbours.watching() as watch:
        if rate:
            result = run_load(f"{url}/", kind="open", rate_rps=rate, schedule="poisson",
                              requests=max(1, int(rate * seconds)), concurrency=50, timeout_s=TIMEOUT_S,
                              before_go=lambda: opened.append(open_window(url, seconds + 0.3, block_ms, period_ms)))
        else:
            opened.append(open_window(url, seconds, block_ms, period_ms))
        start, end = opened[0]
        time.sleep(max(0.0, end - time.monotonic() + 0.05))
    stats = requests.get(f"{url}/stats", timeout=TIMEOUT_S).json()
    samples = result.samples if rate else []
    return {"lateness_ms": [late * 1000 for _, late in stats["beats"]],
            "due_ms": [(due - start) * 1000 for due, _ in stats["beats"]],
            "blocks_ms": [(b1 - b0) * 1000 for b0, b1 in stats["blocks"]],
            "window_ms": (end - start) * 1000, "latency_ms": [s.latency * 1000 for s in samples if s.status == 200],
            "errors": sum(1 for s in samples if s.status != 200), "neighbours": watch.found.as_dict()}


def measure(block_ms, period_ms, seconds, rate):
    """Three windows on one fresh service_app: "quiet" (requests, no blocker: the loop's own lateness and the
    requests' own latency), "lag" (the blocker alone) and "served" (the blocker and the requests)."""
    with serve("service_app") as server:
        return {"quiet": window(server.url, seconds, 0, period_ms, rate),
                "lag": window(server.url, seconds, block_ms, period_ms),
                "served": window(server.url, seconds, block_ms, period_ms, rate)}


def predict(runs, block_ms, period_ms):
    """The section's figures: measured lag and request latency against the residual-life predictions.

    The blocked window's lateness is the residual of its block (Σ b²/2W on average) plus the loop's own lateness,
    which the quiet window measures: so the mean lies between the prediction and the prediction plus the quiet mean,
    each widened by Z standard errors of the blocked mean. A beat is never less late than its residual, nor later
    than the residual plus the quiet window's worst: the p99 lies between the residual's quantiles at the levels
    the sample count allows. A request to `/` meets the same residual; on top come the quiet latency and the
    requests that arrived during the same block and go first."""
    quiet, blocked = runs["quiet"], runs["lag"]
    blocks, window_ms = blocked["blocks_ms"], blocked["window_ms"]
    lateness = blocked["lateness_ms"]
    mean, error = model.mean_and_error(lateness)
    quiet_mean = sum(quiet["lateness_ms"]) / len(quiet["lateness_ms"])
    predicted_mean = model.residual_mean(blocks, window_ms)
    low_q, high_q = model.quantile_levels(0.99, len(lateness))
    quiet_worst = max(quiet["lateness_ms"])
    figures = {
        "block_ms": block_ms, "period_ms": period_ms, "beats": len(lateness), "blocks": len(blocks),
        "mean_block_ms": sum(blocks) / len(blocks), "window_ms": window_ms,
        "blocked_share": sum(blocks) / window_ms,
        "mean_ms": mean, "mean_error_ms": error, "quiet_mean_ms": quiet_mean,
        "predicted_mean_ms": predicted_mean, "textbook_mean_ms": block_ms ** 2 / (2 * period_ms),
        "mean_low_ms": predicted_mean - model.Z * error, "mean_high_ms": predicted_mean + quiet_mean + model.Z * error,
        "p99_ms": model.percentile(lateness, 0.99), "predicted_p99_ms": model.residual_quantile(blocks, window_ms, 0.99),
        "textbook_p99_ms": block_ms - period_ms / 100,
        "p99_low_ms": model.residual_quantile(blocks, window_ms, low_q),
        "p99_high_ms": model.residual_quantile(blocks, window_ms, high_q) + quiet_worst,
        "quiet_p99_ms": model.percentile(quiet["lateness_ms"], 0.99), "quiet_worst_ms": quiet_worst,
    }
    figures.update(request_tail(quiet, runs["served"], lateness))
    figures["neighbours"] = {name: run["neighbours"] for name, run in runs.items()}
    return figures


def request_tail(quiet, blocked, lateness):
    """The p99 of the served window's request latency, and its prediction from the lag window's: the lag's p99 plus
    the quiet latency's median; bounds from the residual's quantiles at the levels n requests allow, and above, the
    quiet window's worst latency plus one quiet median for each request that can arrive during a block."""
    blocks, window_ms = blocked["blocks_ms"], blocked["window_ms"]
    latencies = blocked["latency_ms"]
    n = len(latencies)
    low_q, high_q = model.quantile_levels(0.99, n)
    quiet_median = model.percentile(quiet["latency_ms"], 0.5)
    rate_per_ms = n / window_ms
    queued = rate_per_ms * max(blocks) + model.Z * (rate_per_ms * max(blocks)) ** 0.5 + 1
    return {
        "requests": n, "request_errors": blocked["errors"] + quiet["errors"],
        "request_p99_ms": model.percentile(latencies, 0.99), "request_mean_ms": sum(latencies) / n,
        "quiet_request_p99_ms": model.percentile(quiet["latency_ms"], 0.99), "quiet_request_median_ms": quiet_median,
        "predicted_request_p99_ms": model.percentile(lateness, 0.99) + quiet_median,
        "request_p99_low_ms": model.residual_quantile(blocks, window_ms, low_q),
        "request_p99_high_ms": (model.residual_quantile(blocks, window_ms, high_q) + max(quiet["latency_ms"])
                                + queued * quiet_median),
    }
