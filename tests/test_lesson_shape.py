"""Every lesson has the one shape lib/iolab/lessons/README.md describes.

Four modules, Plan.from_cell and check_claims, no fifth name for them, and a notebook that builds its plan and checks
its claims the same way.
"""

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lib" / "iolab" / "lessons"
NOTEBOOKS = ROOT / "notebooks"
PACKAGES = sorted(path.parent for path in LESSONS.glob("*/__init__.py"))
MODULES = ("parameters.py", "claims.py", "exercises.py", "view.py")
OLD_NAMES = ("proof", "verdict", "lesson", "first_run")  # the names the four modules had before they had one


def defined(path):
    """The names a module defines at its top level, and the methods of its top-level classes (as Class.method)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{item.name}" for item in node.body if isinstance(item, ast.FunctionDef)}
    return names


def lesson_notebooks():
    return sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))


def code_cells(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return [(cell, "".join(cell["source"])) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_every_lesson_package_is_found():
    assert len(PACKAGES) >= 14 and len(PACKAGES) >= len(lesson_notebooks())


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
def test_a_lesson_has_the_four_modules_and_no_fifth_name_for_them(package):
    missing = [name for name in MODULES if not (package / name).is_file()]
    assert not missing, f"lessons/{package.name} has no {missing} (lib/iolab/lessons/README.md)"
    old = sorted(path.name for path in package.glob("*.py") if path.stem in OLD_NAMES)
    assert not old, f"lessons/{package.name} has {old}: its claims go in claims.py, its parameters in parameters.py"
    assert "Plan.from_cell" in defined(package / "parameters.py"), f"lessons/{package.name}: no Plan.from_cell"
    assert "check_claims" in defined(package / "claims.py"), f"lessons/{package.name}: no check_claims"


@pytest.mark.parametrize("path", lesson_notebooks(), ids=[p.stem for p in lesson_notebooks()])
def test_a_lesson_notebook_builds_its_plan_first_and_checks_its_claims_last(path):
    cells = code_cells(path)
    tagged = [i for i, (cell, _) in enumerate(cells) if "parameters" in cell["metadata"].get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: one parameters cell, tagged parameters"
    after = cells[tagged[0] + 1][1]
    first_line = next(line for line in after.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    assert "Plan.from_cell(globals())" in first_line, f"{path.name}: the cell after the parameters starts {first_line!r}"
    assert "check_claims(" in cells[-1][1], f"{path.name}: its last code cell does not check the claims"


def results_builders():
    """(lesson, claims.results's node) for every lesson whose claims.py builds its results dict."""
    found = []
    for package in PACKAGES:
        tree = ast.parse((package / "claims.py").read_text(encoding="utf-8"))
        found += [(package.name, node) for node in tree.body
                  if isinstance(node, ast.FunctionDef) and node.name == "results"]
    return found


@pytest.mark.parametrize("lesson, builder", results_builders(), ids=[lesson for lesson, _ in results_builders()])
def test_a_lessons_results_take_the_plan_then_each_figure_by_name(lesson, builder):
    # One more figure for a claim is one more keyword, in the notebook, the builder and its test: no order to keep.
    positional = [arg.arg for arg in builder.args.posonlyargs + builder.args.args]
    assert positional == ["plan"], f"lessons/{lesson}: claims.results takes {positional} by position; only the plan"


def test_every_lesson_but_two_builds_its_results_in_claims():
    # Lesson 10's Lab.results() and lesson 13's collect what their runs kept; every other lesson's builder is checked.
    assert len(results_builders()) >= len(PACKAGES) - 2
