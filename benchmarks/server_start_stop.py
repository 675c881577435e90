"""How long each server takes from launch to its LISTENING line, and from stop() to reaped."""

import argparse
import json
import statistics
import time

from iolab import servers


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    figures = {}
    for name in servers.available():
        starts, stops = [], []
        for _ in range(args.rounds):
            server = servers.start(name)
            starts.append(server.started_in_s)
            began = time.perf_counter()
            server.stop()
            stops.append(time.perf_counter() - began)
        figures[name] = {"start_s_median": round(statistics.median(starts), 3), "start_s_max": round(max(starts), 3),
                         "stop_s_median": round(statistics.median(stops), 3), "stop_s_max": round(max(stops), 3)}
        print(f"{name:24} start {figures[name]['start_s_median']:.3f} s (max {figures[name]['start_s_max']:.3f}),"
              f" stop {figures[name]['stop_s_median']:.3f} s (max {figures[name]['stop_s_max']:.3f})")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
