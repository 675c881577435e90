"""Each lesson's header promises the student's working time that tools/lesson_time.py counts, and 00's map agrees."""

import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import lesson_time  # noqa: E402  (tools/ is not a package)

LESSONS = sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))
# The header is written from the count; prose edited since may move it a little, not a whole step of rounding.
TOLERANCE_MINUTES = lesson_time.ROUND_TO_MINUTES


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_header_states_the_counted_time(path):
    notebook = nbformat.read(path, as_version=4)
    stated = lesson_time.stated_minutes(notebook)
    counted = lesson_time.estimate(path)["minutes"]
    assert stated is not None, f"{path.name}: no '{lesson_time.YOUR_TIME}' in its header; run tools/lesson_time.py --write"
    assert abs(stated - counted) <= TOLERANCE_MINUTES, (
        f"{path.name}: the header promises {stated} min of the student's time, the count now gives {counted}; "
        "run tools/lesson_time.py --write")


def test_the_map_in_00_gives_every_lesson_both_times_and_its_path():
    notebook = nbformat.read(LESSONS[0], as_version=4)
    cell = next(c.source for c in notebook.cells if lesson_time.MAP_BEGIN in c.source)
    table = cell.split(lesson_time.MAP_BEGIN, 1)[1].split(lesson_time.MAP_END, 1)[0]
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    for path in LESSONS:
        number = path.stem[:2]
        assert number in rows, f"00's map has no row for {path.name}"
        assert number in lesson_time.MACHINE_SECONDS, f"tools/lesson_time.py has no machine time for {path.name}"
        columns = [column.strip() for column in rows[number].strip().strip("|").split("|")]
        assert columns[-3] in ("core", "deeper") and columns[-1].startswith("about ")
        assert f"({path.name})" in rows[number], f"00's map links {number} elsewhere than {path.name}"


def test_the_count_leaves_solutions_out_and_counts_each_exercise_once():
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 99 · Title\n\nSix words of prose stand here."),
        nbformat.v4.new_code_cell("answer_q1 = None\nif solutions:\n    ### BEGIN SOLUTION\n    answer_q1 = 3\n"
                                  "    ### END SOLUTION\nex.q1.check(answer_q1)\n# a comment\nex.q1.check(answer_q1)"),
    ])
    words, code_lines, exercises = lesson_time.count(notebook)
    assert (words, exercises) == (9, 1)  # "99", "·", "Title" and the six words
    assert code_lines == 4  # the None line, the if, two checks: not the solution, not the comment
