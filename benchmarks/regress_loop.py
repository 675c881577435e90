"""The lessons run N times in a row, as make regress runs them: every failure, and how often each claim failed.

Each lesson runs under papermill with the Makefile's regress arguments (quick,
solutions, results_path, a per-cell timeout), optionally pinned to one CPU
(`--taskset 0`) and beside CPU hogs (`--hogs 1` or `2`; `--hog` is one), each
lesson in turn under the shared measuring lock if `--lock` names it, so others
can measure between two lessons. A lesson is killed at `--lesson-timeout` and no
lesson starts past `--max-seconds`. It reads every claim line the lesson printed
(✓, ✗ or –) and tallies, per lesson and claim, the runs that judged it and the
ones it failed in. The last line is JSON: per run and lesson, passed and
seconds; for every failure, its lesson, the cell (index in the source notebook,
and its first line), the error and the numbers its message carries; the tally.

    python benchmarks/regress_loop.py --runs 5 --lock /tmp/iolab-measure.lock
    python benchmarks/regress_loop.py --runs 10 --quick --lessons 12 --taskset 0
    python benchmarks/regress_loop.py --runs 1 --lessons 02 --taskset 0 --hogs 2
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from iolab import children, measuring_lock

REPO = Path(__file__).resolve().parents[1]
# Cells papermill adds to the executed copy; the source notebook's cell numbers leave them out.
ADDED_BY_PAPERMILL = {"injected-parameters", "papermill-error-cell-tag"}
KERNEL_PORT_RACE = "zmq.error.ZMQError: Address already in use"
NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?%?")
HOG = "from iolab import contract\ncontract.die_with_parent()\nwhile True:\n    pass\n"


def numbers_in(text):
    """The numbers a message carries, in order: '92.8%' -> 0.928, '1,024' -> 1024.0; words and names left out."""
    values = []
    for match in NUMBER.finditer(text):
        token = match.group()
        # A digit inside a word (lesson names like 'q1', hex, 'tornado_app2') is not a measured value.
        if match.start() > 0 and (text[match.start() - 1].isalpha() or text[match.start() - 1] == "_"):
            continue
        try:
            value = float(token.rstrip("%").replace(",", ""))
        except ValueError:
            continue
        values.append(value / 100 if token.endswith("%") else value)
    return values


def source_text(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def failure_of(executed, log_text=""):
    """Where an executed notebook (papermill's copy, a dict) stopped: {cell, first_line, error, message, values}.

    `cell` is the index in the source notebook (the cells papermill adds left out); None when no cell failed (the
    kernel died, or papermill stopped before running one: then the log's last lines are the message).
    """
    index = -1
    for cell in executed.get("cells", []):
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & ADDED_BY_PAPERMILL:
            continue
        index += 1
        if cell.get("cell_type") != "code":
            continue
        errors = [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]
        status = cell.get("metadata", {}).get("papermill", {}).get("status")
        if errors or status == "failed":
            error = errors[0] if errors else {"ename": "failed", "evalue": log_tail(log_text)}
            message = str(error.get("evalue", ""))
            first_line = next((line for line in source_text(cell).splitlines() if line.strip()), "")
            return {"cell": index, "first_line": first_line[:200], "error": error.get("ename", ""),
                    "message": message[:1000], "values": numbers_in(message)}
    message = log_tail(log_text)
    return {"cell": None, "first_line": "", "error": "no cell failed", "message": message, "values": numbers_in(message)}


CLAIM_MARKS = ("✓", "✗", "–", "⚠")  # holds, fails, skipped, excused (others held the CPUs)
# A claim line is "<mark> <claim>: <measured> within <bounds>" (or ", outside <bounds>", ": skipped, <why>", or
# ": not judged: <measured>, outside <bounds>; <why>").
FIGURES_START = re.compile(r"(: skipped, |: not judged: |, outside [\[(]| within [\[(≥])")
# A band with both ends finite: "[lo, hi]", "(lo, hi]" and the like; and the figure a claim names as its prediction.
BAND = re.compile(r"(?:within|outside) [\[(]\s*([-+−]?[\d,.]+(?:e[-+]?\d+)?)\s*,\s*([-+−]?[\d,.]+(?:e[-+]?\d+)?)\s*[\])]")
PREDICTED = re.compile(r"(?:predicted|predicts|model) ([-+−]?\d(?:[\d,.]*\d)?)")
WIDE = 0.5  # a band wider than ±50 % of its prediction is narrowed, or the claim states itself a bound
# The words with which a claim states itself a bound, not a prediction: its band is then no error bar.
STATED_BOUND = re.compile(r"\b(at most|at least|between|never more|no more|no less|before|more \w+ than|a bound)\b")


def band_width(line):
    """A claim line's band as a share of what it predicts: its half-width over the figure the line names as its
    prediction, or over the band's middle where it names none. None for a band open on one side, a claim that
    picks the nearer of two predictions (its band is only the half-way mark), a band from zero or less up (an upper
    bound), or a line with no band."""
    found = BAND.search(line)
    if not found or "nearer the predicted" in line:
        return None
    low, high = (float(text.replace(",", "").replace("−", "-")) for text in found.groups())
    if low <= 0:
        return None  # "at most": a band from nothing up is a bound open below, whatever it predicts
    named = PREDICTED.search(line[:found.start()])
    centre = float(named.group(1).replace(",", "").replace("−", "-")) if named else (low + high) / 2
    return round((high - low) / 2 / abs(centre), 3) if centre else None


def claim_lines(executed):
    """Every claim line an executed notebook printed: [(mark, claim, band)], the claim with its numbers made '#', so
    the same claim of two runs has one name, and its band's width as band_width() reads it."""
    found = []
    for cell in executed.get("cells", []):
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            for line in ("".join(text) if isinstance(text, list) else text).splitlines():
                if line[:1] not in CLAIM_MARKS or line[1:2] != " ":
                    continue
                head = FIGURES_START.split(line[2:], maxsplit=1)[0]
                if line[0] in "✓✗" and ": " in head:
                    head = head.rsplit(": ", 1)[0]  # the measured figure follows the claim's last colon
                found.append((line[0], NUMBER.sub("#", head), band_width(line)))
    return found


def tally(runs):
    """{lesson: {claim: {"judged", "failed", "excused", "skipped", "widest_band"}}} over every run's claim lines:
    the widest band is the largest band_width() any run printed for the claim (None where no run printed one)."""
    counts = {}
    for run in runs:
        for row in run["lessons"]:
            for mark, claim, *band in row.get("claims", []):
                entry = counts.setdefault(row["lesson"], {}).setdefault(
                    claim, {"judged": 0, "failed": 0, "excused": 0, "skipped": 0, "widest_band": None})
                entry[{"–": "skipped", "⚠": "excused"}.get(mark, "judged")] += 1
                entry["failed"] += mark == "✗"
                if band and band[0] is not None:
                    entry["widest_band"] = max(band[0], entry["widest_band"] or 0.0)
    return counts


def wide_bands(counts, stated=False):
    """[(lesson, claim, widest band)] for every claim whose band ran wider than ±WIDE of its prediction: those that
    state themselves a bound (STATED_BOUND) with `stated`, the others without."""
    return [(lesson, claim, entry["widest_band"]) for lesson, claims in counts.items()
            for claim, entry in claims.items()
            if (entry["widest_band"] or 0) > WIDE and bool(STATED_BOUND.search(claim)) == stated]


def log_tail(text, lines=3):
    return " | ".join(text.strip().splitlines()[-lines:])[-600:]



def papermill_command(notebook, executed, results, args):
    command = [
        sys.executable, "-m", "papermill", "--cwd", str(REPO / "notebooks"), "-k", "python3", "--no-progress-bar",
        "--execution-timeout", str(args.cell_timeout), "-p", "quick", str(args.quick), "-p", "solutions", "True",
        "-p", "results_path", str(results), str(notebook), str(executed),
    ]
    return (["taskset", "-c", args.taskset] if args.taskset is not None else []) + command


def run_lesson(notebook, out_dir, args, timeout_s):
    """One lesson under papermill, killed with its whole process group at `timeout_s`: a row of the summary."""
    stem = notebook.stem
    executed, results, log_path = out_dir / f"{stem}.ipynb", out_dir / f"{stem}.json", out_dir / f"{stem}.log"
    for stale in (executed, results):
        stale.unlink(missing_ok=True)
    began = time.monotonic()
    with open(log_path, "w") as log:
        process = children.spawn(papermill_command(notebook, executed, results, args), stdout=log,
                                 stderr=subprocess.STDOUT, own_group=True)
        try:
            returncode = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the kernel and every server it left, if any
            process.wait()
    seconds = round(time.monotonic() - began, 1)
    log_text = log_path.read_text(errors="replace")
    passed = returncode == 0 and results.exists() and results.stat().st_size > 0
    try:
        claims = claim_lines(json.loads(executed.read_text()))
    except (OSError, ValueError):
        claims = []
    row = {"lesson": stem, "passed": passed, "seconds": seconds, "claims": claims}
    if passed:
        return row
    try:
        failure = failure_of(json.loads(executed.read_text()), log_text)
    except (OSError, ValueError):
        failure = failure_of({}, log_text)
    if returncode is None:
        failure["error"] = f"killed after {timeout_s:.0f} s (lesson timeout)"
    elif returncode == 0:
        failure["error"] = "wrote no results JSON"
    return row | {"failure": failure, "executed": str(executed)}


@contextlib.contextmanager
def hogging(args):
    """--hogs CPU hogs beside one lesson (pinned with it under --taskset); each also dies with this process."""
    command = children.python("-c", HOG)
    if args.taskset is not None:
        command = ["taskset", "-c", args.taskset] + command
    hogs = [children.spawn(command, stdout=subprocess.DEVNULL) for _ in range(args.hogs)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def chosen_notebooks(wanted):
    notebooks = sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))  # the lessons: the glossary runs nothing
    if wanted:
        notebooks = [nb for nb in notebooks if any(nb.stem.startswith(w) for w in wanted)]
    return notebooks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="times to run every lesson (default 1)")
    parser.add_argument("--lessons", default="", help="comma-separated lesson numbers or stems (default: all)")
    parser.add_argument("--quick", action="store_true", help="the lessons' small CI sizes instead of the full ones")
    parser.add_argument("--taskset", default=None, help="pin everything to this CPU list (taskset -c), e.g. 0")
    parser.add_argument("--hogs", type=int, default=0, help="CPU hogs to run beside the lessons (0, 1 or 2)")
    parser.add_argument("--hog", action="store_const", const=1, dest="hogs", help="one CPU hog: --hogs 1")
    parser.add_argument("--lock", default=None, help="a lock file taken around each lesson (/tmp/iolab-measure.lock)")
    parser.add_argument("--cell-timeout", type=int, default=900, help="papermill's per-cell limit, as make regress")
    parser.add_argument("--lesson-timeout", type=float, default=1800, help="a lesson is killed past this many seconds")
    parser.add_argument("--max-seconds", type=float, default=4 * 3600, help="no lesson starts past this many seconds")
    parser.add_argument("--out", default=str(REPO / "build" / "regress_loop"), help="where executed copies go")
    parser.add_argument("--read", default=None, help="run nothing: tally the executed copies an earlier --out holds")
    args = parser.parse_args()
    if args.read:
        counts = print_tally(read_runs(Path(args.read)))
        print(json.dumps({"read": args.read, "claims": counts, "wide_bands": wide_bands(counts),
                          "stated_bounds": wide_bands(counts, stated=True)}))
        return
    if not 1 <= args.runs <= 100:
        parser.error(f"--runs must be between 1 and 100, got {args.runs}")
    if not 0 <= args.hogs <= 2 * (os.cpu_count() or 1):
        parser.error(f"--hogs must be between 0 and twice the CPUs ({2 * (os.cpu_count() or 1)}), got {args.hogs}")
    notebooks = chosen_notebooks([w for w in args.lessons.split(",") if w])
    if not notebooks:
        parser.error(f"--lessons {args.lessons!r} names no notebook in {REPO / 'notebooks'}")
    if args.taskset is not None and not shutil.which("taskset"):
        parser.error("--taskset needs the taskset program (util-linux), which is not installed")
    began = time.monotonic()
    runs, stopped = [], None
    for number in range(1, args.runs + 1):
        out_dir = Path(args.out) / f"run{number}"
        out_dir.mkdir(parents=True, exist_ok=True)
        rows = []
        for notebook in notebooks:
            left_s = args.max_seconds - (time.monotonic() - began)
            if left_s <= 0:
                stopped = f"--max-seconds {args.max_seconds:.0f} reached before run {number}, {notebook.stem}"
                break
            # The hog runs only while this lesson holds the lock: it must not disturb others' measurements.
            with measuring_lock.held(args.lock), hogging(args):
                row = run_lesson(notebook, out_dir, args, min(args.lesson_timeout, left_s))
                if not row["passed"] and KERNEL_PORT_RACE in (out_dir / f"{notebook.stem}.log").read_text():
                    # Jupyter picks the kernel's ports, then the kernel binds them: another program took one.
                    row = run_lesson(notebook, out_dir, args, min(args.lesson_timeout, left_s)) | {"again": True}
            rows.append(row)
            failure = row.get("failure")
            print(f"run {number} {row['lesson']}: {'passed' if row['passed'] else 'FAILED'} in {row['seconds']} s"
                  + (f"; cell {failure['cell']} ({failure['first_line']}): {failure['error']}:"
                     f" {failure['message'][:300]}" if failure else ""), flush=True)
        runs.append({"run": number, "passed": all(r["passed"] for r in rows), "lessons": rows})
        if stopped:
            break
    failures = [{"run": run["run"], "lesson": row["lesson"], "seconds": row["seconds"], **row["failure"]}
                for run in runs for row in run["lessons"] if not row["passed"]]
    counts = print_tally(runs)
    for run in runs:
        for row in run["lessons"]:
            row.pop("claims", None)  # the tally keeps what they said
    print(json.dumps({
        "quick": args.quick, "taskset": args.taskset, "hogs": args.hogs, "cpus": len(os.sched_getaffinity(0)),
        "runs": runs, "lessons_passed": sum(r["passed"] for run in runs for r in run["lessons"]),
        "lessons_run": sum(len(run["lessons"]) for run in runs), "failures": failures, "stopped": stopped,
        "seconds": round(time.monotonic() - began, 1), "claims": counts,
        "wide_bands": wide_bands(counts), "stated_bounds": wide_bands(counts, stated=True),
    }))
    sys.exit(0 if runs and not failures and not stopped else 1)


def read_runs(out):
    """The runs an earlier --out folder holds, each lesson's claims read back from its executed copy."""
    runs = []
    for folder in sorted(out.glob("run*"), key=lambda path: int(path.name[3:] or 0)):
        rows = []
        for executed in sorted(folder.glob("[0-9][0-9]-*.ipynb")):
            with contextlib.suppress(OSError, ValueError):
                rows.append({"lesson": executed.stem, "claims": claim_lines(json.loads(executed.read_text()))})
        runs.append({"run": int(folder.name[3:] or 0), "lessons": rows})
    return runs


def print_tally(runs):
    """Print each lesson's judgements, the claims that failed or were excused, and the wide bands; return the tally."""
    counts = tally(runs)
    for lesson, claims in counts.items():
        failing = {claim: entry for claim, entry in claims.items() if entry["failed"] or entry["excused"]}
        judged = sum(entry["judged"] for entry in claims.values())
        excused = sum(entry["excused"] for entry in claims.values())
        print(f"{lesson}: {len(claims)} claims, {judged} judgements, {excused} excused,"
              f" {sum(bool(e['failed']) for e in claims.values())} claim(s) failed at least once")
        for claim, entry in failing.items():
            print(f"  ✗ {entry['failed']} of {entry['judged']} judged, ⚠ {entry['excused']} excused: {claim}")
    for lesson, claim, width in wide_bands(counts, stated=True):
        print(f"  a bound, as the claim says, ±{width:.0%} of its middle: {lesson}: {claim}")
    for lesson, claim, width in wide_bands(counts):
        print(f"  PREDICTION BAND ±{width:.0%}, wider than ±{WIDE:.0%}: {lesson}: {claim}")
    return counts


if __name__ == "__main__":
    main()
