"""How long each server takes from launch to its LISTENING line, and from stop() to reaped, against the lab's targets."""

import argparse
import json
import signal
import statistics
import time

from iolab import servers

START_TARGET_S = 1.0
STOP_TARGET_S = 0.5
# Besides every server with its defaults: the third-party servers with more processes to start and stop.
MORE = [
    ("gunicorn_app", {"workers": 4, "threads": 4}),
    ("nginx_hello", {"workers": 4}),
    ("nginx_proxy", {"upstreams": 4, "workers": 2}),
]


def measure(name, options, rounds):
    starts, stops, killed = [], [], 0
    for _ in range(rounds):
        server = servers.start(name, **options)
        starts.append(server.started_in_s)
        began = time.perf_counter()
        server.stop()
        stops.append(time.perf_counter() - began)
        # The launcher's SIGKILL after its grace period, rather than the server's own exit on SIGTERM.
        killed += server.process.returncode == -signal.SIGKILL
    return {
        "start_s_median": round(statistics.median(starts), 3), "start_s_max": round(max(starts), 3),
        "stop_s_median": round(statistics.median(stops), 3), "stop_s_max": round(max(stops), 3),
        "stops_ended_by_sigkill": killed,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    available = servers.available()
    runs = [(name, {}) for name in available] + [(name, options) for name, options in MORE if name in available]
    figures, misses = {}, []
    for name, options in runs:
        label = name + "".join(f" {key}={value}" for key, value in options.items())
        figures[label] = figure = measure(name, options, args.rounds)
        if figure["start_s_max"] >= START_TARGET_S or figure["stop_s_max"] >= STOP_TARGET_S:
            misses.append(label)
        print(f"{label:40} start {figure['start_s_median']:.3f} s (max {figure['start_s_max']:.3f}),"
              f" stop {figure['stop_s_median']:.3f} s (max {figure['stop_s_max']:.3f},"
              f" {figure['stops_ended_by_sigkill']} of {args.rounds} by SIGKILL)")
    print(f"targets: start < {START_TARGET_S} s, stop < {STOP_TARGET_S} s; missed by: {', '.join(misses) or 'none'}")
    print(json.dumps({"servers": figures, "targets_s": {"start": START_TARGET_S, "stop": STOP_TARGET_S},
                      "missed": misses}))


if __name__ == "__main__":
    main()
