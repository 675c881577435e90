"""Where the suite's time goes, read from pytest's --durations=0 lines.

Reads the log of a run such as `make test PYTEST_ARGS="--durations=0 -q" > log 2>&1` (any log holding pytest's
"slowest durations" lines) and prints two tables: seconds by kind (browser lessons, papermill lessons, server contract
and fuzz, lesson modules, timing tests, other) and by file, with each one's share of the time pytest reported, then the
slowest tests. Setup, call and teardown all count; what no line accounts for (collection, durations pytest hid as
under 5 ms, plugin start-up) is printed as "not in any line". In lanes (make test runs pytest-xdist, tests/lanes.py) the
lines sum to more than pytest's time, and each share is of their sum. The last line printed is JSON:
{"pytest_s": ..., "kinds": {kind: {"s": ..., "tests": ...}}, "files": {file: s}, ...}.

    .venv/bin/python benchmarks/durations.py /tmp/prof-base.log [--files 30] [--slowest 20]
"""

import argparse
import fnmatch
import json
import re
from collections import defaultdict

# First match wins. Timing tests time real servers or clients and assert on the seconds they measured; the server
# kinds run every server in the registry under one contract or corpus.
KINDS = [
    ("browser lessons", ["tests/test_browser.py"]),
    ("papermill lessons", ["tests/test_notebooks.py", "tests/test_make_student.py", "tests/test_binder_layout.py"]),
    ("server contract and fuzz", [
        "tests/test_servers.py", "tests/test_thirdparty_servers.py", "tests/test_async_servers.py",
        "tests/test_postgres_server.py", "tests/test_hostile_http.py", "tests/test_slow_clients.py",
    ]),
    ("lesson modules", ["tests/lessons/*"]),
    ("timing tests", [
        "tests/test_step4_event_loop.py", "tests/test_steps.py", "tests/test_pipeline_app.py",
        "tests/test_pipeline_batch_app.py", "tests/test_db_front_ends.py", "tests/test_backend.py",
        "tests/test_usage.py", "tests/test_push_servers.py", "tests/test_client*.py", "tests/test_load.py",
        "tests/test_live.py", "tests/test_stall.py", "tests/test_benchtools.py", "tests/test_faults.py",
    ]),
]
OTHER = "other"
# "12.34s call     tests/test_x.py::test_y[param]", as --durations prints each phase of each test.
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S.*?)\s*$")
# pytest's last line: "2486 passed, 14 skipped in 1047.21s (0:17:27)".
SUMMARY = re.compile(r"^=*\s*(.*?) in (\d+(?:\.\d+)?)s\b")


def kind_of(path):
    for kind, patterns in KINDS:
        if any(fnmatch.fnmatch(path, pattern) for pattern in patterns):
            return kind
    return OTHER


def read_log(lines):
    """(seconds by test id and phase, pytest's summary or None, pytest's total seconds or None)."""
    phases, summary, total = {}, None, None
    for line in lines:
        if match := DURATION.match(line):
            seconds, phase, test = match.groups()
            phases[test, phase] = float(seconds)
        elif (match := SUMMARY.match(line)) and re.search(r"\d+ (passed|failed|error)", match.group(1)):
            summary, total = match.group(1), float(match.group(2))
    return phases, summary, total


def group(phases):
    """Seconds and test ids by kind, by file and by test (its phases summed)."""
    by_test = defaultdict(float)
    for (test, _), seconds in phases.items():
        by_test[test] += seconds
    kinds, files = defaultdict(lambda: [0.0, 0]), defaultdict(lambda: [0.0, 0])
    for test, seconds in by_test.items():
        path = test.split("::")[0]
        for table, key in ((kinds, kind_of(path)), (files, path)):
            table[key][0] += seconds
            table[key][1] += 1
    return kinds, files, by_test


def print_table(title, rows, total):
    print(f"\n{title:52} {'seconds':>9} {'share':>6} {'tests':>6}")
    for name, (seconds, tests) in rows:
        share = f"{100 * seconds / total:5.1f}%" if total else ""
        print(f"{name:52} {seconds:9.1f} {share:>6} {tests:6d}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", help="a pytest log with --durations=0 lines")
    parser.add_argument("--files", type=int, default=30, help="how many files to list, slowest first (0: all)")
    parser.add_argument("--slowest", type=int, default=20, help="how many single tests to list")
    args = parser.parse_args()
    with open(args.log, errors="replace") as log:
        phases, summary, pytest_s = read_log(log)
    if not phases:
        raise SystemExit(f"{args.log}: no --durations lines (run pytest with --durations=0)")
    kinds, files, by_test = group(phases)
    counted = sum(seconds for seconds, _ in kinds.values())
    total = pytest_s or counted
    print(f"{args.log}: {summary or 'no summary line'}; pytest {total:.1f} s, {counted:.1f} s in {len(by_test)} tests' lines")
    kind_rows = sorted(kinds.items(), key=lambda row: -row[1][0])
    if pytest_s and pytest_s >= counted:
        kind_rows.append(("(not in any line)", (pytest_s - counted, 0)))
    elif pytest_s:  # make test's lanes (tests/lanes.py) run tests side by side: shares are of the lines' sum
        print(f"the lines sum to {counted / pytest_s:.2f}x pytest's time: its lanes ran tests side by side")
        total = counted
    print_table("kind", kind_rows, total)
    file_rows = sorted(files.items(), key=lambda row: -row[1][0])
    print_table("file", file_rows[: args.files or None], total)
    print(f"\n{'slowest tests':95} {'seconds':>8}")
    for test, seconds in sorted(by_test.items(), key=lambda row: -row[1])[: args.slowest]:
        print(f"{test[:95]:95} {seconds:8.1f}")
    print(json.dumps({
        "log": args.log, "summary": summary, "pytest_s": pytest_s, "in_lines_s": round(counted, 2),
        "kinds": {kind: {"s": round(seconds, 2), "tests": tests} for kind, (seconds, tests) in kind_rows if tests},
        "files": {path: round(seconds, 2) for path, (seconds, _) in file_rows},
    }))


if __name__ == "__main__":
    main()
