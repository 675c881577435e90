"""Every lesson runs to the end under papermill in quick mode, its own assertions hold and its checkers accept the solutions."""

import contextlib
import json
from pathlib import Path

import nbformat
import papermill
import pytest
import student_copies
from nbclient.exceptions import CellTimeoutError

from helpers import TOOLS_OFF, without_optional_tools

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

EXECUTED_DIR = REPO / "build" / "notebooks"
RESULTS_DIR = REPO / "build" / "results"
# A lesson in quick mode should take ~25 s; these limits only stop a hang.
NOTEBOOK_TIMEOUT_S = 240
CELL_TIMEOUT_S = 200

# A lesson with solutions to fill in runs as a student's copy with the answers typed in (in the
# browser, test_browser.py, or under papermill, test_make_student.py): the same cells as
# solutions=True, so running each here too would run it twice (about 3 of CI's minutes). Here run
# the lessons without solutions, and the first with, which keeps the instructor's own path
# (solutions=True, solution() shown) run end to end.
WITH_SOLUTIONS = student_copies.WITH_SOLUTIONS
INSTRUCTOR_RUNS = [path for path in NOTEBOOKS if path not in WITH_SOLUTIONS or path == WITH_SOLUTIONS[0]]


def run_notebook(path, name, **parameters):
    """Execute `path` into build/notebooks/<name>.ipynb and return its results JSON."""
    EXECUTED_DIR.mkdir(parents=True, exist_ok=True)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    results_path = RESULTS_DIR / f"{name}.json"
    results_path.unlink(missing_ok=True)  # a stale file from an earlier run must not pass for this one
    executed = EXECUTED_DIR / f"{name}.ipynb"
    failure = None
    try:
        # A missing optional tool must never stop a lesson: papermill runs them here without (helpers.TOOLS_OFF).
        with without_optional_tools() if TOOLS_OFF else contextlib.nullcontext():
            papermill.execute_notebook(
                str(path),
                str(executed),
                parameters={"quick": True, "results_path": str(results_path), **parameters},
                kernel_name="python3",
                cwd=str(NOTEBOOK_DIR),
                execution_timeout=CELL_TIMEOUT_S,
                progress_bar=False,
            )
    except papermill.PapermillExecutionError as error:
        failure = f"In [{error.exec_count}] raised {error.ename}: {error.evalue}\n{error}"
    except CellTimeoutError as error:
        failure = f"a cell ran longer than {CELL_TIMEOUT_S} s\n{error}"
    if failure:  # outside the except block, so the report is not buried under chained tracebacks
        pytest.fail(f"{path.name}: {failure}\nexecuted copy: {executed.relative_to(REPO)}", pytrace=False)
    assert results_path.exists(), f"{path.name} wrote no results JSON to {results_path} (results_path was set)"
    return json.loads(results_path.read_text())


def mentions_exercises(path):
    notebook = nbformat.read(path, as_version=4)
    return any("exercises as ex" in cell.source for cell in notebook.cells if cell.cell_type == "code")


@pytest.mark.notebook
@pytest.mark.timeout(NOTEBOOK_TIMEOUT_S)
@pytest.mark.parametrize("path", INSTRUCTOR_RUNS, ids=[p.stem for p in INSTRUCTOR_RUNS])
def test_notebook_runs_with_solutions(path):
    results = run_notebook(path, path.stem, solutions=True)
    exercises = results.get("exercises")
    if isinstance(exercises, dict):
        skipped = results.get("skipped_exercises") or {}  # its experiment could not run here: it says why
        not_correct = {name: status for name, status in exercises.items()
                       if status != "correct" and not (name in skipped and status == "not attempted")}
        assert not not_correct, f"{path.name}: with solutions=True these exercises are not correct: {not_correct}"


def test_every_lesson_runs_as_the_instructors_copy_or_as_a_filled_in_students_copy():
    from test_make_student import STUDENT_RUNS

    filled_in_right = {path for path, answers in STUDENT_RUNS if answers == "right"}
    assert set(NOTEBOOKS) == set(INSTRUCTOR_RUNS) | filled_in_right


@pytest.mark.notebook
@pytest.mark.timeout(NOTEBOOK_TIMEOUT_S)
def test_first_notebook_with_exercises_reports_not_attempted_without_solutions():
    with_exercises = [p for p in NOTEBOOKS if mentions_exercises(p)]
    if not with_exercises:
        pytest.skip("no notebook in notebooks/ imports its exercises yet")
    path = with_exercises[0]
    results = run_notebook(path, f"{path.stem}.unsolved", solutions=False)
    exercises = results.get("exercises")
    assert isinstance(exercises, dict) and exercises, f"{path.name}: results JSON has no exercises dict"
    attempted = {name: status for name, status in exercises.items() if status != "not attempted"}
    assert not attempted, f"{path.name}: with solutions=False these exercises were not 'not attempted': {attempted}"
