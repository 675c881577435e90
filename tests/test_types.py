"""The core's annotations, checked by mypy as make test checks them.

mypy reads its settings from pyproject.toml ([tool.mypy]) and keeps its cache in
.mypy_cache, so a second run takes well under a second.
"""

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The core: lib/iolab's own modules and the client processes' (lib/iolab/clients/), every one checked.
CORE_FILES = sorted([*(REPO / "lib" / "iolab").glob("*.py"), *(REPO / "lib" / "iolab" / "clients").glob("*.py")])
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
    assert f"Success: no issues found in {len(CORE_FILES)} source files" in report, (
        f"mypy should check the {len(CORE_FILES)} modules of lib/iolab and lib/iolab/clients ([tool.mypy] files):\n{report}")


def test_no_core_module_is_excused():
    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    excused = []
    for override in settings.get("overrides", []):
        if override.get("ignore_errors"):
            names = override["module"]
            excused += [names] if isinstance(names, str) else names
    assert excused == ["iolab.lessons.*"], f"only the lessons may have their type errors ignored, not {excused}"


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
