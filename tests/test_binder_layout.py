"""The lessons as Binder serves them: binder/postBuild's own line run on a copy of the repository, then scanned for answers.

Run as a script (python tests/test_binder_layout.py) it builds the layout in a temporary folder and prints the scan.
"""

import ast
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

REPO = Path(__file__).resolve().parents[1]
POSTBUILD = REPO / "binder" / "postBuild"
INSTRUCTOR_NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tests"))
import student_copies  # noqa: E402

import make_student  # noqa: E402  (tools/ is not a package)
from helpers import TOOLS_OFF, without_optional_tools  # noqa: E402

# Any trace of a block, wherever it sits in the file: a cell, an output, metadata.
MARKERS = ("BEGIN SOLUTION", "END SOLUTION")
BADGE_URLPATH = re.compile(r"\(https://mybinder\.org/v2/gh/[^)\s]+\?urlpath=lab/tree/(?P<path>[^)\s]+)\)")
# A link from one lesson to another, e.g. (01-bank-queue.ipynb) or (00-start-here.ipynb#Glossary).
LESSON_LINK = re.compile(r"\]\((?P<name>[\w.-]+\.ipynb)(?:#[^)]*)?\)")
BUILD_TIMEOUT_S = 120


# --- the layout, built by the line binder/postBuild runs ---------------------------------------------------------

def postbuild_layout_line():
    """The one line of binder/postBuild that turns the checkout into student copies, as it stands in the file."""
    lines = POSTBUILD.read_text().splitlines()
    calls = [number for number, line in enumerate(lines) if "make_student.py" in line and not line.lstrip().startswith("#")]
    assert len(calls) == 1, f"binder/postBuild should run tools/make_student.py once, at lines {calls}"
    line = lines[calls[0]]
    # At the top of the script after `set -e` and the `cd` to the checkout: it runs on every build, from the
    # checkout's root (as it runs here), and a refused notebook fails the build instead of serving answers.
    assert line == line.lstrip() and not re.search(r"\|\||;|&&|\bif\b", line), f"not a plain top-level line: {line!r}"
    assert lines.index("set -e") < calls[0] and lines.index('cd "$(dirname "$0")/.."') < calls[0]
    return line


def repository_files():
    """The files a clone of this commit holds, plus new files not yet committed (but not ignored ones)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                                capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"the Binder layout is built from the repository's files, and git cannot list them here: {error}")
    return [name for name in listed.decode().split("\0") if name and (REPO / name).is_file()]


def build_layout(root):
    """Copy the repository's files into `root` and run binder/postBuild's line there; returns `root`."""
    for name in repository_files():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target, follow_symlinks=False)
    # Binder's `python` is the environment's, with nbformat from binder/requirements.txt; here, this one.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    result = subprocess.run(["bash", "-c", f"set -e\n{postbuild_layout_line()}"], cwd=root, env=env,
                            capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert result.returncode == 0, f"binder/postBuild's line failed in a copy of the repository:\n{result.stderr}"
    return root


# --- the scanner -------------------------------------------------------------------------------------------------

@dataclass
class AnswerKey:
    """What counts as an answer: the names solution blocks assign, and their lines."""

    names: set = field(default_factory=set)
    lines: set = field(default_factory=set)
    shown_anyway: set = field(default_factory=set)  # solution lines the instructor's copy also shows outside a block


def answer_key(instructor_paths):
    """Names and lines of every solution block in the instructor's notebooks.

    A line that the instructor's copy also shows outside its blocks (a `pass`, say) is no answer: a student sees it
    in any copy.
    """
    key, outside = AnswerKey(), set()
    for path in instructor_paths:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                for names, lines in make_student.solution_blocks(cell.source):
                    key.names.update(names)
                    key.lines.update(line.strip() for line in lines if line.strip())
                outside.update(line.strip() for line in make_student.strip_solutions(cell.source).splitlines())
            else:
                outside.update(line.strip() for line in cell.source.splitlines())
    key.shown_anyway = key.lines & outside
    key.lines -= outside
    return key


@dataclass
class Scan:
    notebooks: list = field(default_factory=list)
    markers: list = field(default_factory=list)
    answers: list = field(default_factory=list)

    def summary(self, key):
        return (f"{len(self.notebooks)} notebooks scanned, {len(self.markers)} solution markers found, "
                f"{len(self.answers)} answer values found; {len(key.names)} names checked, "
                f"{len(key.lines)} solution lines looked for")


def _cell_text(cell):
    """A cell's source and the text of its outputs, line by line."""
    texts = [cell.source]
    for output in cell.get("outputs", []):
        texts.append(output.get("text", ""))
        texts.extend(value for value in output.get("data", {}).values() if isinstance(value, str))
        texts.extend(output.get("traceback", []))
    return [line.strip() for text in texts for line in (text if isinstance(text, str) else "".join(text)).splitlines()]


def _assigned_other_than_none(source, names):
    """(line, name) for each place the code binds one of `names` to anything but a plain `name = None`."""
    python = TransformerManager().transform_cell(source)
    tree = compile(python, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in names:
            statement = parents.get(node)
            plain_none = (isinstance(statement, ast.Assign | ast.AnnAssign) and node in _targets(statement)
                          and isinstance(statement.value, ast.Constant) and statement.value.value is None)
            if not plain_none:
                found.append((node.lineno, node.id))
    return found


def _targets(statement):
    return statement.targets if isinstance(statement, ast.Assign) else [statement.target]


def scan(root, key):
    """Every notebook under `root`, wherever it sits, checked for solution markers and answers."""
    result = Scan()
    for path in sorted(root.rglob("*.ipynb")):
        where = path.relative_to(root).as_posix()
        result.notebooks.append(where)
        text = path.read_text(encoding="utf-8")
        result.markers += [f"{where}: {marker!r}" for marker in MARKERS for _ in range(text.count(marker))]
        for index, cell in enumerate(nbformat.reads(text, as_version=4).cells):
            result.answers += [f"{where} cell {index}: solution line {line!r}"
                               for line in _cell_text(cell) if line in key.lines]
            if cell.cell_type != "code":
                continue
            try:
                assigned = _assigned_other_than_none(cell.source, key.names)
            except SyntaxError as error:
                result.answers.append(f"{where} cell {index}: does not parse ({error}), so its answers went unchecked")
                continue
            result.answers += [f"{where} cell {index} line {line}: {name} is given a value" for line, name in assigned]
    return result


# --- the layout Binder builds, scanned ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    return build_layout(tmp_path_factory.mktemp("binder"))


@pytest.fixture(scope="module")
def key():
    return answer_key(INSTRUCTOR_NOTEBOOKS)


def badge_notebook():
    """The notebook the README's Binder badge opens, relative to the repository (lab/tree/ starts there)."""
    found = BADGE_URLPATH.findall((REPO / "README.md").read_text())
    assert len(found) == 1, f"README.md should hold one Binder badge with a lab/tree/ urlpath, found {found}"
    return found[0]


def test_the_answer_key_is_not_empty(key):
    # Without solution blocks the scan below would prove nothing.
    assert key.names and key.lines, "no solution block in notebooks/: the scan would find nothing either way"
    assert not key.shown_anyway, f"solution lines the instructor's copy also shows outside a block: {key.shown_anyway}"


def test_no_notebook_binder_serves_holds_an_answer(layout, key):
    found = scan(layout, key)
    print(f"\nBinder layout: {found.summary(key)}")
    lessons = {path.name for path in INSTRUCTOR_NOTEBOOKS}
    assert {Path(name).name for name in found.notebooks} >= lessons
    assert not found.markers, f"solution markers in what Binder serves: {found.markers}"
    assert not found.answers, f"answers in what Binder serves: {found.answers}"


def test_the_scan_finds_the_answers_in_the_instructors_copies(key):
    # The same scan on notebooks/ as committed: every lesson with a solution block is caught.
    found = scan(REPO / "notebooks", key)
    caught = {entry.split(" ")[0] for entry in found.answers} & {entry.split(":")[0] for entry in found.markers}
    assert caught == {path.name for path in student_copies.WITH_SOLUTIONS}


def _planted_layout(tmp_path, layout, plant):
    """A copy of the layout's notebooks/ (and README) with `plant(root)` applied."""
    root = tmp_path / "planted"
    shutil.copytree(layout / "notebooks", root / "notebooks")
    plant(root)
    return root


def _edit_cell(root, name, edit):
    path = root / "notebooks" / name
    notebook = nbformat.read(path, as_version=4)
    index = next(i for i, cell in enumerate(notebook.cells) if "answer_q1 = None" in cell.source)
    edit(notebook, index)
    nbformat.write(notebook, path)


def _first_solution(path):
    """(name, its solution line) of a notebook's first one-line solution block."""
    for cell in nbformat.read(path, as_version=4).cells:
        for names, lines in make_student.solution_blocks(cell.source) if cell.cell_type == "code" else []:
            return names[0], lines[0]
    raise AssertionError(f"{path.name} has no solution block")


def _badge_lesson():
    return Path(badge_notebook()).name


def _replace_placeholder(new_line):
    """A plant that puts `new_line` (or new_line(), the instructor's line) where the student types answer_q1."""
    def edit(notebook, index):
        line = new_line() if callable(new_line) else new_line
        cell = notebook.cells[index]
        cell.source = re.sub(r"^answer_q1 = None.*$", line, cell.source, count=1, flags=re.MULTILINE)
    return lambda root: _edit_cell(root, _badge_lesson(), edit)


def _append_cell(cell):
    def plant(root):
        _edit_cell(root, _badge_lesson(), lambda notebook, index: notebook.cells.insert(index + 1, cell))
    return plant


def _stray_instructor_copy(root):
    (root / "lib").mkdir()
    shutil.copy(REPO / "notebooks" / _badge_lesson(), root / "lib" / "scratch.ipynb")


def _output_with_the_solution(root):
    _, line = _first_solution(REPO / "notebooks" / _badge_lesson())

    def edit(notebook, index):
        notebook.cells[index].outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"  {line}\n")]
    _edit_cell(root, _badge_lesson(), edit)


PLANTS = {
    "the-solution-line": _replace_placeholder(lambda: _first_solution(REPO / "notebooks" / _badge_lesson())[1]),
    "another-expression": _replace_placeholder("answer_q1 = 'lit' + 'tle'"),
    "a-tuple": _replace_placeholder("answer_q1, spare = 'little', None"),
    "added-later": _append_cell(nbformat.v4.new_code_cell("answer_q1 += 'little'")),
    "a-walrus": _append_cell(nbformat.v4.new_code_cell("print(answer_q1 := 'little')")),
    "a-marker-in-markdown": _append_cell(nbformat.v4.new_markdown_cell("### BEGIN SOLUTION")),
    "in-an-output": _output_with_the_solution,
    "a-stray-instructor-copy": _stray_instructor_copy,
}


@pytest.mark.parametrize("plant", PLANTS.values(), ids=PLANTS.keys())
def test_the_scanner_catches_a_planted_answer(plant, layout, key, tmp_path):
    root = _planted_layout(tmp_path, layout, plant)
    found = scan(root, key)
    assert found.markers or found.answers, "the scanner missed an answer planted in a student copy"


def test_the_layout_keeps_every_lesson_and_link(layout):
    served = sorted(path.name for path in (layout / "notebooks").glob("*.ipynb"))
    assert served == [path.name for path in INSTRUCTOR_NOTEBOOKS]
    for path in (layout / "notebooks").glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            for name in LESSON_LINK.findall(cell.source) if cell.cell_type == "markdown" else []:
                assert (layout / "notebooks" / name).exists(), f"{path.name} links to {name}, which Binder does not serve"


def test_the_badge_opens_a_student_copy_where_solution_answers(layout):
    path = badge_notebook()
    opened = layout / path
    assert opened.exists(), f"the badge opens {path}, which is not in the layout Binder builds"
    instructor = nbformat.read(REPO / path, as_version=4)
    copy = nbformat.read(opened, as_version=4)
    assert len(copy.cells) == len(instructor.cells)
    placeholders = {match[1] for cell in copy.cells for match in student_copies.MARKED_LINE.findall(cell.source)}
    blocks = {name for cell in instructor.cells for names, _ in make_student.solution_blocks(cell.source) for name in names}
    assert blocks, f"{path} has no exercise: nothing would tell a student copy from the instructor's"
    assert blocks <= placeholders, f"{path}: {sorted(blocks - placeholders)} are not left for the student to fill in"
    # For self-study: no copy Binder serves switches solution() off.
    for served in (layout / "notebooks").glob("*.ipynb"):
        assert "disable_solutions" not in served.read_text(), f"{served.name} disables solution() on Binder"


# --- the badge's lesson, run as Binder serves it, answers left empty ------------------------------------------------

# Appended to the copy: solution() answers in it, which is what self-study on Binder needs.
SOLUTION_ANSWERS = """\
import sys
import iolab.checks
assert not iolab.checks.solutions_disabled(), "solution() is disabled in the copy Binder serves"
next(value for name, module in list(sys.modules.items()) if name.startswith("iolab.lessons.") and name.endswith(".exercises")
     for value in vars(module).values() if isinstance(value, iolab.checks.Exercise)).solution()
"""


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.timeout(240)
def test_the_badges_lesson_runs_on_binder_with_no_answer_given(layout, tmp_path, monkeypatch):
    import papermill

    # As on Binder: nothing in the kernel's environment disables solution().
    monkeypatch.delenv("IOLAB_SOLUTIONS_DISABLED", raising=False)
    notebook = nbformat.read(layout / badge_notebook(), as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(SOLUTION_ANSWERS))
    given, executed, results = tmp_path / "given.ipynb", tmp_path / "executed.ipynb", tmp_path / "results.json"
    nbformat.write(notebook, given)
    try:
        with without_optional_tools() if TOOLS_OFF else contextlib.nullcontext():
            papermill.execute_notebook(str(given), str(executed), parameters={"quick": True, "results_path": str(results)},
                                       kernel_name="python3", cwd=str(layout / "notebooks"), execution_timeout=200,
                                       progress_bar=False)
    except papermill.PapermillExecutionError as error:
        pytest.fail(f"{badge_notebook()} as Binder serves it, no answer given: In [{error.exec_count}] raised "
                    f"{error.ename}: {error.evalue}", pytrace=False)
    off = student_copies.unexpected_statuses(json.loads(results.read_text()), "missing")
    assert not off, f"{badge_notebook()} with no answer given: {off}"
    said = "".join(output.get("text", "") for output in nbformat.read(executed, as_version=4).cells[-1].outputs)
    assert said.startswith("Solution: "), f"solution() in the copy Binder serves said {said!r}"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        built = build_layout(Path(folder))
        answers = answer_key(INSTRUCTOR_NOTEBOOKS)
        found = scan(built, answers)
        print(f"Binder layout (binder/postBuild: {postbuild_layout_line()}): {found.summary(answers)}")
        print(f"names checked: {', '.join(sorted(answers.names))}")
        for line in found.markers + found.answers:
            print(f"  {line}")
        sys.exit(1 if found.markers or found.answers else 0)
