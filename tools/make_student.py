"""Write student copies of the lessons: solutions cut out, outputs stripped, solution() disabled.

Usage: python tools/make_student.py NOTEBOOK_DIR OUT_DIR
"""

import re
import sys
from pathlib import Path

import nbformat

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
# Inserted at the top of each notebook's first code cell (its setup cell).
DISABLE_LINE = "import iolab.checks; iolab.checks.disable_solutions()  # student copy: no solutions"
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z_0-9]*)\s*=")


class MarkerError(ValueError):
    """A solution block that does not open and close properly."""


def strip_solutions(source, where="cell"):
    """Replace each BEGIN/END SOLUTION block with a placeholder at the block's indentation.

    A block that assigned `name = ...` becomes `name = None  # your answer here`,
    so later lines that use the name still run; any other block becomes `pass`,
    so an `if solutions:` above it still has a body.
    """
    lines = source.splitlines()
    out, block, indent = [], None, ""
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            if block is not None:
                raise MarkerError(f"{where}, line {number}: {BEGIN} inside another solution block")
            block, indent = [], line[: len(line) - len(line.lstrip())]
        elif stripped.startswith(END):
            if block is None:
                raise MarkerError(f"{where}, line {number}: {END} without {BEGIN}")
            out.extend(_placeholder(block, indent))
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(line)
    if block is not None:
        raise MarkerError(f"{where}: {BEGIN} is never closed by {END}")
    return "\n".join(out)


def _placeholder(block, indent):
    names = []
    for line in block:
        match = _ASSIGNMENT.match(line)
        if match and match.group(1) not in names:
            names.append(match.group(1))
    if names:
        return [f"{indent}{name} = None  # your answer here" for name in names]
    return [f"{indent}pass  # your answer here"]


def student_notebook(notebook, name="notebook"):
    """A student copy of a notebook node: solutions cut, outputs stripped, solutions disabled in the setup cell."""
    disabled = False
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        cell.source = strip_solutions(cell.source, f"{name} cell {index}")
        cell.outputs = []
        cell.execution_count = None
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
        if not disabled:
            cell.source = f"{DISABLE_LINE}\n{cell.source}"
            disabled = True
    if not disabled:
        notebook.cells.insert(0, nbformat.v4.new_code_cell(DISABLE_LINE))
    notebook.metadata.pop("papermill", None)
    return notebook


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.strip())
    source_dir, out_dir = Path(argv[1]), Path(argv[2])
    notebooks = sorted(source_dir.glob("*.ipynb"))
    if not notebooks:
        sys.exit(f"no notebooks in {source_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in notebooks:
        notebook = student_notebook(nbformat.read(path, as_version=4), path.name)
        nbformat.write(notebook, out_dir / path.name)
        print(f"{path} -> {out_dir / path.name}")


if __name__ == "__main__":
    main(sys.argv)
