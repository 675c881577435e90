"""Student copies filled in as a student would.

(right, wrong or not at all): written once here, run by papermill or in the browser.
"""

import re
import shutil
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))  # the lessons, not the glossary
sys.path.insert(0, str(REPO / "tools"))
import make_student  # noqa: E402  (tools/ is not a package)

MARKED_LINE = re.compile(rf"^(\s*)([A-Za-z_][A-Za-z_0-9]*) = None  {re.escape(make_student.MARK)}")
# Put before each wrong answer: another of the choices for a choice question, a far-off number otherwise.
WRONG_HELPER = (
    "_wrong = lambda right, exercise=None: (next(c for c in exercise.choices if c != exercise.correct)"
    " if getattr(exercise, 'choices', None) else right * 3 + 1 if isinstance(right, (int, float)) else f'not {right!r}')"
)
# What every exercise of a copy must report, for each way of answering it.
EXPECTED_STATUS = {"right": "correct", "wrong": "incorrect", "missing": "not attempted"}
# The parameter cell's default, which papermill overrides with a cell of its own; a browser has no papermill.
RESULTS_LINE = re.compile(r"^results_path = None\b.*$", re.MULTILINE)


def has_solutions(path):
    return any(make_student.BEGIN in cell.source for cell in nbformat.read(path, as_version=4).cells)


WITH_SOLUTIONS = [path for path in NOTEBOOKS if has_solutions(path)]


def fill_in(student_source, instructor_source, wrong=False):
    """The student's cell with each marked line replaced by the instructor's solution (then spoilt, if `wrong`)."""
    blocks = iter(make_student.solution_blocks(instructor_source))
    out, still_marked = [], set()
    for line in student_source.splitlines():
        match = MARKED_LINE.match(line)
        if not match:
            out.append(line)
            continue
        indent, name = match.groups()
        if name in still_marked:  # a block that set several names: filled in at its first one
            still_marked.discard(name)
            continue
        names, solution = next(blocks)
        assert name in names, f"marked line {line!r} does not match the next solution block, which sets {names}"
        still_marked = set(names) - {name}
        out += [indent + text for text in solution]
        if wrong:
            out.append(indent + WRONG_HELPER)
            for each in names:
                checked_by = re.search(rf"([A-Za-z_][\w.]*)\.check\(\s*{each}\b", student_source)
                exercise = checked_by.group(1) if checked_by else "None"
                out.append(f"{indent}{each} = _wrong({each}, {exercise})")
    assert next(blocks, None) is None, "a solution block has no marked line in the student copy"
    return "\n".join(out)


def write_student_copy(instructor_path, out_dir):
    """tools/make_student.py's copy of one lesson, written into `out_dir`; returns its path."""
    notebook = make_student.student_notebook(nbformat.read(instructor_path, as_version=4), instructor_path.name)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / instructor_path.name
    nbformat.write(notebook, path)
    bring_figures(out_dir)
    return path


def bring_figures(out_dir):
    """The pictures the lessons' markdown shows (notebooks/figures/), beside a copy, so that it shows them too."""
    figures = REPO / "notebooks" / make_student.FIGURES
    if figures.is_dir():
        shutil.copytree(figures, out_dir / make_student.FIGURES, dirs_exist_ok=True)


def write_filled(instructor_path, student_path, out_path, answers="right", results_path=None):
    """The student copy with `answers` ("right", "wrong" or "missing": as handed out) typed in, written to `out_path`.

    With `results_path`, the parameter cell names it, as a student or papermill may set it.
    """
    instructor = nbformat.read(instructor_path, as_version=4)
    student = nbformat.read(student_path, as_version=4)
    for before, after in zip(instructor.cells, student.cells):
        if after.cell_type == "code" and make_student.BEGIN in before.source and answers != "missing":
            after.source = fill_in(after.source, before.source, wrong=answers == "wrong")
        if results_path and "parameters" in after.metadata.get("tags", []):
            after.source, found = RESULTS_LINE.subn(f"results_path = {str(results_path)!r}", after.source)
            assert found == 1, f"{student_path.name}: its parameter cell has no `results_path = None` line"
    nbformat.write(student, out_path)
    bring_figures(out_path.parent)
    return out_path


def unexpected_statuses(results, answers):
    """{exercise: status} of the exercises whose status is not what `answers` should give; a message if there are none."""
    exercises = results.get("exercises")
    if not isinstance(exercises, dict) or not exercises:
        return {"(results JSON)": "has no exercises"}
    # An exercise whose experiment could not run here (an optional tool missing) is "not attempted", with the reason.
    skipped = results.get("skipped_exercises") or {}
    return {name: status for name, status in exercises.items()
            if status != EXPECTED_STATUS[answers] and not (name in skipped and status == "not attempted")}
