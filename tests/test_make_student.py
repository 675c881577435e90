"""tools/make_student.py on the real lessons: no solution left, every cell still compiles, solutions disabled."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "make_student.py"
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))

sys.path.insert(0, str(TOOL.parent))
import make_student  # noqa: E402  (tools/ is not a package)


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


def test_answer_blocks_become_placeholders():
    source = (
        "answer_q1 = None  # req/s\n"
        "if solutions:\n"
        "    ### BEGIN SOLUTION\n"
        "    answer_q1 = 25 / 0.5\n"
        "    answer_q1 = round(answer_q1)\n"
        "    ### END SOLUTION\n"
        "ex.q1.check(answer_q1)"
    )
    assert make_student.strip_solutions(source) == (
        "answer_q1 = None  # req/s\n"
        "if solutions:\n"
        "    answer_q1 = None  # your answer here\n"
        "ex.q1.check(answer_q1)"
    )


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


def test_usage_without_arguments():
    result = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "Usage" in result.stderr
