"""Estimate a student's working time per lesson, and write it into each lesson's header and lesson 00's map.

Usage: python tools/lesson_time.py [--write] [NOTEBOOK_DIR]

It counts what a student reads and does in any lesson notebook (NN-*.ipynb): the prose, the code in its cells, the
source the lesson displays (show.source, show.server_source, a view's method_source: evaluated with the
notebook's own imports), the exercises (a coding exercise, one whose cell defines a function, at its own weight),
the unscored "**Predict first.**" prompts, the questions to answer in words, and a step in the student's own
browser (a heading that names "your browser").

Without --write it prints one line per lesson and a JSON line last. With --write it puts a "**Your time:**"
paragraph, with the machine's time on two cores and on one CPU, after each header's machine-time paragraph, and
fills in the map's table in 00. A lesson's machine time comes from its notebook's metadata (iolab.machine_seconds:
{"two_cores": s, "one_cpu": s}) where it has one, else from MACHINE_SECONDS below; a lesson with neither says
its machine time is not measured yet.
"""

import ast
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
# A coding exercise (its cell defines a function): read the task, write a function, run it, fix it once or twice.
MINUTES_PER_CODING_EXERCISE = 15
# An unscored "Predict first." prompt: stop, think, write a guess down before the run answers it.
MINUTES_PER_PREDICTION = 2
# A question to answer in words: a paragraph of one's own, from what the lesson showed.
MINUTES_PER_QUESTION_IN_WORDS = 5
# A step in the student's own browser: open the page, wait for it, read what it shows.
MINUTES_PER_BROWSER_STEP = 10
ROUND_TO_MINUTES = 5

YOUR_TIME = "**Your time:**"
MACHINE_TIME = "running every cell takes"
PREDICT_FIRST = "**Predict first.**"
QUESTIONS_IN_WORDS = "Questions to answer in words"
MAP_BEGIN = "<!-- lesson map: tools/lesson_time.py --write fills in the last three columns -->"
MAP_END = "<!-- end of the lesson map -->"

# What one full run takes the machine, from the full runs of benchmarks/regress_loop.py (two cores: the medians of
# nine runs; one CPU: `--taskset 0`, or the header's own statement that it takes about as long). 11, 12 and 13 on
# one CPU, and 11 and 13 on two cores, are single runs on a busy shared machine (papermill's kernel start included):
# `regress_loop.py --runs 1 --lessons 11,12,13 --taskset 0`. A lesson's notebook metadata
# (iolab.machine_seconds) overrides these; a new lesson adds its figures there.
MACHINE_SECONDS = {
    "00": 26, "01": 266, "02": 271, "03": 15, "04": 10, "05": 29,
    "06": 113, "07": 84, "08": 145, "09": 147, "10": 127, "11": 74, "12": 99, "13": 70, "14": 47, "15": 50,
}
ONE_CPU_SECONDS = {
    "00": 26, "01": 266, "02": 271, "03": 15, "04": 12, "05": 35,
    "06": 113, "07": 84, "08": 145, "09": 147, "10": 127, "11": 97, "12": 344, "13": 86,
}
# The path through the lab's question (why one async process serves 40 waits at once): the rest go deeper.
CORE_PATH = {"00", "01", "02", "03", "05", "06"}
SOURCE_SHOWN = re.compile(r"source$")  # show.source, show.server_source, view.method_source

_EXERCISE = re.compile(r"\bq(\d+)\.check\(")
_WORD = re.compile(r"[^\s|#*`\-]+")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SOLUTION = re.compile(r"^\s*### BEGIN SOLUTION.*?^\s*### END SOLUTION[^\n]*$", re.DOTALL | re.MULTILINE)


def count(notebook):
    """(words of prose, lines of code, exercises) a student reads and does in one notebook."""
    found = tally(notebook)
    return found["words"], found["code_lines"], found["exercises"]


def tally(notebook, shown=None):
    """Everything a student reads and does in one notebook, counted: words, code_lines, shown_lines (source the
    lesson displays, from `shown(cell_source)`, none without it), exercises, coding_exercises, predictions,
    questions_in_words, browser_steps."""
    found = dict.fromkeys(("words", "code_lines", "shown_lines", "exercises", "coding_exercises", "predictions",
                           "questions_in_words", "browser_steps"), 0)
    exercises, coding = set(), set()
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            text = _HTML_COMMENT.sub("", _without_your_time(cell.source))
            found["words"] += len(_WORD.findall(text))
            found["predictions"] += text.count(PREDICT_FIRST)
            if QUESTIONS_IN_WORDS in text:
                found["questions_in_words"] += len(re.findall(r"^\d+\. ", text, re.MULTILINE))
            found["browser_steps"] += sum(1 for line in text.splitlines()
                                          if line.startswith("#") and "your browser" in line.lower())
        elif cell.cell_type == "code":
            source = _SOLUTION.sub("", cell.source)  # a student's copy has no solutions to read
            found["code_lines"] += sum(1 for line in source.splitlines()
                                       if line.strip() and not line.strip().startswith("#"))
            numbers = set(_EXERCISE.findall(source))
            exercises |= numbers
            if numbers and re.search(r"^\s*(async\s+)?def ", source, re.MULTILINE):
                coding |= numbers
            if shown is not None:
                found["shown_lines"] += shown(cell.source)
    found["coding_exercises"] = len(coding)
    found["exercises"] = len(exercises) - len(coding)
    return found


def source_shown(notebook, lesson):
    """A function that counts the lines of source a code cell displays: each call of a `...source(...)` helper,
    evaluated with the notebook's own imports (its cells' import statements, run once here)."""
    namespace = {}
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for node in _parsed(cell.source).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                exec(compile(ast.Module([node], []), lesson, "exec"), namespace)  # noqa: S102  (the lesson's imports)

    def shown(source):
        lines = 0
        for node in ast.walk(_parsed(source)):
            name = getattr(getattr(node, "func", None), "attr", "") if isinstance(node, ast.Call) else ""
            if SOURCE_SHOWN.search(name):
                try:
                    displayed = eval(compile(ast.Expression(node), lesson, "eval"), namespace)  # noqa: S307
                except Exception as error:  # noqa: BLE001  (any failure is the notebook's, named here)
                    raise SystemExit(f"{lesson}: cannot count the source {ast.unparse(node)} shows: {error}") from error
                text = getattr(displayed, "data", None) or str(displayed)
                lines += sum(1 for line in text.splitlines() if line.strip())
        return lines

    return shown


def _parsed(source):
    """A code cell's syntax tree; a cell with IPython's own syntax (%magic, top-level await is fine) counts as empty."""
    try:
        return ast.parse(source)
    except SyntaxError:
        return ast.Module([], [])


def _without_your_time(source):
    return "\n\n".join(part for part in source.split("\n\n") if not part.startswith(YOUR_TIME))


def minutes(found):
    """The student's minutes for a tally(), rounded up to a whole ROUND_TO_MINUTES."""
    raw = (found["words"] / WORDS_PER_MINUTE + (found["code_lines"] + found["shown_lines"]) / CODE_LINES_PER_MINUTE
           + found["exercises"] * MINUTES_PER_EXERCISE + found["coding_exercises"] * MINUTES_PER_CODING_EXERCISE
           + found["predictions"] * MINUTES_PER_PREDICTION
           + found["questions_in_words"] * MINUTES_PER_QUESTION_IN_WORDS
           + found["browser_steps"] * MINUTES_PER_BROWSER_STEP)
    return max(ROUND_TO_MINUTES, ROUND_TO_MINUTES * math.ceil(raw / ROUND_TO_MINUTES))


def machine_seconds(notebook, number):
    """(two cores, one CPU) in seconds for one full run, or None each where nobody measured it."""
    stated = notebook.metadata.get("iolab", {}).get("machine_seconds", {})
    return stated.get("two_cores", MACHINE_SECONDS.get(number)), stated.get("one_cpu", ONE_CPU_SECONDS.get(number))


def estimate(path):
    notebook = nbformat.read(path, as_version=4)
    found = tally(notebook, source_shown(notebook, path.name))
    two, one = machine_seconds(notebook, path.stem[:2])
    return {"lesson": path.stem, **found, "minutes": minutes(found), "two_cores_s": two, "one_cpu_s": one}


def _plural(count, one, many):
    return f"{count} {one if count == 1 else many}"


def your_time_paragraph(row):
    code = row["code_lines"] + row["shown_lines"]
    shown = f" ({row['shown_lines']} shown source)" if row["shown_lines"] else ""
    parts = [f"{row['words']:,} words at {WORDS_PER_MINUTE}/min",
             f"{code} lines of code{shown} at {CODE_LINES_PER_MINUTE}/min"]
    for key, one, many, each in (
            ("exercises", "exercise", "exercises", MINUTES_PER_EXERCISE),
            ("coding_exercises", "coding exercise", "coding exercises", MINUTES_PER_CODING_EXERCISE),
            ("predictions", "prediction", "predictions", MINUTES_PER_PREDICTION),
            ("questions_in_words", "question in words", "questions in words", MINUTES_PER_QUESTION_IN_WORDS),
            ("browser_steps", "browser step", "browser steps", MINUTES_PER_BROWSER_STEP)):
        if row[key]:
            parts.append(f"{_plural(row[key], one, many)} at {each} min")
    text = f"{YOUR_TIME} about {row['minutes']} minutes: {', '.join(parts)}. {machine_sentence(row)}"
    return textwrap.fill(text, width=118)


def machine_sentence(row):
    two, one = row["two_cores_s"], row["one_cpu_s"]
    if two is None:
        return "The machine's time is not measured yet."
    return f"The machine: {_machine(two)} on two cores, " + (
        f"{_machine(one)} on one CPU." if one is not None else "one CPU not measured yet.")


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
                two = row["two_cores_s"]
                columns[-3:] = ["core" if number in CORE_PATH else "deeper",
                                _machine(two) if two is not None else "not measured", f"about {row['minutes']} min"]
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


def rewrite(path, change):
    """Apply `change` to the notebook at `path`, then write back only the markdown cells whose text it changed:
    the rest of the file stays byte for byte as its authors wrote it (nbformat would add ids, reorder keys)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    notebook = nbformat.read(path, as_version=4)
    change(notebook)
    for cell, changed in zip(raw["cells"], notebook.cells):
        if cell["cell_type"] == "markdown" and "".join(cell["source"]) != changed.source:
            cell["source"] = changed.source.splitlines(keepends=True)
    path.write_text(json.dumps(raw, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv):
    write = "--write" in argv
    folders = [arg for arg in argv[1:] if arg != "--write"]
    folder = Path(folders[0] if folders else Path(__file__).resolve().parents[1] / "notebooks")
    paths = sorted(folder.glob("[0-9][0-9]-*.ipynb"))
    if not paths:
        raise SystemExit(f"no lessons in {folder}")
    rows = [estimate(path) for path in paths]
    for row in rows:
        print(f"{row['lesson']}: {row['words']} words, {row['code_lines']} + {row['shown_lines']} code lines, "
              f"{row['exercises']} + {row['coding_exercises']} exercises, {row['predictions']} predictions,"
              f" {row['questions_in_words']} questions in words, {row['browser_steps']} browser steps:"
              f" about {row['minutes']} min")
    if write:
        for path, row in zip(paths, rows):
            rewrite(path, lambda notebook, row=row: write_header(notebook, row))
        rewrite(paths[0], lambda notebook: write_map(notebook, rows))
    print(json.dumps({"lessons": rows, "total_minutes": sum(row["minutes"] for row in rows)}))


if __name__ == "__main__":
    main(sys.argv)
