"""The project's set-up files agree with each other, and the notebooks follow the house rules (modules: test_layout.py)."""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
# The lessons; the other notebook is the glossary, a page of markdown that runs nothing.
LESSONS = sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))
PAGES = {"glossary.ipynb"}
REPO2DOCKER = Path(sys.executable).parent / "jupyter-repo2docker"


def requirement_lines(text):
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_environment_yml_pip_list_equals_binder_requirements():
    environment = yaml.safe_load((REPO / "environment.yml").read_text())
    assert environment["name"] == "iolab"
    assert environment["channels"] == ["conda-forge"]
    dependencies = environment["dependencies"]
    assert "python=3.11" in dependencies and "pip" in dependencies
    pip_lists = [d["pip"] for d in dependencies if isinstance(d, dict) and "pip" in d]
    assert len(pip_lists) == 1, "environment.yml needs exactly one `pip:` list"
    assert pip_lists[0] == requirement_lines((REPO / "binder" / "requirements.txt").read_text())


def test_binder_requirements_are_pinned():
    requirements = requirement_lines((REPO / "binder" / "requirements.txt").read_text())
    unpinned = [line for line in requirements if not re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.]+", line)]
    assert not unpinned, f"pin these with ==: {unpinned}"
    assert any(line.startswith("ipykernel==") for line in requirements)


def test_jupyters_schema_checks_take_the_quick_iri_checker():
    # jsonschema checks IRIs with rfc3987 when it is installed, and otherwise with rfc3987_syntax, which builds an
    # Earley parser on import: about 3 s in every process that imports nbformat or starts Jupyter (a lesson's
    # papermill run, JupyterLab, a student's server). binder/requirements.txt pins rfc3987 to keep those 3 s away.
    code = "import sys, nbformat, jsonschema._format; print(sorted(m for m in sys.modules if m.startswith('rfc3987')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['rfc3987']", f"jsonschema's IRI checker came from {loaded.strip()}"


def test_repo2docker_dockerfile_installs_requirements_and_runs_postbuild():
    assert REPO2DOCKER.exists(), f"{REPO2DOCKER} missing: install requirements-dev.txt (make test does)"
    # --no-build prints the Dockerfile repo2docker would build, without Docker.
    completed = subprocess.run(
        [str(REPO2DOCKER), "--no-build", "."], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    dockerfile = completed.stdout
    assert "FROM " in dockerfile, f"no Dockerfile printed; stderr:\n{completed.stderr}"
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in dockerfile
    assert "RUN ./binder/postBuild" in dockerfile
    apt_install = re.search(r"^apt-get install --yes --no-install-recommends (.*) &&", dockerfile, re.MULTILINE)
    assert apt_install, "binder/apt.txt is not installed"
    assert set(apt_install.group(1).split()) == set(requirement_lines((REPO / "binder" / "apt.txt").read_text()))
    # The COPY of requirements.txt must come before pip reads it, and postBuild after the repository lands.
    assert dockerfile.index("src/binder/requirements.txt") < dockerfile.index('-r "binder/requirements.txt"')
    assert dockerfile.index("COPY --chown=0:0 src/ ") < dockerfile.index("RUN ./binder/postBuild")
    assert "python=3.11" in completed.stderr, completed.stderr


def test_postbuild_installs_the_package_from_lib():
    postbuild = REPO / "binder" / "postBuild"
    text = postbuild.read_text()
    assert text.startswith("#!/bin/bash\n") and "\nset -e\n" in text
    assert postbuild.stat().st_mode & 0o111, "binder/postBuild must be executable"
    assert re.search(r"pip install .*--no-deps.* -e \.", text)
    assert (REPO / "binder" / "runtime.txt").read_text().strip() == "python-3.11"


def code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def assigned_names(source):
    names = set()
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stripped(path):
    notebook = nbformat.read(path, as_version=4)
    dirty = [i for i, cell in enumerate(code_cells(notebook)) if cell.outputs or cell.execution_count is not None]
    assert not dirty, f"{path.name}: code cells {dirty} have outputs or execution counts; run `make strip`"
    run_metadata = [key for key in ("papermill", "execution") if key in notebook.metadata]
    run_metadata += [
        f"cell {i}: {key}" for i, cell in enumerate(notebook.cells) for key in ("papermill", "execution") if key in cell.metadata
    ]
    assert not run_metadata, f"{path.name}: run metadata {run_metadata}; run `make strip`"
    assert notebook.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_notebook_second_code_cell_holds_the_parameters(path):
    cells = code_cells(nbformat.read(path, as_version=4))
    assert len(cells) >= 3, f"{path.name}: needs setup, parameters and validation cells"
    parameters = cells[1]
    assert "parameters" in parameters.metadata.get("tags", []), f"{path.name}: second code cell is not tagged `parameters`"
    missing = {"quick", "solutions", "results_path"} - assigned_names(parameters.source)
    assert not missing, f"{path.name}: parameters cell does not define {sorted(missing)}"


def test_notebooks_are_named_by_number_and_title():
    bad = [p.name for p in NOTEBOOKS
           if not re.fullmatch(r"\d\d-[a-z0-9]+(-[a-z0-9]+)*\.ipynb", p.name) and p.name not in PAGES]
    assert not bad, f"notebooks must be NN-kebab-title.ipynb, or one of {sorted(PAGES)}: {bad}"


def readme_test_command():
    """The `make test ...` line of the README's set-up commands, without its comment."""
    readme = (REPO / "README.md").read_text()
    commands = {line.split("#")[0].strip() for line in re.findall(r"^make test\b.*$", readme, re.MULTILINE)}
    assert len(commands) == 1, f"README.md should show one test command, shows {sorted(commands)}"
    return commands.pop()


def test_ci_runs_the_readme_test_command():
    ci = REPO / ".ci" / "run"
    assert ci.stat().st_mode & 0o111, ".ci/run must be executable"
    text = ci.read_text()
    assert "set -euo pipefail" in text
    commands = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == readme_test_command(), f".ci/run ends with {commands[-1]!r}"


LAB_SETTINGS = "jupyter/lab-settings"
BINDER_BADGE = re.compile(
    r"\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]"
    r"\(https://mybinder\.org/v2/gh/(?P<repository>[\w.-]+/[\w.-]+)/(?P<ref>[\w./-]+)\?urlpath=(?P<urlpath>[^)\s]+)\)"
)


def make_lab_recipe():
    """The command line of the Makefile's `lab` target."""
    recipe = re.search(r"^lab:.*\n\t(.*)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert recipe, "Makefile has no `lab` target with a recipe"
    return recipe.group(1)


def start_notebook():
    """The notebook `make lab` opens, relative to the repository."""
    opened = re.findall(r"\bnotebooks/[\w.-]+\.ipynb\b", make_lab_recipe())
    assert len(opened) == 1, f"make lab should open one notebook: {opened}"
    return opened[0]


def test_make_lab_opens_the_first_lesson_with_the_labs_own_settings():
    assert start_notebook() == LESSONS[0].relative_to(REPO).as_posix()
    assert f"--LabApp.app_settings_dir=$(CURDIR)/{LAB_SETTINGS}" in make_lab_recipe()
    overrides = json.loads((REPO / LAB_SETTINGS / "overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false" and notification["checkForUpdates"] is False


def test_binder_badge_the_repo2docker_image_and_the_start_notebook_agree():
    readme = (REPO / "README.md").read_text()
    badges = list(BINDER_BADGE.finditer(readme))
    assert len(badges) == 1, (
        "README.md needs exactly one Binder badge, [![Binder](...badge_logo.svg)](...v2/gh/ORG/REPO/REF?urlpath=...)"
    )
    badge = badges[0]
    # One place names the repository: no other Binder or GitHub link in the README or binder/.
    texts = [readme, *(path.read_text() for path in sorted((REPO / "binder").iterdir()) if path.is_file())]
    links = [link for text in texts for link in re.findall(r"mybinder\.org/v2/\S+|github\.com/[\w.-]+/[\w.-]+", text)]
    assert len(links) == 1, f"the repository should be named once, in the badge; found {links}"
    # The badge opens JupyterLab at the notebook `make lab` opens.
    assert badge["urlpath"] == f"lab/tree/{start_notebook()}"
    assert any(line.startswith("jupyterlab==") for line in requirement_lines((REPO / "binder" / "requirements.txt").read_text()))

    completed = subprocess.run(
        [str(REPO2DOCKER), "--no-build", "."], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    dockerfile = completed.stdout
    # lab/tree/ paths start at the repository: repo2docker puts it in the home directory JupyterLab starts in.
    assert "ARG REPO_DIR=${HOME}" in dockerfile and "WORKDIR ${REPO_DIR}" in dockerfile
    assert "COPY --chown=0:0 src/ ${REPO_DIR}/" in dockerfile
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in dockerfile
    # postBuild copies the lab's settings into the image's JupyterLab, the file `make lab` points to.
    assert "RUN ./binder/postBuild" in dockerfile
    postbuild = (REPO / "binder" / "postBuild").read_text()
    assert f"cp {LAB_SETTINGS}/overrides.json " in postbuild and "/settings/overrides.json" in postbuild


# Where lib/ and servers/ name a program they run: looked up (find_program, missing_reason, which), given as an
# argument list (["ss", "-ltn", ...]), or needed by a registry entry (needs_programs=("nginx",)).
PROGRAM_LOOKUP = re.compile(r'(?:find_program|missing_reason|which)\(\s*"([A-Za-z][\w.+-]*)"')
PROGRAM_ARGV = re.compile(r'\[\s*"([A-Za-z][\w.+-]*)",\s*f?"-')
PROGRAM_NEEDED = re.compile(r"needs_programs=\(([^)]*)\)")


# A notebook's shell escape (`!wrk ...`) runs a program too.
PROGRAM_SHELL = re.compile(r"^\s*!\s*([A-Za-z][\w.+-]*)", re.MULTILINE)


def code_of(path):
    """A Python file's text, or the code cells of a notebook."""
    if path.suffix != ".ipynb":
        return path.read_text()
    return "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")


def files_that_may_run_programs():
    return (sorted((REPO / "lib").rglob("*.py")) + sorted((REPO / "servers").glob("*.py"))
            + sorted((REPO / "notebooks").glob("*.ipynb")))


def programs_named():
    """{program: [files that name it]} over lib/, servers/ and the lessons' code cells."""
    found = {}
    for path in files_that_may_run_programs():
        text = code_of(path)
        names = set(PROGRAM_LOOKUP.findall(text)) | set(PROGRAM_ARGV.findall(text)) | set(PROGRAM_SHELL.findall(text))
        names |= {name for group in PROGRAM_NEEDED.findall(text) for name in re.findall(r'"([\w.+-]+)"', group)}
        for name in names:
            found.setdefault(name, []).append(str(path.relative_to(REPO)))
    return found


def test_every_program_a_lesson_calls_is_in_apt_txt_and_in_ci():
    from iolab import environment

    apt = set(requirement_lines((REPO / "binder" / "apt.txt").read_text()))
    ci = (REPO / ".ci" / "run").read_text()
    named = programs_named()
    assert {"wrk", "ab", "nginx", "strace", "ss"} <= set(named), named  # the scan still finds what it should
    unknown = {name: files for name, files in named.items() if name not in environment.DEBIAN_PACKAGES}
    assert not unknown, f"programs the lab runs with no Debian package in environment.DEBIAN_PACKAGES: {unknown}"
    for program, package in environment.DEBIAN_PACKAGES.items():
        assert package in apt, f"{program} is called by the lab but its package {package} is not in binder/apt.txt"
        assert re.search(rf"\b{re.escape(package)}\b", ci), f"{package} is not in .ci/run's install list"


def test_every_file_that_runs_a_program_can_skip_it_with_the_reason():
    """A program run by name is looked up first in the same file, so a missing one is skipped with a sentence (runs of
    every lesson with every optional program off PATH then prove it: tests/tool_paths.py says where)."""
    from iolab import environment

    for path in files_that_may_run_programs():
        text = code_of(path)
        # A shell escape cannot be skipped: a lesson runs its programs through the lab's functions, which look first.
        escaped = set(PROGRAM_SHELL.findall(text)) & set(environment.DEBIAN_PACKAGES)
        assert not escaped, f"{path.relative_to(REPO)} runs {sorted(escaped)} with a shell escape, which cannot skip them"
        for name in set(PROGRAM_ARGV.findall(text)):
            looked_up = re.search(rf'(?:find_program|which)\(\s*"{re.escape(name)}"', text) or "def missing_reason(" in text
            assert looked_up, f"{path.relative_to(REPO)} runs {name} without checking first that it is installed"


def test_the_lab_can_be_told_a_program_is_off(monkeypatch):
    from iolab import contract

    assert contract.find_program("sh")
    monkeypatch.setenv(contract.TOOLS_OFF_VARIABLE, "nginx,sh")
    assert contract.find_program("sh") is None


def test_the_papermill_runs_can_hide_every_optional_program():
    import shutil

    from helpers import without_optional_tools
    from iolab import contract, environment

    before = os.environ.get("PATH")
    with without_optional_tools() as hidden:
        assert set(hidden) == set(environment.DEBIAN_PACKAGES)
        assert all(shutil.which(name) is None and contract.find_program(name) is None for name in hidden)
        assert shutil.which("sh") and subprocess.run(["sh", "-c", "exit 0"], check=False).returncode == 0
    assert os.environ.get("PATH") == before
