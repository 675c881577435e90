"""One notation for every lesson: the glossary's table of symbols, held against what each lesson declares and writes.

The glossary's table (`| symbol | meaning | unit |`) is the one source: one row per symbol, one unit per row. Each
lesson declares the symbols it uses in its parameters cell's metadata (`"iolab": {"symbols": [...]}`), beside the
`# X:` comments that name a parameter's symbol. The test holds three things to the table and to that declaration:

* the declaration: every symbol in it has a row in the table;
* every `# X:` comment in the parameters cell: X is declared, and the parameter's unit (read from its name: `_ms`,
  `_s` or `seconds` is a time, `_rps` or `rate` a rate, `_bytes` or `_kib` a size, anything else a count) is the
  unit the table gives X;
* every formula in the lesson's markdown that the rule below reads: each symbol in it is declared, and a lesson
  writes a law one way only (two formulas over the same symbols must be the same text).

The rule for a formula: outside links, HTML, TeX and quotations (a paper's title), with each code span read as a
number, a symbol, `=`, then an expression of symbols, numbers and operators (`+ - − · × * / ( ) ⌈ ⌉ √`, and `=` in a
chain such as `R = N / X = N · Z / P`), such as `X = N / (Z + R)`. A symbol is one letter (Latin or Greek), with an
optional `_subscript` or digits: D_c stands for D, whose meaning and unit it keeps. Two operands meet only through an
operator, or with no space between them (`λR`, `2T`, `λ(1 + r)`); an operand after a space with no operator ends the
formula, so `X = P / Z calls a second` reads `X = P / Z`, and a word such as `min(` ends it too. A formula with no
symbol on its right (`Z = 200`) sets a value and states no law. Two formulas are one law when they use the same
symbols; a derived result over other symbols is not held to the law's form.
"""

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO / "notebooks"
GLOSSARY = NOTEBOOK_DIR / "glossary.ipynb"
LESSONS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb"))

# The units a table row may give, and the kind of quantity each is.
UNITS = {"s": "time", "req/s": "rate", "calls/s": "rate", "requests": "count", "calls": "count", "connections": "count",
         "threads": "count", "processes": "count", "slots": "count", "subscribers": "count", "rows": "count",
         "bytes": "size", "–": "ratio"}
# A parameter's kind, from how its name ends; the first that matches wins, and a name matching none is a count.
PARAMETER_KINDS = (
    (re.compile(r"(_ms|_s|seconds)$"), "time"),
    (re.compile(r"(_rps|rate)$"), "rate"),
    (re.compile(r"(_bytes|_kib|_mib|_gib)$"), "size"),
    (re.compile(r"(share|ratio)$"), "ratio"),
)
ROW = re.compile(r"^\|\s*(?P<symbol>[^|]+?)\s*\|\s*(?P<meaning>[^|]+?)\s*\|\s*(?P<unit>[^|]+?)\s*\|\s*$")
LETTER = r"[A-Za-zΑ-Ωα-ω]"
SYMBOL = rf"{LETTER}(?:_[A-Za-z0-9]+|\d+)?"
# `name = value  # X: words` (or `a, b = 1, 2  # X: words`, which names the first): the comment's X is a symbol.
COMMENT = re.compile(rf"^(?P<names>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=.*#\s*(?P<symbol>{SYMBOL}):\s", re.MULTILINE)
OPERATOR = r"[+\-−·×*/⌈⌉√()=]"
# An operand glued to the one before it (`λR`, `2T`, `n·T`) or after a space behind an operator.
TOKEN = re.compile(rf"\s*(?P<token>{SYMBOL}(?![a-z]{{2}})|\d+(?:\.\d+)?|{OPERATOR})")
FORMULA_START = re.compile(rf"(?<![\w`′'])(?P<left>{SYMBOL})\s*=\s*")
# Code spans stand for a value (`task_ms`), so they read as a number; links, HTML tags, TeX and quotations (a paper's
# title) are not read.
CODE = re.compile(r"`[^`]*`")
NOT_READ = re.compile(r"\]\([^)]*\)|<[^>]+>|\$\$.*?\$\$|\$[^$\n]*\$|\"[^\"\n]*\"", re.DOTALL)


def table(notebook):
    """{symbol: (meaning, unit)} from the glossary's one table of symbols; a symbol given twice fails."""
    rows, inside = {}, False
    for cell in notebook.cells:
        for line in cell.source.splitlines() if cell.cell_type == "markdown" else ():
            inside = line.startswith("| symbol |") or (inside and line.startswith("|"))
            match = ROW.match(line) if inside else None
            if not match or match["symbol"] in ("symbol", "---"):
                continue
            assert match["symbol"] not in rows, f"the glossary gives {match['symbol']} two rows"
            rows[match["symbol"]] = (match["meaning"], match["unit"])
    return rows


def parameters_cell(notebook):
    cells = [cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(cells) == 1, f"a lesson has one parameters cell, this one has {len(cells)}"
    return cells[0]


def declared(notebook):
    """The symbols a lesson declares: its parameters cell's metadata, "iolab": {"symbols": [...]}; None if none."""
    symbols = parameters_cell(notebook).metadata.get("iolab", {}).get("symbols")
    return None if symbols is None else list(symbols)


def parameter_kind(name):
    return next((kind for pattern, kind in PARAMETER_KINDS if pattern.search(name)), "count")


def comments(notebook):
    """(parameter, symbol) for every `# X:` comment in the parameters cell."""
    return [(match["names"].split(",")[0].strip(), match["symbol"])
            for match in COMMENT.finditer(parameters_cell(notebook).source)]


def formula_at(text, start):
    """The expression that starts at `start` by the module's rule, as (text, its symbols)."""
    end, symbols, after_operand = start, [], False
    while match := TOKEN.match(text, end):
        token, glued = match["token"], match.start("token") == end
        binary, opening, closing = token in "+-−·×*/=", token in "(⌈√", token in ")⌉"
        if after_operand and not (binary or closing or glued):
            break  # an operand after a space with no operator: the sentence goes on in words
        if not after_operand and (closing or binary and token not in "-−"):
            break
        if re.fullmatch(SYMBOL, token):
            symbols.append(token[0])  # D_c is D for one part of the system: its letter's meaning
        after_operand = not (binary or opening)
        end = match.end()
    return text[start:end].strip(), symbols


def formulas(notebook):
    """(formula, its symbols, the symbol on its left) for every formula in the lesson's markdown."""
    found = []
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        text = CODE.sub("0", NOT_READ.sub(" ", cell.source))
        read_to = 0
        for match in FORMULA_START.finditer(text):
            if match.start() < read_to:
                continue  # the middle of a chain such as R = N / X = N · Z / P, read with its start
            right, symbols = formula_at(text, match.end())
            read_to = match.end() + len(right)
            right = right.rstrip("+-−·×*/( ").strip()
            if symbols:
                found.append((f"{match['left']} = {right}", {match["left"][0], *symbols}, match["left"][0]))
    return found


def normalized(formula):
    return re.sub(r"\s+", "", formula).replace("×", "·").replace("*", "·")


def clashes(notebook, rows):
    """Every way one lesson breaks the notation, as sentences; none when it keeps it."""
    found = []
    symbols = declared(notebook)
    if symbols is None:
        found.append("its parameters cell declares no symbols (metadata iolab.symbols, a list, empty if none)")
        symbols = []
    found += [f"declares {symbol}, which the glossary's table lacks" for symbol in symbols if symbol not in rows]
    for name, symbol in comments(notebook):
        symbol = symbol[0] if re.fullmatch(SYMBOL, symbol) else symbol
        if symbol not in symbols:
            found.append(f"`{name}  # {symbol}:` names {symbol}, which it does not declare")
        elif symbol in rows and parameter_kind(name) != UNITS.get(rows[symbol][1]):
            found.append(f"`{name}  # {symbol}:` is a {parameter_kind(name)}, but {symbol} is"
                         f" {rows[symbol][0]!r} in {rows[symbol][1]}")
    laws = {}
    for formula, used, _left in formulas(notebook):
        found += [f"{formula!r} uses {symbol}, which it does not declare" for symbol in sorted(used - set(symbols))]
        key = frozenset(used)
        if len(key) > 1:
            laws.setdefault(key, set()).add(normalized(formula))
    found += [f"writes one law {len(ways)} ways: {sorted(ways)}" for ways in laws.values() if len(ways) > 1]
    return found


def test_the_glossary_table_gives_each_symbol_one_meaning_and_one_unit():
    rows = table(nbformat.read(GLOSSARY, as_version=4))
    assert len(rows) > 10, "the glossary's table of symbols was not found"
    bad_units = {symbol: unit for symbol, (_, unit) in rows.items() if unit not in UNITS}
    assert not bad_units, f"a row's unit must be one of {sorted(UNITS)}, got {bad_units}"
    two_senses = {symbol: meaning for symbol, (meaning, _) in rows.items() if re.search(r"\(lessons? [\d, ]+\);", meaning)}
    assert not two_senses, f"a row gives a symbol two senses: {two_senses}"


# Lessons whose notation is not yet the glossary's, each with why (strict: once one keeps it, its mark must go).
NOT_YET: dict[str, str] = {}


@pytest.mark.parametrize("path", [pytest.param(path, marks=pytest.mark.xfail(reason=NOT_YET[path.stem], strict=True))
                                  if path.stem in NOT_YET else path for path in LESSONS],
                         ids=[path.stem for path in LESSONS])
def test_each_lesson_keeps_the_glossarys_notation(path):
    rows = table(nbformat.read(GLOSSARY, as_version=4))
    found = clashes(nbformat.read(path, as_version=4), rows)
    assert not found, f"{path.name} breaks the notation of glossary.ipynb#symbols:\n  " + "\n  ".join(found)


def lesson(tmp_path, parameters, markdown, symbols):
    """A synthetic lesson: a markdown cell and a parameters cell declaring `symbols` (None: no declaration)."""
    metadata = {"tags": ["parameters"]} if symbols is None else {"tags": ["parameters"], "iolab": {"symbols": symbols}}
    cell = nbformat.v4.new_code_cell(parameters, metadata=metadata)
    path = tmp_path / "99-planted.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(markdown), cell]), path)
    return nbformat.read(path, as_version=4)


def test_the_rule_reads_formulas_as_the_docstring_says(tmp_path):
    text = ("Little's law: X = N / (Z + R) answers a second, or `X = 3` in code, and L = λR. Then λ(1 + r)·Z, with "
            "P = X · Z calls at once; T = 200 ms sets a value.")
    found = [formula for formula, _, _ in formulas(lesson(tmp_path, "quick = False", text, []))]
    assert found == ["X = N / (Z + R)", "L = λR", "P = X · Z"]


def test_a_planted_clash_fails(tmp_path):
    rows = table(nbformat.read(GLOSSARY, as_version=4))
    kept = lesson(tmp_path, "wait_ms = 200  # Z: each call's wait\nusers = 4  # N: users",
                  "Each user waits Z, so X = N / Z.", ["N", "Z", "X"])
    assert clashes(kept, rows) == []
    planted = {
        "a symbol in two senses": ("rows = 500  # R: rows of a query", "R = X · D", ["R", "X", "D"]),
        "an undeclared symbol in a formula": ("users = 4  # N: users", "X = N / Z", ["N", "X"]),
        "a symbol the table lacks": ("semaphore = 4  # s: a semaphore", "", ["s"]),
        "a law two ways": ("users = 4  # N: users", "X = N / Z, so N = X · Z", ["N", "X", "Z"]),
        "no declaration": ("users = 4", "", None),
    }
    for name, (parameters, markdown, symbols) in planted.items():
        assert clashes(lesson(tmp_path, parameters, markdown, symbols), rows), f"{name} went unseen"

