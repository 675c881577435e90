"""Strip outputs, execution counts and run metadata from notebooks, in place."""

import sys
from pathlib import Path

import nbformat

# Keys that record one machine's run, not the lesson: timings belong to the machine that made them.
RUN_METADATA_KEYS = ("papermill", "execution", "widgets")


def strip(notebook):
    """Return True if anything was removed."""
    changed = False
    # papermill adds a cell with the values of one run; the lesson's defaults live in `parameters`.
    kept = [cell for cell in notebook.cells if "injected-parameters" not in cell.metadata.get("tags", [])]
    changed |= len(kept) != len(notebook.cells)
    notebook.cells = kept
    for key in RUN_METADATA_KEYS:
        changed |= notebook.metadata.pop(key, None) is not None
    for cell in notebook.cells:
        for key in RUN_METADATA_KEYS:
            changed |= cell.metadata.pop(key, None) is not None
        if cell.metadata.get("tags") == []:  # papermill leaves an empty list on every cell
            del cell.metadata["tags"]
            changed = True
        if cell.cell_type == "code":
            changed |= bool(cell.outputs) or cell.execution_count is not None
            cell.outputs = []
            cell.execution_count = None
    return changed


def main(paths):
    for path in map(Path, paths):
        notebook = nbformat.read(path, as_version=4)
        if strip(notebook):
            nbformat.write(notebook, path)
            print(f"stripped {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
