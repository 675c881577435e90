"""Lesson 12's figures at full size.

Memory per connection, fan-out, the ladder and its floor.

It runs the lesson's own parts (iolab.lessons.long_lived: sections 1, 3, 4 and 5) at the notebook's default
sizes (10,000 subscribers) unless given others, then checks the lesson's claims on them. Run it under the shared
lock (flock /tmp/iolab-measure.lock ...), on two cores, or under `taskset -c 0` for one CPU. `--parts` picks the
sections. The last line is JSON: per memory series its KiB a connection and N_max in the budget; per transport
its CPU per delivery and the last delivery predicted and measured; per broadcaster its µs against the floor.
"""

import argparse
import asyncio
import json
import time

from iolab.claims import HOLDS, ClaimsFailed
from iolab.lessons.long_lived import claims, fanout, ladder, memory, parameters, slow

PARTS = ("memory", "fanout", "ladder", "slow")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=parameters.DEFAULTS["subscribers"],
                        help="N of section 1's largest step and of the ladder (default 10,000)")
    parser.add_argument("--fanout-subscribers", type=int, default=parameters.DEFAULTS["fanout_subscribers"])
    parser.add_argument("--repeats", type=int, default=parameters.DEFAULTS["repeats"])
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which sections, comma-separated: {PARTS}")
    parser.add_argument("--quick", action="store_true", help="the notebook's quick sizes")
    args = parser.parse_args()
    parts = [part for part in args.parts.split(",") if part]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"--parts takes {', '.join(PARTS)}; got {', '.join(sorted(unknown))}")
    plan = parameters.Plan.from_cell(parameters.DEFAULTS | {
        "subscribers": args.subscribers, "fanout_subscribers": args.fanout_subscribers, "repeats": args.repeats,
        "quick": args.quick})
    print(plan.describe(), plan.limits.describe(), sep="\n", flush=True)
    found, seconds = {}, {}
    for part in parts:
        began = time.monotonic()
        if part == "memory":
            found[part] = memory.run(plan)
            memory.say(found[part], plan)
        elif part == "fanout":
            found[part] = fanout.run(plan)
        elif part == "ladder":
            found[part] = ladder.run(plan)
        else:
            found[part] = asyncio.run(slow.run(plan))
        seconds[part] = time.monotonic() - began
        print(f"{part}: {seconds[part]:.1f} s", flush=True)
    results = claims.results(plan, memory_rows=found.get("memory", []), workers=None, fanouts=found.get("fanout", []),
                             ladder=found.get("ladder"), slow=found.get("slow"), proxy=None, browser=None, exercises={})
    try:
        held = sum(row[0] == HOLDS for row in claims.check_claims(results).rows)  # the count, not the Claims
        failed = []
    except ClaimsFailed as error:
        held, failed = None, str(error).splitlines()[1:]
    print(json.dumps({"plan": results["plan"], "seconds": seconds, "claims_failed": failed, "claims_held": held,
                      "memory": [{key: row[key] for key in ("server", "kind", "compression", "kib_per_connection",
                                                            "predicted_max", "predicted_rss_10000_bytes")}
                                 for row in results["memory"]],
                      "fanout": [{key: row[key] for key in ("server", "transport", "subscribers", "cpu_us_per_delivery",
                                                            "client_cpu_us_per_delivery", "last_ms",
                                                            "predicted_last_ms", "low_ms", "high_ms")}
                                 for row in results["fanout"]],
                      "ladder": results["ladder"] and {
                          "floor_us": results["ladder"]["floor"]["cpu_us_per_send"],
                          "rungs": {rung["label"]: rung["cpu_us_per_delivery"] for rung in results["ladder"]["rungs"]}},
                      "slow": [{key: run[key] for key in ("how", "baseline_ms", "others_worst_ms", "predicted_ms",
                                                          "growth_bytes_per_s", "dropped")}
                               for run in (results["slow_consumer"] or {}).get("runs", [])]}))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
