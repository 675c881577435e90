"""Every server the registry can start, and the lab's variants, against the hostile-HTTP corpus: the full per-server table.

The corpus is iolab.hostile's: the hand-written cases and --mutations seeded
random mutations of a valid request (tests/test_hostile_http.py runs 60 of
them in CI). h11 is the reference: a 2xx to bytes it refuses, or to a request
it has not seen the end of, counts as lenient. The lab's own servers must show
0 crashes, 0 hangs and 0 lenient 2xx; third-party servers are recorded. The
last line printed is JSON: {"cases": ..., "servers": [one row per server]}.

    .venv/bin/python benchmarks/hostile_http.py [--mutations 1000] [--seed 26] [--servers NAME ...]
"""

import argparse
import json
import sys

from iolab import hostile, registry, servers, tables

# Options worth fuzzing besides each server's defaults: another parser, another worker type.
# pipeline_app's --parser httptools parses with llhttp, not the lab's parser: recorded as third-party.
THIRD_PARTY_PARSER = {"pipeline_app --parser httptools"}
VARIANTS = {
    "pipeline_app --parser httptools": ("pipeline_app", {"parser": "httptools"}, ("httptools",)),
    "uvicorn_app --http h11": ("uvicorn_app", {"http": "h11"}, ("h11",)),
    "uvicorn_app --http httptools": ("uvicorn_app", {"http": "httptools"}, ("httptools",)),
    "gunicorn_app --worker-class gthread": ("gunicorn_app", {"worker_class": "gthread", "threads": 4}, ()),
}


def lineup(names):
    """(label, server name, options, why it cannot run or None) for every server and variant asked for."""
    import importlib.util

    for name in names:
        yield name, name, {}, registry.get(name).missing()
    for label, (name, options, modules) in VARIANTS.items():
        if name not in names:
            continue
        missing = registry.get(name).missing() or next(
            (f"{label} needs the Python package {m!r}" for m in modules if importlib.util.find_spec(m) is None), None
        )
        yield label, name, options, missing


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutations", type=int, default=1000, help="seeded random mutations (default 1000)")
    parser.add_argument("--seed", type=int, default=26, help="the mutations' seed (default 26)")
    parser.add_argument("--workers", type=int, default=4, help="cases in flight at once (default 4)")
    parser.add_argument("--servers", nargs="*", default=None, help="registry names (default: every one whose port speaks HTTP)")
    args = parser.parse_args()
    if not 0 <= args.mutations <= 100_000:
        parser.error(f"--mutations must be between 0 and 100000, got {args.mutations}")
    if not 1 <= args.workers <= 32:
        parser.error(f"--workers must be between 1 and 32, got {args.workers}")
    names = args.servers or hostile.http_servers()
    for name in names:
        registry.get(name)  # an unknown name is refused by name
        if registry.get(name).protocol != "http":
            parser.error(f"{name}'s port speaks {registry.get(name).protocol}, not HTTP: no HTTP request reaches it")
    cases = hostile.corpus(mutations=args.mutations, seed=args.seed)
    reports, skipped = [], {}
    for label, name, options, missing in lineup(names):
        if missing:
            skipped[label] = missing
            print(f"{label}: skipped, {missing}", file=sys.stderr)
            continue
        with servers.serve(name, **options) as server:
            report = hostile.fuzz(server, cases, workers=args.workers)
            report.server = label
            report.own = report.own and label not in THIRD_PARTY_PARSER
            alive = server.alive()
        reports.append(report)
        print(f"{label}: {report.tried} cases in {report.seconds:.1f} s, {len(report.lenient)} lenient 2xx"
              f"{'' if alive else ', DIED'}", file=sys.stderr)
        for case, why in report.lenient[:12]:
            print(f"    lenient: {case}: {why}", file=sys.stderr)
    print(tables.markdown(hostile.TABLE_HEADERS, hostile.table_rows(reports)).data)
    own_failures = [r.server for r in reports if r.own and not r.strict]
    print(json.dumps({"cases": len(cases), "mutations": args.mutations, "seed": args.seed,
                      "own_servers_strict": not own_failures, "own_failures": own_failures,
                      "servers": [r.row() for r in reports], "skipped": skipped}))


if __name__ == "__main__":
    main()
