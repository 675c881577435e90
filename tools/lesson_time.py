"""Estimate a student's working time per lesson, and write it into each lesson's header and lesson 00's map.

Usage: python tools/lesson_time.py [--write] [NOTEBOOK_DIR]

Without --write it prints one line per lesson and a JSON line last. With --write it puts a
"**Your time:**" paragraph after each header's machine-time paragraph, and the map's table in 00.
"""

import json
import math
import re
import sys
import textwrap
from pathlib import Path

import nbformat

# Adults read non-fiction silently at about 238 words a minute (Brysbaert, 2019, a meta-analysis of 190
# studies); a student reading to learn, and checking figures as they go, reads slower: we take 150.
WORDS_PER_MINUTE = 150
# A line of code read to follow what a cell does, not to write it.
CODE_LINES_PER_MINUTE = 15
# An exercise: read the question, think, write the answer, run the check, read its verdict.
MINUTES_PER_EXERCISE = 4
ROUND_TO_MINUTES = 5

YOUR_TIME = "**Your time:**"
MACHINE_TIME = "running every cell takes"
MAP_BEGIN = "<!-- lesson map: tools/lesson_time.py --write fills in the last three columns -->"
MAP_END = "<!-- end of the lesson map -->"

# What one full run takes the machine, on two cores, from the full runs of benchmarks/regress_loop.py
# (the medians of nine runs, two cores; every header says the same in words). Update both together.
MACHINE_SECONDS = {
    "00": 26, "01": 266, "02": 271, "03": 15, "04": 10, "05": 29,
    "06": 113, "07": 84, "08": 145, "09": 147, "10": 127, "11": 39, "12": 99, "13": 47, "14": 36,
}
# The path through the lab's question (why one async process serves 40 waits at once): the rest go deeper.
CORE_PATH = {"00", "01", "02", "03", "05", "06"}

_EXERCISE = re.compile(r"\bq(\d+)\.check\(")
_WORD = re.compile(r"[^\s|#*`\-]+")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SOLUTION = re.compile(r"^\s*### BEGIN SOLUTION.*?^\s*### END SOLUTION[^\n]*$", re.DOTALL | re.MULTILINE)


def count(notebook):
    """(words of prose, lines of code, exercises) a student reads and does in one notebook."""
    words = code_lines = 0
    exercises = set()
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            words += len(_WORD.findall(_HTML_COMMENT.sub("", _without_your_time(cell.source))))
        elif cell.cell_type == "code":
            source = _SOLUTION.sub("", cell.source)  # a student's copy has no solutions to read
            code_lines += sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))
            exercises.update(_EXERCISE.findall(source))
    return words, code_lines, len(exercises)


def _without_your_time(source):
    return "\n\n".join(part for part in source.split("\n\n") if not part.startswith(YOUR_TIME))


def minutes(words, code_lines, exercises):
    raw = words / WORDS_PER_MINUTE + code_lines / CODE_LINES_PER_MINUTE + exercises * MINUTES_PER_EXERCISE
    return max(ROUND_TO_MINUTES, ROUND_TO_MINUTES * math.ceil(raw / ROUND_TO_MINUTES))


def estimate(path):
    words, code_lines, exercises = count(nbformat.read(path, as_version=4))
    return {"lesson": path.stem, "words": words, "code_lines": code_lines, "exercises": exercises,
            "minutes": minutes(words, code_lines, exercises)}


def your_time_paragraph(row):
    exercises = f"{row['exercises']} exercise{'s' if row['exercises'] != 1 else ''}"
    text = (f"{YOUR_TIME} about {row['minutes']} minutes of your own, besides the machine's. That is "
            f"{row['words']:,} words to read at {WORDS_PER_MINUTE} a minute, {row['code_lines']} lines of code "
            f"at {CODE_LINES_PER_MINUTE} a minute, and {exercises} at about {MINUTES_PER_EXERCISE} minutes each.")
    return textwrap.fill(text, width=118)


def stated_minutes(notebook):
    """The minutes the header's "Your time" paragraph states, or None."""
    for cell in notebook.cells[:2]:
        match = re.search(re.escape(YOUR_TIME) + r" about (\d+) minutes", cell.source)
        if match:
            return int(match.group(1))
    return None


def write_header(notebook, row):
    """Put the "Your time" paragraph right after the paragraph that gives the machine's time."""
    header = notebook.cells[0]
    parts = [part for part in header.source.split("\n\n") if not part.startswith(YOUR_TIME)]
    where = next((i for i, part in enumerate(parts) if MACHINE_TIME in " ".join(part.split())), None)
    if where is None:
        raise SystemExit(f"{row['lesson']}: its first cell has no paragraph saying how long '{MACHINE_TIME}'")
    parts.insert(where + 1, your_time_paragraph(row))
    header.source = "\n\n".join(parts)


def _machine(seconds):
    return f"{seconds} s" if seconds < 60 else f"{seconds / 60:.1f} min".replace(".0 ", " ")


def _hours(total_minutes):
    return f"{total_minutes // 60} h {total_minutes % 60:02d} min" if total_minutes >= 60 else f"{total_minutes} min"


def write_map(notebook, rows):
    """Fill in the map's path, machine-time and your-time columns; the lessons' other columns stay as written."""
    by_number = {row["lesson"][:2]: row for row in rows}
    for cell in notebook.cells:
        if cell.cell_type != "markdown" or MAP_BEGIN not in cell.source:
            continue
        before, rest = cell.source.split(MAP_BEGIN, 1)
        table, after = rest.split(MAP_END, 1)
        lines = []
        for line in table.strip().splitlines():
            columns = [column.strip() for column in line.strip().strip("|").split("|")]
            row = by_number.get(columns[0])
            if row is not None:
                number = columns[0]
                columns[-3:] = ["core" if number in CORE_PATH else "deeper",
                                _machine(MACHINE_SECONDS[number]), f"about {row['minutes']} min"]
                line = "| " + " | ".join(columns) + " |"
            lines.append(line)
        core = sum(row["minutes"] for row in rows if row["lesson"][:2] in CORE_PATH)
        rest_minutes = sum(row["minutes"] for row in rows) - core
        summary = (f"The core path takes about {_hours(core)} of your time, the deeper lessons about "
                   f"{_hours(rest_minutes)} more. Your time is reading and exercises; each header says how it was "
                   "counted. The machine's time is one full run on two cores.")
        lines = [line for line in lines if line.startswith("|")] + ["", textwrap.fill(summary, width=118)]
        cell.source = before + MAP_BEGIN + "\n\n" + "\n".join(lines) + "\n\n" + MAP_END + after
        return
    raise SystemExit(f"00: no cell holds the marker {MAP_BEGIN!r}")


def main(argv):
    write = "--write" in argv
    folders = [arg for arg in argv[1:] if arg != "--write"]
    folder = Path(folders[0] if folders else Path(__file__).resolve().parents[1] / "notebooks")
    paths = sorted(folder.glob("[0-9][0-9]-*.ipynb"))
    if not paths:
        raise SystemExit(f"no lessons in {folder}")
    rows = [estimate(path) for path in paths]
    for row in rows:
        print(f"{row['lesson']}: {row['words']} words, {row['code_lines']} code lines, "
              f"{row['exercises']} exercises: about {row['minutes']} min")
    if write:
        for path, row in zip(paths, rows):
            notebook = nbformat.read(path, as_version=4)
            write_header(notebook, row)
            nbformat.write(notebook, path)
        start = paths[0]
        notebook = nbformat.read(start, as_version=4)
        write_map(notebook, rows)
        nbformat.write(notebook, start)
    print(json.dumps({"lessons": rows, "total_minutes": sum(row["minutes"] for row in rows)}))


if __name__ == "__main__":
    main(sys.argv)
