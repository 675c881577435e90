"""The glossary: a page of its own with one table of symbols, and every link into a notebook lands on its anchor."""

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO / "notebooks"
GLOSSARY = NOTEBOOK_DIR / "glossary.ipynb"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
# A markdown link or an HTML href to a notebook's anchor: (glossary.ipynb#delay), (#The-lessons), href="x.ipynb#y".
LINK = re.compile(r"""(?:\]\(|href=["'])(?P<name>[\w.-]+\.ipynb)?#(?P<anchor>[^)"'\s]+)""")
EXPLICIT = re.compile(r"""<a\s+(?:id|name)=["'](?P<anchor>[^"']+)["']""")
HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*#*\s*$", re.MULTILINE)
# The lab's symbols: every lesson uses each in one sense, and the glossary's table gives them all.
SYMBOLS = ("N", "Z", "θ", "D", "R", "X", "U", "λ", "L", "Q", "c", "k", "w", "T", "t", "S", "n")


def heading_id(text):
    """The id JupyterLab gives a markdown heading: its rendered text, with each space made a hyphen."""
    text = re.sub(r"<[^>]*>", "", text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_`]", "", text)
    return text.replace(" ", "-")


def markdown(path):
    return [cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "markdown"]


def anchors(path):
    """Every anchor a link may name in one notebook: explicit <a id> anchors and its headings' ids."""
    found = set()
    for source in markdown(path):
        found.update(match["anchor"] for match in EXPLICIT.finditer(source))
        found.update(heading_id(match["text"]) for match in HEADING.finditer(source))
    return found


def links(path):
    """(notebook linked, anchor) for every anchored link in one notebook's markdown; a bare #anchor is its own."""
    return [(match["name"] or path.name, match["anchor"]) for source in markdown(path) for match in LINK.finditer(source)]


def test_the_glossary_is_a_page_of_words_with_one_table_of_symbols():
    notebook = nbformat.read(GLOSSARY, as_version=4)
    assert all(cell.cell_type == "markdown" for cell in notebook.cells), "the glossary runs nothing: markdown only"
    assert "Glossary" in anchors(GLOSSARY), "the glossary has no '# Glossary' heading"
    tables = [line for source in markdown(GLOSSARY) for line in source.splitlines() if line.startswith("| symbol |")]
    assert len(tables) == 1, f"the glossary should have one table of symbols, has {len(tables)}"
    rows = {line.split("|")[1].strip() for source in markdown(GLOSSARY) for line in source.splitlines()
            if re.match(r"\|\s*\S+\s*\|", line)}
    assert not set(SYMBOLS) - rows, f"the table of symbols lacks {sorted(set(SYMBOLS) - rows)}"


def test_every_entry_has_an_anchor_of_its_own():
    explicit = [match["anchor"] for source in markdown(GLOSSARY) for match in EXPLICIT.finditer(source)]
    assert len(explicit) == len(set(explicit)), f"anchors used twice: {sorted({a for a in explicit if explicit.count(a) > 1})}"
    entries = [match["text"] for source in markdown(GLOSSARY) for match in HEADING.finditer(source)
               if match.group(0).startswith("### ")]
    bare = [text for text in entries if not EXPLICIT.search(text)]
    assert entries and not bare, f"glossary entries without an <a id> anchor: {bare}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_link_lands_on_its_anchor(path):
    known = {}
    broken = []
    for name, anchor in links(path):
        target = NOTEBOOK_DIR / name
        if not target.exists():
            broken.append(f"{name}#{anchor}: no such notebook")
            continue
        known.setdefault(name, anchors(target))
        if anchor not in known[name]:
            broken.append(f"{name}#{anchor}: no such anchor")
    assert not broken, f"{path.name} links where nothing is: {broken}"


def test_the_link_check_sees_a_broken_anchor(tmp_path):
    source = "[glossary](glossary.ipynb#Glossary), [delay](glossary.ipynb#no-such-word), [top](#Top)\n\n# Top"
    path = tmp_path / "99-example.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(source)]), path)
    assert links(path) == [("glossary.ipynb", "Glossary"), ("glossary.ipynb", "no-such-word"), ("99-example.ipynb", "Top")]
    assert "Top" in anchors(path) and "no-such-word" not in anchors(GLOSSARY) and "Glossary" in anchors(GLOSSARY)
