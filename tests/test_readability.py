"""Every lesson reads at the anchors' density, with its proof out of the page (benchmarks/readability.py)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("readability", ROOT / "benchmarks" / "readability.py")
readability = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readability)

MEAN_WORDS, P90_WORDS = 17, 28  # words per sentence: the 500 Lines crawler chapter and learntools sit at or under
MACHINERY_SHARE = 0.15  # parameters, validation, results and assertions, as a share of the code a student reads
START_WORDS = 1200  # lesson 00's prose: a start that starts (its map's table is not prose)


@pytest.mark.parametrize("path", readability.LESSONS, ids=[p.stem for p in readability.LESSONS])
def test_a_lesson_reads_in_short_sentences_with_little_machinery(path):
    row = readability.measure(path)
    assert row["mean_words_per_sentence"] <= MEAN_WORDS and row["p90_words_per_sentence"] <= P90_WORDS, row
    assert row["machinery_share"] <= MACHINERY_SHARE, row
    if path.stem.startswith("00-"):
        assert row["words"] <= START_WORDS, row


def test_the_counts_can_fail():
    long = " ".join(["word"] * 40) + "."
    assert [len(s) for s in readability.sentences(f"{long} Short one. It stays, e.g. here, vs. 1.5 there.")] == [40, 2, 7]
    assert readability.code_lines("assert x > 1\ny = 2\nz = 3\nw = 4\n") == (4, 1)
    assert readability.code_lines("x = 1\nassert x\nassert x\n") == (3, 3)  # a checking cell counts whole
