"""Every lesson runs to the end under papermill in quick mode, its own assertions hold and its checkers accept the solutions."""

import ast
import contextlib
import io
import json
import re
import tokenize
from pathlib import Path

import nbformat
import papermill
import pytest
import student_copies
from nbclient.exceptions import CellTimeoutError
from tool_paths import TOOLS_OFF_IN_BROWSER

from helpers import TOOLS_OFF, without_optional_tools

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO / "notebooks"
# The lessons: notebooks/glossary.ipynb runs nothing and is no lesson.
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb"))

EXECUTED_DIR = REPO / "build" / "notebooks"
RESULTS_DIR = REPO / "build" / "results"
# A lesson in quick mode should take ~25 s; these limits only stop a hang.
NOTEBOOK_TIMEOUT_S = 240
CELL_TIMEOUT_S = 200

# A lesson with solutions to fill in runs as a student's copy with the answers typed in (in the
# browser, test_browser.py, or under papermill, test_make_student.py): the same cells as
# solutions=True, so running each here too would run it twice (about 3 of CI's minutes). Here run
# the lessons without solutions, and one with, which keeps the instructor's own path
# (solutions=True, solution() shown) run end to end; one more runs with solutions=False.
# Every run here is without the optional programs (helpers.TOOLS_OFF), so the not-attempted lessons call programs
# and run with them in the browser: CI takes their path without the programs here (tool_paths.py). Without its
# program, each skips its runs with the reason, so its run here is a few seconds.
WITH_SOLUTIONS = student_copies.WITH_SOLUTIONS
INSTRUCTOR_LESSON = "04-io-models"  # a short one: it runs in the browser too
# Lesson 14 runs in the browser with its programs, as an ordinary user (the link in a user namespace); without them
# it has no link and runs its loopback section alone, a few seconds.
NOT_ATTEMPTED_LESSONS = ("10-slow-backend", "13-a-real-database", "14-the-network")
INSTRUCTOR_RUNS = [path for path in NOTEBOOKS if path not in WITH_SOLUTIONS or path.stem == INSTRUCTOR_LESSON]


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
@pytest.mark.parametrize("stem", NOT_ATTEMPTED_LESSONS)
def test_a_lesson_run_without_solutions_reports_its_exercises_not_attempted(stem):
    path = NOTEBOOK_DIR / f"{stem}.ipynb"
    assert mentions_exercises(path), f"{path.name} has no exercises to leave unattempted"
    results = run_notebook(path, f"{path.stem}.unsolved", solutions=False)
    exercises = results.get("exercises")
    assert isinstance(exercises, dict) and exercises, f"{path.name}: results JSON has no exercises dict"
    attempted = {name: status for name, status in exercises.items() if status != "not attempted"}
    assert not attempted, f"{path.name}: with solutions=False these exercises were not 'not attempted': {attempted}"


# What runs a program: its name (as a string or a name), a core module that runs one, a server that needs one.
PROGRAM_MODULES = {"benchtools", "listening", "syscalls", "wrk_lua"}


def words_and_strings(source):
    """The names and the string literals of Python source (comments and the text of prose left out)."""
    found = set()
    with contextlib.suppress(tokenize.TokenError, SyntaxError, IndentationError):
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME:
                found.add(token.string)
            elif token.type == tokenize.STRING:
                with contextlib.suppress(ValueError, SyntaxError):
                    found.add(str(ast.literal_eval(token.string)))
    return found


def programs_a_lesson_may_call(path):
    """What in a lesson's notebook and its lib/iolab/lessons packages runs an optional program (empty: none)."""
    from iolab import environment, registry

    code = [cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
    code = ["\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))) for source in code]
    for topic in set(re.findall(r"iolab\.lessons\.(\w+)", "\n".join(code))):
        code += [module.read_text() for module in sorted((REPO / "lib" / "iolab" / "lessons" / topic).glob("*.py"))]
    needing = {name for name in registry.names() if registry.get(name).needs_programs}
    found = set().union(*(words_and_strings(source) for source in code))
    return found & (set(environment.DEBIAN_PACKAGES) | PROGRAM_MODULES | needing)


def test_ci_runs_every_lesson_with_the_optional_programs_and_without():
    """CI has the programs and Chromium: a lesson runs once in the browser, with them unless tool_paths.py says
    without, and the papermill runs here and in test_make_student.py are all without them. A lesson that calls a
    program needs both paths run: without (in the browser or here), and with (in the browser or by the tests
    tool_paths.py names)."""
    from test_make_student import WRONG_ANSWERS_IN

    stems = {path.stem for path in NOTEBOOKS}
    assert set(TOOLS_OFF_IN_BROWSER) | {INSTRUCTOR_LESSON, *NOT_ATTEMPTED_LESSONS} <= stems, "a lesson named here is gone"
    for stem, tests in TOOLS_OFF_IN_BROWSER.items():
        missing = [test for test in tests if not (REPO / test).is_file()]
        assert not missing, f"{stem}: tool_paths.py names tests that do not exist: {missing}"
    papermill_without = {path.stem for path in [*INSTRUCTOR_RUNS, *WRONG_ANSWERS_IN]} | set(NOT_ATTEMPTED_LESSONS)
    calls = {path.stem: programs_a_lesson_may_call(path) for path in NOTEBOOKS}
    # The scan still finds what it should: lesson 02 runs ab, 08 strace, 10 needs redis-server.
    assert {"ab"} <= calls["02-sync-vs-async"] and "syscalls" in calls["08-pipelining"], calls
    assert any("redis" in name for name in calls["10-slow-backend"]), calls
    without = {stem for stem, programs in calls.items()
               if programs and stem not in TOOLS_OFF_IN_BROWSER and stem not in papermill_without}
    assert not without, f"never run without the optional programs in CI: {sorted(without)} (they call {calls})"
