"""Each lesson's header promises the student's working time that tools/lesson_time.py counts, and 00's map agrees."""

import inspect
import sys
from pathlib import Path

import nbformat
import pytest

from iolab import tables

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
    assert lesson_time.machine_sentence(lesson_time.estimate(path)) in " ".join(notebook.cells[0].source.split()), (
        f"{path.name}: its header does not give the machine's times the tool has; run tools/lesson_time.py --write")
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


def test_the_count_weighs_what_a_student_does_besides_reading():
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 99 · Title\n\n**Predict first.** How long?\n\n## 2. Your browser joins"),
        nbformat.v4.new_code_cell("from iolab import show\nfrom iolab import tables\nshow.source(tables.markdown)"),
        nbformat.v4.new_code_cell("async def yours(n):\n    return None\n\n\nex.q1.check(await yours(3))"),
        nbformat.v4.new_code_cell("ex.q2.check(answer_q2)"),
        nbformat.v4.new_markdown_cell("## Questions to answer in words\n\n1. Why?\n2. When?\n3. How?"),
    ])
    found = lesson_time.tally(notebook, lesson_time.source_shown(notebook, "99-test.ipynb"))
    assert (found["predictions"], found["browser_steps"], found["questions_in_words"]) == (1, 1, 3)
    assert (found["exercises"], found["coding_exercises"]) == (1, 1)  # q1 defines a function: a coding exercise
    shown = inspect.getsource(tables.markdown).splitlines()
    assert found["shown_lines"] == sum(1 for line in shown if line.strip()) > 0  # what the cell displays
    bare = dict(found, predictions=0, browser_steps=0, questions_in_words=0, coding_exercises=0, shown_lines=0)
    assert lesson_time.minutes(found) >= lesson_time.minutes(bare) + 2 + 10 + 15 + 15


def test_a_lesson_the_tool_has_never_seen_gets_a_header_and_says_what_is_not_measured(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# 98 · New\n\n**Time:** running every cell takes about a minute.\n\nText.")])
    path = tmp_path / "98-new.ipynb"
    nbformat.write(notebook, path)
    row = lesson_time.estimate(path)
    assert row["two_cores_s"] is None and "not measured yet" in lesson_time.machine_sentence(row)
    notebook.metadata["iolab"] = {"machine_seconds": {"two_cores": 61, "one_cpu": 75}}
    nbformat.write(notebook, path)
    row = lesson_time.estimate(path)
    lesson_time.write_header(notebook, row)
    assert "1 min on two cores, 1.2 min on one CPU" in " ".join(notebook.cells[0].source.split())
