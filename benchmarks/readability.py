"""How readable each lesson is: words per sentence of its prose, and how much of its code is machinery.

Prose: every markdown cell, less what is not prose (fenced code, LaTeX blocks, tables, HTML comments, headings,
link-only navigation lines); inline code counts as one word and a link as its text. Sentences end at ., ! or ?
followed by a space and a capital, a digit, a quote, a bracket or a backtick, and at the end of a paragraph or of
a list item. A number like 1.5 or an abbreviation (e.g., i.e., vs., etc.) does not end one.

Code: the non-blank lines of every code cell a student reads, comments included. Machinery is the parameters cell,
and every statement that asserts, raises, validates (`params.`, `check_common`, `ParameterError`), writes the
results (`results_path`, an assignment to `results`) or checks the claims (`check_claims`). An `if` or a `for`
counts as machinery when all of its body is; a comment counts as the statement below it; a cell whose simple
statements are a third or more asserts and raises (a checking cell) counts whole.

    python benchmarks/readability.py                 # every lesson
    python benchmarks/readability.py notebooks/09-measuring-right.ipynb

The last line is JSON: per lesson, mean and 90th percentile words per sentence, words, code lines, machinery lines
and their share.
"""

import argparse
import ast
import json
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "etc.", "cf.", "approx.", "Fig.", "No.")
END = re.compile(r"(?<=[.!?])[\"')\]*_]*\s+(?=[A-Z0-9\"'(\[`*_$])")
MACHINERY_NAMES = {"results_path", "check_common", "ParameterError", "check_claims", "check_range", "check_choice"}


def prose(markdown):
    """The markdown's prose: paragraphs and list items as plain text, one string each."""
    text = re.sub(r"<!--.*?-->", " ", markdown, flags=re.S)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    blocks, current = [], []
    for line in text.splitlines():
        stripped = line.strip()
        item = re.match(r"^(?:[-*+]|\d+\.)\s+", stripped)
        skip = (not stripped or stripped.startswith(("#", "|", "<")) or
                re.fullmatch(r"(?:\[[^\]]*\]\([^)]*\)\s*[·|]?\s*)+", stripped))
        if skip or item:
            if current:
                blocks.append(" ".join(current))
            current = []
        if skip:
            continue
        current.append(stripped[item.end():] if item else stripped)
    if current:
        blocks.append(" ".join(current))
    cleaned = []
    for block in blocks:
        block = re.sub(r"`[^`]*`", "CODE", block)
        block = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", block)
        block = re.sub(r"\$[^$]*\$", "MATH", block)
        cleaned.append(block)
    return cleaned


def sentences(markdown):
    """The sentences of a markdown cell, each as its list of words."""
    out = []
    for block in prose(markdown):
        protected = block
        for abbreviation in ABBREVIATIONS:
            protected = protected.replace(abbreviation, abbreviation.replace(".", "\0"))
        for sentence in END.split(protected):
            words = re.findall(r"[\w\0'’.,:;%/+=<>×−–-]+", sentence)
            words = [w for w in words if re.search(r"\w", w)]
            if words:
                out.append(words)
    return out


def percentile(values, p):
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = p / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _names(node):
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            yield sub.id
        elif isinstance(sub, ast.Attribute):
            yield sub.attr
            if isinstance(sub.value, ast.Name):
                yield sub.value.id + "."


def _leaves(statements):
    """Every simple statement under `statements`, through if, for, while, with and try."""
    for statement in statements:
        bodies = [getattr(statement, name, []) for name in ("body", "orelse", "finalbody")]
        bodies += [handler.body for handler in getattr(statement, "handlers", [])]
        if isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            yield from _leaves([s for body in bodies for s in body])
        else:
            yield statement


def _is_machinery(statement):
    if isinstance(statement, (ast.Assert, ast.Raise)):
        return True
    if isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
        return all(_is_machinery(s) for s in _leaves([statement]))
    names = set(_names(statement))
    if names & MACHINERY_NAMES or "params." in names:
        return True
    targets = statement.targets if isinstance(statement, ast.Assign) else []
    return any(isinstance(t, ast.Name) and t.id == "results" for t in targets)


def code_lines(source):
    """(lines a student reads, of which machinery) in one code cell.

    A comment is read with the statement below it and counts as that statement does. A cell whose simple
    statements are a third or more asserts and raises is a checking cell: all of it counts as machinery.
    """
    lines = source.splitlines()
    readable = {i for i, line in enumerate(lines, 1) if line.strip() and not line.strip().startswith(("%", "!"))}
    cleaned = "\n".join("" if line.strip().startswith(("%", "!")) else line for line in lines)
    try:
        tree = compile(cleaned, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        return len(readable), 0
    leaves = list(_leaves(tree.body))
    checks = sum(isinstance(s, (ast.Assert, ast.Raise)) for s in leaves)
    if leaves and checks * 3 >= len(leaves):
        return len(readable), len(readable)
    machinery = set()
    for statement in leaves:
        if _is_machinery(statement):
            machinery |= set(range(statement.lineno, statement.end_lineno + 1))
    # comments (and blank-free runs of them) go with the statement that follows
    for number in sorted(readable, reverse=True):
        if lines[number - 1].strip().startswith("#") and number + 1 in machinery:
            machinery.add(number)
    return len(readable), len(readable & machinery)


def measure(path):
    notebook = nbformat.read(path, as_version=4)
    lengths, words, code, machinery = [], 0, 0, 0
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for sentence in sentences(cell.source):
                lengths.append(len(sentence))
            words += sum(len(re.findall(r"\w+", block)) for block in prose(cell.source))
        elif cell.cell_type == "code":
            readable, busy = code_lines(cell.source)
            code += readable
            machinery += readable if "parameters" in cell.metadata.get("tags", []) else busy
    mean = sum(lengths) / len(lengths) if lengths else 0.0
    return {"lesson": path.stem, "sentences": len(lengths), "words": words,
            "mean_words_per_sentence": round(mean, 1), "p90_words_per_sentence": round(percentile(lengths, 90), 1),
            "code_lines": code, "machinery_lines": machinery,
            "machinery_share": round(machinery / code, 3) if code else 0.0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to measure (default: every lesson)")
    parser.add_argument("--longest", type=int, default=0, help="also print this many of each lesson's longest sentences")
    args = parser.parse_args(argv)
    rows = [measure(path) for path in (args.notebooks or LESSONS)]
    print(f"{'lesson':32} {'words':>6} {'sent.':>5} {'mean':>5} {'p90':>5} {'code':>5} {'mach.':>5} {'share':>6}")
    for row in rows:
        print(f"{row['lesson']:32} {row['words']:6} {row['sentences']:5} {row['mean_words_per_sentence']:5} "
              f"{row['p90_words_per_sentence']:5} {row['code_lines']:5} {row['machinery_lines']:5} "
              f"{row['machinery_share']:6.1%}")
    if args.longest:
        for path in args.notebooks or LESSONS:
            notebook = nbformat.read(path, as_version=4)
            found = [" ".join(s).replace("\0", ".") for c in notebook.cells if c.cell_type == "markdown"
                     for s in sentences(c.source)]
            for sentence in sorted(found, key=lambda s: -len(s.split()))[:args.longest]:
                print(f"  {path.stem[:2]} ({len(sentence.split())}) {sentence}")
    print(json.dumps({"lessons": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
