"""tools/make_student.py on the real lessons.

No solution left, every cell still compiles, solutions disabled.
"""

import ast
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill
import pytest
from IPython.core.inputtransformer2 import TransformerManager

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "make_student.py"
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))  # the lessons; the glossary has a test below

sys.path.insert(0, str(TOOL.parent))
import student_copies  # noqa: E402

import make_student  # noqa: E402  (tools/ is not a package)
from helpers import TOOLS_OFF, without_optional_tools  # noqa: E402


def solution_lines(source):
    """The non-blank lines inside BEGIN/END SOLUTION blocks."""
    lines, inside = [], False
    for line in source.splitlines():
        if line.strip().startswith(make_student.BEGIN):
            inside = True
        elif line.strip().startswith(make_student.END):
            inside = False
        elif inside and line.strip():
            lines.append(line.strip())
    return lines


def compiles(source):
    """Compile a cell as IPython would run it: magics expanded, top-level await allowed."""
    python = TransformerManager().transform_cell(source)
    compile(python, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    subprocess.run([sys.executable, str(TOOL), str(REPO / "notebooks"), str(out)], check=True, capture_output=True, timeout=60)
    return out


def test_some_lesson_has_solutions_to_remove():
    assert any(
        solution_lines(cell.source)
        for path in NOTEBOOKS
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "code"
    ), "no notebook has a ### BEGIN SOLUTION block, so this test would prove nothing"


def test_a_page_without_code_and_the_figures_come_along_unchanged(student_dir):
    glossary = REPO / "notebooks" / "glossary.ipynb"
    assert nbformat.read(student_dir / glossary.name, as_version=4) == nbformat.read(glossary, as_version=4)
    figures = sorted((REPO / "notebooks" / make_student.FIGURES).iterdir())
    assert figures, "notebooks/figures/ is empty: this test would prove nothing"
    for figure in figures:
        assert (student_dir / make_student.FIGURES / figure.name).read_bytes() == figure.read_bytes()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_student_copy(path, student_dir):
    original = nbformat.read(path, as_version=4)
    copy = nbformat.read(student_dir / path.name, as_version=4)
    assert len(copy.cells) == len(original.cells)
    code_cells = [(a, b) for a, b in zip(original.cells, copy.cells) if a.cell_type == "code"]
    for index, (before, after) in enumerate(code_cells):
        assert make_student.BEGIN not in after.source and make_student.END not in after.source
        remaining = set(line.strip() for line in after.source.splitlines())
        for line in solution_lines(before.source):
            assert line not in remaining, f"{path.name} code cell {index}: solution line {line!r} is still there"
        assert after.outputs == [] and after.execution_count is None
        assert after.metadata.get("tags") == before.metadata.get("tags"), "tags (e.g. parameters) must survive"
        try:
            compiles(after.source)
        except SyntaxError as error:
            pytest.fail(f"{path.name} code cell {index} no longer compiles: {error}\n{after.source}")
    assert code_cells[0][1].source.startswith(make_student.DISABLE_LINE), "the setup cell must disable solutions"


def test_the_inserted_line_disables_solutions():
    script = make_student.DISABLE_LINE + "\nfrom iolab import checks\nassert checks.solutions_disabled()\n"
    env_free = {k: v for k, v in os.environ.items() if k != "IOLAB_SOLUTIONS_DISABLED"}
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60, env=env_free)


def test_answer_blocks_become_placeholders_that_run():
    source = (
        "answer_q1 = None  # req/s\n"
        "if solutions:\n"
        "    ### BEGIN SOLUTION\n"
        "    answer_q1 = 25 / 0.5\n"
        "    answer_q1 = round(answer_q1)\n"
        "    ### END SOLUTION\n"
        "ex.q1.check(answer_q1)"
    )
    # The `if solutions:` goes: the line the student fills in must run with solutions False.
    assert make_student.strip_solutions(source) == (
        "answer_q1 = None  # your answer here: req/s\n"
        "ex.q1.check(answer_q1)"
    )
    assert make_student.solution_blocks(source) == [(["answer_q1"], ["answer_q1 = 25 / 0.5", "answer_q1 = round(answer_q1)"])]


def test_the_student_line_runs_where_the_solution_ran():
    source = (
        "def ask():\n"
        "    answer = None\n"
        "    if solutions:\n"
        "        ### BEGIN SOLUTION\n"
        "        answer = 'right'\n"
        "        ### END SOLUTION\n"
        "    return answer\n"
    )
    stripped = make_student.strip_solutions(source)
    assert stripped == "def ask():\n    answer = None  # your answer here\n    return answer"
    filled = stripped.replace("answer = None  # your answer here", "answer = 'mine'")
    namespace = {"solutions": False}
    exec(filled, namespace)
    assert namespace["ask"]() == "mine"


@pytest.mark.parametrize(
    "source",
    [
        "if solutions:\n    other = 1\n    ### BEGIN SOLUTION\n    x = 2\n    ### END SOLUTION\n",
        "if solutions:\n    ### BEGIN SOLUTION\n    x = 2\n    ### END SOLUTION\n    other = 1\n",
        "if solutions:\n    ### BEGIN SOLUTION\n    x = 2\n    ### END SOLUTION\nelse:\n    x = 3\n",
    ],
    ids=["line-before", "line-after", "else"],
)
def test_an_if_solutions_with_more_in_it_is_refused(source):
    with pytest.raises(make_student.MarkerError, match="keep the student's answer from running"):
        make_student.strip_solutions(source)


@pytest.mark.parametrize(
    "source, opener",
    [
        ("if solutions and quick:\n    ### BEGIN SOLUTION\n    x = 2\n    ### END SOLUTION\n", "if solutions and quick:"),
        ("if quick and solutions:  # both\n    ### BEGIN SOLUTION\n    x = 2\n    ### END SOLUTION\n",
         "if quick and solutions:"),
        ("if quick:\n    pass\nelif solutions:\n    ### BEGIN SOLUTION\n    x = 2\n    ### END SOLUTION\n", "elif solutions:"),
        ("if solutions:\n    for run in runs:\n        ### BEGIN SOLUTION\n        x = run\n        ### END SOLUTION\n",
         "if solutions:"),
    ],
    ids=["and-after", "and-before", "elif", "outer-if"],
)
def test_a_solution_under_a_condition_the_copy_cannot_blank_is_refused(source, opener):
    # A copy would keep the condition and put the student's line under it, where it never runs.
    with pytest.raises(make_student.MarkerError, match="never run") as refused:
        make_student.strip_solutions(source, "05-event-loop-from-scratch.ipynb cell 43")
    assert str(refused.value).startswith("05-event-loop-from-scratch.ipynb cell 43, line ")
    assert f"`{opener}`" in str(refused.value)


def test_the_tool_names_the_notebook_and_cell_it_refuses(tmp_path):
    lessons, out = tmp_path / "lessons", tmp_path / "out"
    lessons.mkdir()
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import iolab"),
        nbformat.v4.new_markdown_cell("**q1.**"),
        nbformat.v4.new_code_cell("answer_q1 = None\nif solutions and quick:\n    ### BEGIN SOLUTION\n"
                                  "    answer_q1 = 1\n    ### END SOLUTION\nex.q1.check(answer_q1)"),
    ])
    nbformat.write(notebook, lessons / "99-example.ipynb")
    result = subprocess.run([sys.executable, str(TOOL), str(lessons), str(out)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0
    assert "99-example.ipynb cell 2, line 5" in result.stderr and "`if solutions and quick:`" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_name_that_only_contains_solutions_is_no_guard():
    source = "for answer in my_solutions:\n    ### BEGIN SOLUTION\n    x = answer\n    ### END SOLUTION\n"
    assert make_student.strip_solutions(source) == "for answer in my_solutions:\n    x = None  # your answer here"


def test_other_blocks_become_pass():
    source = "for x in range(3):\n    ### BEGIN SOLUTION\n    print(x)\n    ### END SOLUTION\n"
    stripped = make_student.strip_solutions(source)
    assert stripped == "for x in range(3):\n    pass  # your answer here"
    compile(stripped, "<cell>", "exec")


@pytest.mark.parametrize(
    "source, message",
    [
        ("### BEGIN SOLUTION\nx = 1\n", "never closed"),
        ("x = 1\n### END SOLUTION\n", "without"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n", "inside another"),
    ],
)
def test_broken_markers_are_refused(source, message):
    with pytest.raises(make_student.MarkerError, match=message):
        make_student.strip_solutions(source)


def _lessons(folder, *sources):
    """Write one notebook a source into `folder` (setup cell, then the source); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, source in enumerate(sources):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import iolab"),
                                                   nbformat.v4.new_code_cell(source)])
        paths.append(folder / f"{number:02d}-example.ipynb")
        nbformat.write(notebook, paths[-1])
    return paths


ANSWERED = "answer_q1 = None\nif solutions:\n    ### BEGIN SOLUTION\n    answer_q1 = 1\n    ### END SOLUTION\nq1.check(answer_q1)"


def test_a_self_study_copy_leaves_solution_answering(tmp_path):
    lessons, out = tmp_path / "lessons", tmp_path / "out"
    _lessons(lessons, ANSWERED)
    subprocess.run([sys.executable, str(TOOL), "--self-study", str(lessons), str(out)], check=True, capture_output=True,
                   timeout=60)
    copy = nbformat.read(out / "00-example.ipynb", as_version=4)
    assert [cell.source for cell in copy.cells] == ["import iolab", "answer_q1 = None  # your answer here\nq1.check(answer_q1)"]


def test_in_place_replaces_the_notebooks_and_a_second_run_changes_nothing(tmp_path):
    lessons = tmp_path / "lessons"
    (path,) = _lessons(lessons, ANSWERED)
    for _ in range(2):
        subprocess.run([sys.executable, str(TOOL), "--in-place", str(lessons)], check=True, capture_output=True, timeout=60)
        copy = nbformat.read(path, as_version=4)
        assert copy.cells[0].source == f"{make_student.DISABLE_LINE}\nimport iolab"
        assert make_student.BEGIN not in copy.cells[1].source
    assert [p.name for p in lessons.iterdir()] == [path.name], "no temporary file may be left beside the notebooks"
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_in_place_writes_nothing_when_one_notebook_is_refused(tmp_path):
    lessons = tmp_path / "lessons"
    paths = _lessons(lessons, ANSWERED, "### BEGIN SOLUTION\nx = 1\n")
    before = [path.read_bytes() for path in paths]
    result = subprocess.run([sys.executable, str(TOOL), "--self-study", "--in-place", str(lessons)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode != 0 and "01-example.ipynb" in result.stderr and "never closed" in result.stderr
    assert [path.read_bytes() for path in paths] == before, "the instructor's notebooks must stay as they were"


def test_the_notebook_folder_is_replaced_only_when_asked(tmp_path):
    lessons = tmp_path / "lessons"
    (path,) = _lessons(lessons, ANSWERED)
    before = path.read_bytes()
    result = subprocess.run([sys.executable, str(TOOL), str(lessons), str(lessons / ".")], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0 and "--in-place" in result.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize("argv", [["--in-place", "a", "b"], ["--self-studdy", "a", "b"], ["a"]])
def test_wrong_arguments_show_the_usage(argv):
    result = subprocess.run([sys.executable, str(TOOL), *argv], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "Usage" in result.stderr and "Traceback" not in result.stderr


def test_usage_without_arguments():
    result = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "Usage" in result.stderr


# --- a student copy, filled in as a student would, run for real ------------------------------------

# One lesson also gets wrong answers (every kind of checker it has must say "incorrect"); the others get only right
# ones, which keeps this slow test to one run per lesson plus one. No answers at all are run elsewhere: every exercise
# of every lesson says "not attempted" to None (tests/lessons/test_exercises.py), and whole lessons run without
# answers in test_binder_layout.py (lesson 00, as Binder serves it) and test_notebooks.py (10 and 13).
WRONG_ANSWER_LESSON = "03-handler-ordering"
STUDENT_RUN_TIMEOUT_S = 240


def run_student_copy(instructor_path, student_path, out_dir, answers="right"):
    """Fill in the student copy with `answers` ("right", "wrong" or "missing": left as handed out), run it in
    quick mode with solutions=False, and return its results JSON."""
    filled = student_copies.write_filled(instructor_path, student_path, out_dir / f"{student_path.stem}.filled.ipynb", answers)
    results_path = out_dir / f"{student_path.stem}.json"
    try:
        # Without the optional tools, as every papermill run of a lesson (test_notebooks.py says why).
        with without_optional_tools() if TOOLS_OFF else contextlib.nullcontext():
            papermill.execute_notebook(
                str(filled), str(out_dir / f"{student_path.stem}.executed.ipynb"),
                parameters={"quick": True, "results_path": str(results_path)},  # solutions stays False
                kernel_name="python3", cwd=str(REPO / "notebooks"), execution_timeout=200, progress_bar=False,
            )
    except papermill.PapermillExecutionError as error:
        pytest.fail(f"student copy of {instructor_path.name}, filled in: In [{error.exec_count}] raised "
                    f"{error.ename}: {error.evalue}", pytrace=False)
    return json.loads(results_path.read_text())


WITH_SOLUTIONS = student_copies.WITH_SOLUTIONS
WRONG_ANSWERS_IN = [path for path in WITH_SOLUTIONS if path.stem == WRONG_ANSWER_LESSON] or WITH_SOLUTIONS[:1]
STUDENT_RUNS = [(path, "right") for path in WITH_SOLUTIONS] + [
    (path, "wrong") for path in WRONG_ANSWERS_IN
]


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.timeout(STUDENT_RUN_TIMEOUT_S)
@pytest.mark.parametrize("path, answers", STUDENT_RUNS, ids=[f"{path.stem}-{answers}" for path, answers in STUDENT_RUNS])
def test_a_student_copy_as_a_student_answers_it_is_checked(path, answers, student_dir, tmp_path):
    # A lesson's right answers also run in the browser, in test_browser.py; conftest skips this run when that one is
    # selected and can run, so that each lesson is run once as a filled-in copy, not twice.
    results = run_student_copy(path, student_dir / path.name, tmp_path, answers)
    off = student_copies.unexpected_statuses(results, answers)
    assert not off, f"student copy of {path.name} with {answers} answers: {off}"


# --- lesson 11's q5, done exactly as its text says, in the copy `make student` makes ------------------------------

CLIENT_SIDE = REPO / "notebooks" / "11-the-client-side.ipynb"
# What q5's text and hints tell the student to write: batches of `fetch(session, url)`, gathered one after another.
# Written here from the text, not copied from the solution block, so a name the text uses but the copy never
# defines (as `fetch` once was) fails the run with a NameError.
IN_BATCHES_AS_TOLD = [
    "{name} = []",
    "for first in range(0, n, size):",
    "    batch = [fetch(session, url) for _ in range(min(size, n - first))]",
    "    {name} += await asyncio.gather(*batch)",
]


def q5_as_told(student_path, out_path, statuses_path):
    """The student copy up to q5, its placeholder replaced by IN_BATCHES_AS_TOLD, then a cell that writes the
    exercises' statuses to `statuses_path`: every cell a student runs before q5 runs too."""
    notebook = nbformat.read(student_path, as_version=4)
    index = next(i for i, cell in enumerate(notebook.cells) if "async def in_batches" in cell.source)
    cell = notebook.cells[index]
    marked = [line for line in cell.source.splitlines() if line.rstrip().endswith(make_student.MARK) or
              f"{make_student.MARK}:" in line]
    assert len(marked) == 1, f"q5's cell should hold one line to fill in, has {marked}"
    indent = marked[0][: len(marked[0]) - len(marked[0].lstrip())]
    name = marked[0].split("=")[0].strip()  # the name the copy returns, whatever the placeholder calls it
    cell.source = cell.source.replace(marked[0], "\n".join(indent + line.format(name=name) for line in IN_BATCHES_AS_TOLD))
    notebook.cells = notebook.cells[: index + 1] + [nbformat.v4.new_code_cell(
        f"import json\nwith open({str(statuses_path)!r}, 'w') as out:\n    json.dump(ex.statuses(), out)")]
    nbformat.write(notebook, out_path)
    return out_path


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.timeout(STUDENT_RUN_TIMEOUT_S)
def test_lesson_11_q5_done_as_its_text_says_runs_in_the_student_copy(student_dir, tmp_path):
    source = nbformat.read(student_dir / CLIENT_SIDE.name, as_version=4)
    question = next(cell.source for cell in source.cells if cell.source.startswith("**q5.**"))
    assert "`fetch(session, url)`" in question, "q5's text should name the call the student makes"
    statuses_path = tmp_path / "statuses.json"
    filled = q5_as_told(student_dir / CLIENT_SIDE.name, tmp_path / "q5.ipynb", statuses_path)
    try:
        papermill.execute_notebook(str(filled), str(tmp_path / "q5.executed.ipynb"), parameters={"quick": True},
                                   kernel_name="python3", cwd=str(REPO / "notebooks"), execution_timeout=200,
                                   progress_bar=False)
    except papermill.PapermillExecutionError as error:
        pytest.fail(f"q5 done as its text says: In [{error.exec_count}] raised {error.ename}: {error.evalue}",
                    pytrace=False)
    statuses = json.loads(statuses_path.read_text())
    assert statuses["q5"] == "correct", f"q5 done as its text says was judged {statuses['q5']}"
