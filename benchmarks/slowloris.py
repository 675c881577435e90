"""Slow clients against every server the registry can start: how many it takes to stop it answering a fresh client.

Two kinds of slow client (iolab.slowloris): one sends a request's head a byte a
second and never ends it; the other sends a whole head announcing a 1 MB body
and then the body a byte a second. For each server and kind, slow clients are
attached 1, 2, 4, ... up to --most, and after each step a fresh client asks for
`/` on a connection of its own; "blocked at" is the count at which it was first
not answered within 2 s. At --most (1,000 by default), 20 fresh requests spread
over two seconds give the fresh-request latency beside them. The soft file limit
is raised first (two descriptors per slow client on this machine: ours and the
server's). The lab's own servers cut a slow client off after the head and body
timeouts in iolab.contract; a run this short mostly ends before them. The last
line printed is JSON: {"most": ..., "rows": [one per server and kind]}.

    flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/slowloris.py [--most 1000] [--servers NAME ...]
"""

import argparse
import json
import sys

from iolab import contract, environment, hostile, registry, servers, slowloris, tables

SPARE_FILES = 64  # descriptors this process needs besides the slow clients


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--most", type=int, default=1000, help="the most slow clients attached (default 1000)")
    parser.add_argument("--kinds", nargs="*", default=list(slowloris.KINDS), choices=list(slowloris.KINDS))
    parser.add_argument("--servers", nargs="*", default=None, help="registry names (default: every one whose port speaks HTTP)")
    args = parser.parse_args()
    if not 1 <= args.most <= 10_000:
        parser.error(f"--most must be between 1 and 10000, got {args.most}")
    names = args.servers or hostile.http_servers()
    for name in names:
        registry.get(name)
        if registry.get(name).protocol != "http":
            parser.error(f"{name}'s port speaks {registry.get(name).protocol}, not HTTP: no HTTP request reaches it")
    # Our end of every slow client, and (servers inherit our limit) the server's end too.
    soft, _ = environment.raise_file_limit(2 * args.most + SPARE_FILES)
    most = min(args.most, (soft - SPARE_FILES) // 2)
    if most < args.most:
        print(f"RLIMIT_NOFILE is {soft} here, so at most {most} slow clients (asked for {args.most})", file=sys.stderr)
    rows, skipped = [], {}
    for name in names:
        missing = registry.get(name).missing()
        if missing:
            skipped[name] = missing
            print(f"{name}: skipped, {missing}", file=sys.stderr)
            continue
        for kind in args.kinds:
            with servers.serve(name) as server:  # a server of its own for each kind: the last siege leaves no trace
                result = slowloris.siege(server, kind, most=most)
                alive = server.alive()
            row = result.row()
            row["ours"] = name in hostile.OWN_HTTP
            row["survived"] = alive
            rows.append((result, row))
            print(f"{name} {kind}: {json.dumps(row)}", file=sys.stderr)
    print(tables.markdown(slowloris.TABLE_HEADERS, slowloris.table_rows([result for result, _ in rows])).data)
    print(json.dumps({"most": most, "rlimit_nofile": soft, "head_timeout_s": contract.HEAD_TIMEOUT_S,
                      "body_timeout_s": contract.BODY_TIMEOUT_S, "rows": [row for _, row in rows],
                      "skipped": skipped}))


if __name__ == "__main__":
    main()
