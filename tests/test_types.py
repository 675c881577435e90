"""The core's annotations, checked by mypy as make test checks them.

mypy reads its settings from pyproject.toml ([tool.mypy]) and keeps its cache in
.mypy_cache, so a second run takes well under a second.
"""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# A small core module and the annotation its function returns; the plant makes it claim a str.
PLANTED_MODULE = REPO / "lib" / "iolab" / "percentiles.py"
RIGHT_RETURN = "fraction: float) -> float:"
WRONG_RETURN = "fraction: float) -> str:"


def mypy(*paths):
    """mypy over `paths` (the configured core when none), from the repository's root: (exit code, its report)."""
    done = subprocess.run([sys.executable, "-m", "mypy", *map(str, paths)], cwd=REPO, capture_output=True, text=True,
                          timeout=240)
    return done.returncode, done.stdout + done.stderr


def test_the_core_states_its_types_and_keeps_them():
    code, report = mypy()
    assert code == 0, f"mypy found errors in the core:\n{report}"
    assert "Success: no issues found" in report


def test_a_wrong_return_type_is_caught(tmp_path):
    source = PLANTED_MODULE.read_text()
    assert source.count(RIGHT_RETURN) == 1, "percentiles.percentile changed its signature: update the plant"
    right, wrong = tmp_path / "right" / "percentiles.py", tmp_path / "wrong" / "percentiles.py"
    for copy, text in ((right, source), (wrong, source.replace(RIGHT_RETURN, WRONG_RETURN))):
        copy.parent.mkdir()
        copy.write_text(text)
    # The same settings pass the module as it is, so the failure below is the plant's alone.
    code, report = mypy(right)
    assert code == 0, report
    code, report = mypy(wrong)
    assert code == 1, report
    assert 'Incompatible return value type (got "float", expected "str")' in report, report
