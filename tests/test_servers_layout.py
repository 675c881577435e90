"""servers/ says what it holds: a file at its top without a leading `_` is a server in the registry."""

import ast
import re
from pathlib import Path

from iolab import registry

SERVERS = Path(__file__).resolve().parents[1] / "servers"
README = (SERVERS / "README.md").read_text()
ROOT_FILES = sorted(path.name for path in SERVERS.glob("*.py"))
HELPERS = [name for name in ROOT_FILES if name.startswith("_")]
APPS = sorted(path.name for path in (SERVERS / "apps").glob("*.py") if path.name != "__init__.py")


def test_every_file_at_the_top_without_an_underscore_is_a_server_in_the_registry():
    scripts = {info.script for info in registry.SERVERS.values()}
    not_servers = sorted(set(ROOT_FILES) - set(HELPERS) - scripts)
    assert not not_servers, (
        f"servers/{not_servers} are not in the registry: a server gets a ServerInfo, an application a program"
        " imports goes in servers/apps/, a part servers share gets a leading _"
    )


def test_every_server_in_the_registry_has_its_file_at_the_top():
    absent = sorted(f"{name}: {info.script}" for name, info in registry.SERVERS.items()
                    if "/" in info.script or not (SERVERS / info.script).is_file())
    assert not absent, f"these servers' files are not at the top of servers/: {absent}"


def test_no_helper_or_app_is_started_as_a_server():
    # A helper or an app that announces LISTENING, or runs as a script, would be a server by another name.
    for path in [SERVERS / name for name in HELPERS] + [SERVERS / "apps" / name for name in APPS]:
        tree = ast.parse(path.read_text())
        runs = [node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
        assert not runs, f"{path.relative_to(SERVERS)} runs as a script: a server belongs at the top, in the registry"


def test_every_helper_and_app_is_used_by_a_server_and_named_in_the_readme():
    texts = {name: (SERVERS / name).read_text() for name in ROOT_FILES}
    for name in HELPERS + [f"apps/{app}" for app in APPS]:
        module = Path(name).stem
        users = [other for other, text in texts.items()
                 if other != name and re.search(rf"\b(apps[./])?{module}\b", text)]
        assert users, f"servers/{name} is used by no server: remove it, or start what uses it"
        assert f"`{name}`" in README, f"servers/README.md does not say what servers/{name} is"


def test_every_folder_is_a_package_the_readme_names():
    folders = sorted(path.name for path in SERVERS.iterdir() if path.is_dir() and path.name != "__pycache__")
    assert "apps" in folders
    for folder in folders:
        assert (SERVERS / folder / "__init__.py").is_file(), f"servers/{folder}/ is not a package"
        assert f"`{folder}/`" in README, f"servers/README.md's 'What is where' does not name {folder}/"
