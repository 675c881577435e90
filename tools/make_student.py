"""Write student copies of the lessons.

Solutions cut out, outputs stripped, solution() disabled (unless --self-study).

Usage: python tools/make_student.py [--self-study] NOTEBOOK_DIR OUT_DIR
       python tools/make_student.py [--self-study] --in-place NOTEBOOK_DIR

  --self-study  leave solution() answering, for students working alone (Binder): no disable_solutions() line.
  --in-place    replace NOTEBOOK_DIR's notebooks by their student copies (binder/postBuild, in Binder's
                throwaway checkout). Every notebook is converted before any is written, so a refused one
                leaves them all as they were.
"""

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
# Inserted at the top of each notebook's first code cell (its setup cell).
DISABLE_LINE = "import iolab.checks; iolab.checks.disable_solutions()  # student copy: no solutions"
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z_0-9]*)\s*=(?!=)")
_IF_SOLUTIONS = re.compile(r"^(\s*)if solutions\s*:\s*(#.*)?$")
# `solutions` as a name (not as part of another), in a line that opens a block around a solution.
_MENTIONS_SOLUTIONS = re.compile(r"\bsolutions\b")
_NONE_DEFAULT = re.compile(r"^(\s*)([A-Za-z_][A-Za-z_0-9]*)\s*=\s*None\s*(?:#\s*(.*?))?\s*$")
# Ends every line a student fills in, so a student (and tests/test_make_student.py) can find them.
MARK = "# your answer here"
# The pictures the lessons' markdown shows: a copy elsewhere takes them along, or it shows broken images.
FIGURES = "figures"


class MarkerError(ValueError):
    """A solution block that does not open and close properly."""


def strip_solutions(source, where="cell"):
    """Replace each BEGIN/END SOLUTION block with a placeholder line the student fills in.

    A block that assigned `name = ...` becomes `name = None  # your answer here`,
    so later lines that use the name still run; any other block becomes `pass`.
    When the block is all an `if solutions:` holds, the `if` goes too and the
    placeholder takes its place: in a student copy `solutions` is False, so a
    line left under it would never run. A `name = None` line right above that
    `if` is the same placeholder said twice; it is dropped, its comment kept.
    A block under any other line that tests `solutions` (`if solutions and
    quick:`, `elif solutions:`, an outer `if solutions:`) is refused: the copy
    could not take that line out, and the student's answer would never run.
    """
    lines = source.splitlines()
    out, block, indent = [], None, ""
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            if block is not None:
                raise MarkerError(f"{where}, line {number}: {BEGIN} inside another solution block")
            block, indent = [], _indent(line)
        elif stripped.startswith(END):
            if block is None:
                raise MarkerError(f"{where}, line {number}: {END} without {BEGIN}")
            out.extend(_placeholder(out, block, indent, lines[number:], f"{where}, line {number}"))
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(line)
    if block is not None:
        raise MarkerError(f"{where}: {BEGIN} is never closed by {END}")
    return "\n".join(out)


def solution_blocks(source):
    """[(names assigned, lines), ...] for each BEGIN/END SOLUTION block, its lines dedented to the block's indent."""
    blocks, block, indent = [], None, ""
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            block, indent = [], _indent(line)
        elif stripped.startswith(END) and block is not None:
            blocks.append((_assigned_names(block), [text[len(indent):] if text.startswith(indent) else text.strip()
                                                     for text in block]))
            block = None
        elif block is not None:
            block.append(line)
    return blocks


def _indent(line):
    return line[: len(line) - len(line.lstrip())]


def _assigned_names(block):
    names = []
    for line in block:
        match = _ASSIGNMENT.match(line)
        if match and match.group(1) not in names:
            names.append(match.group(1))
    return names


def _placeholder(out, block, indent, rest, where):
    """The placeholder lines for one block; may take an `if solutions:` and a `name = None` line off `out`."""
    names = _assigned_names(block)
    comments = {}
    openers = _openers(out, indent)
    opener = openers[0] if openers else None
    guard = _IF_SOLUTIONS.match(opener) if opener is not None else None
    for line in openers[1:] if guard else openers:
        code = line.split("#", 1)[0].strip()
        if _MENTIONS_SOLUTIONS.search(code):
            raise MarkerError(
                f"{where}: the solution block sits under `{code}`, which a student copy cannot take out, "
                "so the student's answer would never run (solutions is False there). Put the block alone under "
                "a plain `if solutions:` and move any other condition into the block, e.g. "
                "`answer = x if quick else y`")
    if guard:
        if opener is not out[-1] or _more_under(rest, guard.group(1)):
            raise MarkerError(f"{where}: the solution block must be all its `if solutions:` holds; "
                              "anything else under it would keep the student's answer from running")
        out.pop()  # the `if solutions:` that would keep the student's line from running
        indent = guard.group(1)
        while out and (default := _NONE_DEFAULT.match(out[-1])) and default.group(1) == indent and default.group(2) in names:
            comments[default.group(2)] = default.group(3) or ""
            out.pop()
    if not names:
        return [f"{indent}pass  {MARK}"]
    return [f"{indent}{name} = None  {MARK}" + (f": {comments[name]}" if comments.get(name) else "") for name in names]


def _openers(out, indent):
    """The lines that open the blocks around a line indented by `indent`, innermost first."""
    found, width = [], len(indent)
    for line in reversed(out):
        if line.strip() and len(_indent(line)) < width:
            found.append(line)
            width = len(_indent(line))
            if not width:
                break
    return found


def _more_under(rest, guard_indent):
    """True if the `if` goes on after its solution block: more lines in its body, or an elif/else."""
    for line in rest:
        if not line.strip():
            continue
        return len(_indent(line)) > len(guard_indent) or line.strip().startswith(("elif", "else"))
    return False


def student_notebook(notebook, name="notebook", self_study=False):
    """A student copy of a notebook node: solutions cut, outputs stripped, solutions disabled in the setup cell.

    With `self_study`, solution() still answers: no line disables it (the copy Binder opens).
    """
    if not any(cell.cell_type == "code" for cell in notebook.cells):
        return notebook  # a page that runs nothing (the glossary) has no solutions to cut or disable
    disabled = self_study
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        cell.source = strip_solutions(cell.source, f"{name} cell {index}")
        cell.outputs = []
        cell.execution_count = None
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
        if not disabled:
            # A copy of a copy gets the line once.
            if not cell.source.startswith(DISABLE_LINE):
                cell.source = f"{DISABLE_LINE}\n{cell.source}"
            disabled = True
    if not disabled:
        import nbformat

        notebook.cells.insert(0, nbformat.v4.new_code_cell(DISABLE_LINE))
    notebook.metadata.pop("papermill", None)
    return notebook


def parse_args(argv):
    """(source_dir, out_dir, self_study) from the command line; exits with the usage on anything else."""
    flags = {arg for arg in argv[1:] if arg.startswith("-")}
    paths = [Path(arg) for arg in argv[1:] if not arg.startswith("-")]
    unknown = flags - {"--self-study", "--in-place"}
    if unknown:
        sys.exit(f"make_student: unknown option {sorted(unknown)[0]}\n\n{__doc__.strip()}")
    in_place = "--in-place" in flags
    if len(paths) != (1 if in_place else 2):
        sys.exit(__doc__.strip())
    source_dir, out_dir = (paths[0], paths[0]) if in_place else paths
    if not in_place and source_dir.resolve() == out_dir.resolve():
        # The instructor's only copy of the solutions: replace it only when asked to in so many words.
        sys.exit(f"make_student: {out_dir} is the notebook folder itself; pass --in-place to replace its notebooks")
    return source_dir, out_dir, "--self-study" in flags


def write_atomically(notebook, path):
    """Write a notebook through a temporary file beside it, so a notebook is never left half written."""
    import nbformat

    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            nbformat.write(notebook, file)
        # mkstemp makes the file private (0600); a copy gets the notebook's own mode, or a new file's.
        os.chmod(temporary, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def main(argv):
    source_dir, out_dir, self_study = parse_args(argv)
    # Imported once the arguments hold: nbformat brings jsonschema and its format checkers (2 s on a quiet machine,
    # 5 s on a busy one), which a wrong command line need not wait for to get its usage.
    import nbformat

    notebooks = sorted(source_dir.glob("*.ipynb"))
    if not notebooks:
        sys.exit(f"no notebooks in {source_dir}")
    copies = []
    for path in notebooks:
        try:
            copies.append((path, student_notebook(nbformat.read(path, as_version=4), path.name, self_study)))
        except MarkerError as error:
            sys.exit(f"make_student: {error}")
    out_dir.mkdir(parents=True, exist_ok=True)
    for path, notebook in copies:
        write_atomically(notebook, out_dir / path.name)
        print(f"{path} -> {out_dir / path.name}")
    if (source_dir / FIGURES).is_dir() and source_dir.resolve() != out_dir.resolve():
        shutil.copytree(source_dir / FIGURES, out_dir / FIGURES, dirs_exist_ok=True)
        print(f"{source_dir / FIGURES} -> {out_dir / FIGURES}")


if __name__ == "__main__":
    main(sys.argv)
