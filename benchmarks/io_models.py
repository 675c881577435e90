"""The five IO models' phases and CPU, and select vs epoll per-wait cost, as lesson 04 measures them."""

import argparse
import json
import statistics

from iolab.lessons.io_models import blocking, completion, multiplexing, nonblocking, select_vs_epoll, signal_driven
from iolab.lessons.io_models.trace import ModelUnavailable

MODELS = {"blocking": blocking, "nonblocking": nonblocking, "multiplexing": multiplexing,
          "signal": signal_driven, "async": completion}
FD_COUNTS = [1, 16, 64, 128, 256, 384, 512, 640, 768, 896, 1500, 2000, 3000, 4000, 6000, 8000]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay-ms", type=float, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="runs per model; medians are reported")
    parser.add_argument("--repetitions", type=int, default=500, help="timed waits per descriptor count")
    args = parser.parse_args()

    models = {}
    for name, module in MODELS.items():
        try:
            runs = [module.run(args.delay_ms) for _ in range(args.rounds)]
        except ModelUnavailable as reason:
            print(f"{name}: skipped ({reason})")
            continue
        models[name] = {key: round(statistics.median(getattr(run, key) for run in runs), 3)
                        for key in ("wait_ms", "copy_ms", "cpu_ms", "work_ms")}
        print(f"{name:>12}: " + ", ".join(f"{key} {value:8.3f}" for key, value in models[name].items()))

    rows = select_vs_epoll.wait_cost([n for n in FD_COUNTS if n <= select_vs_epoll.fd_budget()], args.repetitions)
    for row in rows:
        print("  ".join(f"{key} {'-' if value is None else round(value, 2)}" for key, value in row.items()))
    slopes = {name: round(select_vs_epoll.slope_us_per_1000_fds(rows, name), 3) for name in ("select", "poll", "epoll")}
    print("µs per 1000 descriptors: " + ", ".join(f"{name} {slope}" for name, slope in slopes.items()))
    print(json.dumps({"models": models, "slopes_us_per_1000_fds": slopes,
                      "largest": rows[-1], "delay_ms": args.delay_ms}))


if __name__ == "__main__":
    main()
