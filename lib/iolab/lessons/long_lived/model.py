"""Lesson 12's predictions: memory per connection, fan-out, the floor.

Each is built from figures measured in the same run: memory(N) = M0 + N·m and the N that fit a budget; the i-th
subscriber's delivery at i × D; the last one on a number of CPUs by the bottleneck law.
"""

import math
import os
import statistics


def fit_line(xs, ys):
    """Least squares y = a + b·x: (a, b)."""
    if len(xs) < 2 or len(set(xs)) < 2:
        raise ValueError(f"a line needs two different x at least, got {list(xs)}")
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sum((x - mean_x) ** 2 for x in xs)
    return mean_y - b * mean_x, b


def step_slopes(ns, rss):
    """ΔRSS / ΔN between each pair of neighbouring points: one estimate of m per step."""
    return [(rss[i + 1] - rss[i]) / (ns[i + 1] - ns[i]) for i in range(len(ns) - 1)]


# Student's t at 99.5 % for 1 to 10 degrees of freedom: a 99 % prediction interval's half-width in standard errors.
# A run checks about six held-out points (servers × compression): at 99 % each, the chance that any one falls out
# by chance alone is about 6 %, as for a single 95 % interval.
T_995 = (63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169)
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")  # RSS counts whole pages: no interval is narrower than one
# glibc grows and trims its heap in steps of 128 KiB (mallopt(3): M_TOP_PAD, M_TRIM_THRESHOLD), and a table that
# doubles adds a lump as large: the held-out point and the fitted line may each sit one such step off, so no
# interval is narrower than two of them (the held-out websockets_push point ran 140-215 KiB over its line).
HEAP_STEP_BYTES = 128 * 1024


def prediction_interval(xs, ys, x0):
    """(prediction, half-width) of a least-squares line at x0: the 99 % interval a new point lies in, from the
    fit's own residuals (s·t·sqrt(1 + 1/n + (x0 − x̄)² / Sxx), n − 2 degrees of freedom)."""
    a, b = fit_line(xs, ys)
    n = len(xs)
    if n < 3:
        raise ValueError(f"a prediction interval needs 3 points at least, got {n}")
    residual = math.sqrt(sum((y - a - b * x) ** 2 for x, y in zip(xs, ys)) / (n - 2))
    mean_x = statistics.fmean(xs)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    t = T_995[min(n - 2, len(T_995)) - 1]
    return a + b * x0, t * residual * math.sqrt(1 + 1 / n + (x0 - mean_x) ** 2 / sxx)


def memory(ns, rss_bytes):
    """The fit RSS(N) = M0 + N·m over every point but the last, and that fit's prediction of the last.

    The last point is held out: the fit predicts it, the run measures it. The bounds are the run's noise: the
    99 % prediction interval of the fit, from how far the fitted points themselves lie off their line, and
    never narrower than two of the allocator's heap steps (HEAP_STEP_BYTES).
    """
    ns, rss_bytes = list(ns), list(rss_bytes)
    if len(ns) < 4:
        raise ValueError(f"the memory fit needs 4 points at least (3 to fit, 1 to predict), got {len(ns)}")
    m0, m = fit_line(ns[:-1], rss_bytes[:-1])
    predicted, half = prediction_interval(ns[:-1], rss_bytes[:-1], ns[-1])
    half = max(half, PAGE_BYTES, 2 * HEAP_STEP_BYTES)
    all_m0, all_m = fit_line(ns, rss_bytes)
    return {
        "ns": ns, "rss_bytes": rss_bytes, "m0_bytes": m0, "bytes_per_connection": m,
        "kib_per_connection": m / 1024, "all_points_kib_per_connection": all_m / 1024, "all_points_m0_bytes": all_m0,
        "predicted_last_bytes": predicted, "measured_last_bytes": rss_bytes[-1],
        "last_low_bytes": predicted - half, "last_high_bytes": predicted + half,
    }


def n_max(budget_bytes, bytes_per_connection, m0_bytes=0.0):
    """The most connections whose predicted RSS, M0 + N·m, fits `budget_bytes` (0 if M0 alone does not)."""
    if bytes_per_connection <= 0:
        return math.inf
    return max(0, math.floor((budget_bytes - m0_bytes) / bytes_per_connection))


def last_delivery_s(n, d_server_s, d_client_s, cpus):
    """When the n-th subscriber gets the message: n × the bottleneck's demand per delivery.

    The server sends and the client receives: two stations in series, each one thread. Each station does its n
    deliveries at best one after another, and the two share the CPUs: so the last one is at
    n × max(D_server, D_client, (D_server + D_client) / CPUs). On two free CPUs that is n × max(D_server, D_client);
    on one, n × (D_server + D_client).
    """
    return n * max(d_server_s, d_client_s, (d_server_s + d_client_s) / cpus)


TOLERANCE = 0.2  # how near a prediction of a last delivery must come, before the repeats' own disagreement is added


def self_wait_s(server_cpu_s, client_cpu_s, cpus):
    """The seconds server and client wait for each other's CPU: on one CPU each waits while the other runs (their
    sum), on two or more neither need wait. Waits past it were for CPUs another program held."""
    return max(0.0, 2.0 - max(cpus, 1.0)) * (server_cpu_s + client_cpu_s)


def fanout(n, repeats, cpus, burst_cpus=None):
    """The prediction for one transport's broadcasts. `repeats`: one dict per broadcast to the same n subscribers,
    {first_s, last_s, path_cpu_s, server_cpu_s, client_cpu_s, queued_s}.

    The last delivery waits only for the work on the delivery path: the server's CPU up to its last send
    (path_cpu_s: its broadcast loop, or every long poll answered up to the last) and the client's CPU up to its last
    read. Each repeat predicts its own: the later of its first delivery plus the client's reads of the n − 1
    others, and n × the bottleneck's D, max(D_server, D_client, (D_server + D_client) / CPUs). Each repeat is
    judged by its ratio,
    measured over predicted, and the claim by their median, within TOLERANCE widened by the run's noise: how far
    the nearest other repeat's ratio lies from the median's. Above, the band also takes the seconds they waited for
    CPUs another program held (waits beyond their self_wait_s). `burst_cpus`: the most CPUs a burst this short may
    get under a CFS quota (environment.cpus_within); the band then runs from k = burst_cpus to k = cpus, and is a
    bound, not a prediction.
    """
    burst = max(burst_cpus or cpus, cpus)

    def predict(r, k):
        # The client reads the other n - 1 after the first; and all n wait for the bottleneck's work. The first is not
        # added to the second: where the client ran only once the server's loop was done (one CPU, a short loop),
        # the first delivery already holds that loop.
        after_first = r.get("first_s", 0.0) + r["client_cpu_s"] * (n - 1) / n
        return max(after_first, last_delivery_s(n, r["path_cpu_s"] / n, r["client_cpu_s"] / n, k))

    def excess_wait(r):
        return max(0.0, r.get("queued_s", 0.0) - self_wait_s(r["path_cpu_s"], r["client_cpu_s"], burst))

    central = [predict(r, cpus) for r in repeats]
    ratios = [r["last_s"] / p for r, p in zip(repeats, central)]
    order = sorted(range(len(repeats)), key=lambda i: ratios[i])
    place = (len(repeats) - 1) // 2
    middle = order[place]  # the median repeat
    # The run's noise: how far the judged repeat's nearest other repeat lies from it. One repeat a scheduler or a
    # collector disturbed lies far off; the nearest one says how repeatable the judged one was.
    noise = min(abs(ratios[order[j]] - ratios[middle]) for j in (place - 1, place + 1) if 0 <= j < len(repeats))
    width = TOLERANCE + noise
    judged = repeats[middle]
    return {
        "subscribers": n, "cpus": cpus, "burst_cpus": burst, "is_bound": burst > cpus,
        "cpu_us_per_delivery": statistics.median(r["server_cpu_s"] for r in repeats) / n * 1e6,
        "path_us_per_delivery": statistics.median(r["path_cpu_s"] for r in repeats) / n * 1e6,
        "client_cpu_us_per_delivery": statistics.median(r["client_cpu_s"] for r in repeats) / n * 1e6,
        "queued_ms": statistics.median(r.get("queued_s", 0.0) for r in repeats) * 1000,
        "excess_wait_ms": excess_wait(judged) * 1000,
        "first_ms": judged.get("first_s", 0.0) * 1000,
        "ratios": ratios, "noise": noise, "width": width, "judged_repeat": middle,
        "last_ms": judged["last_s"] * 1000, "predicted_last_ms": central[middle] * 1000,
        "low_ms": max(0.0, predict(judged, burst) * (1 - width) * 1000),
        "high_ms": (central[middle] * (1 + width) + excess_wait(judged)) * 1000,
        "spread": (max(r["last_s"] for r in repeats) - min(r["last_s"] for r in repeats))
        / statistics.median(r["last_s"] for r in repeats),
    }


def delivery_line(n, first_s, last_s):
    """The predicted delivery of the i-th subscriber, i = 1..n: the first's, then D more each. (x, y in ms) to draw."""
    return [1, n], [first_s * 1000, last_s * 1000]


def floor_ratio(d_s, floor_s):
    """How many times the floor's CPU per subscriber a broadcaster spends."""
    return d_s / floor_s if floor_s > 0 else math.inf


def time_to_reach(n, d_s):
    """The time one CPU takes to send to n subscribers at D each: n × D."""
    return n * d_s
