"""Show teaching code from the file it runs from, so what a student reads is what runs."""

import ast
import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from IPython.display import Code

from .servers import SERVERS_DIR


def source(obj: ModuleType | type | Callable[..., Any]) -> Code:
    """A module, class or function from lib/, highlighted."""
    return Code(inspect.getsource(obj), language="python")


def server_source(name: str, *names: str) -> Code:
    """servers/<name>.py whole, or only the top-level classes and functions called `names`, in file order."""
    path = Path(SERVERS_DIR) / f"{name}.py"
    text = path.read_text()
    if not names:
        return Code(text, language="python")
    lines = text.splitlines()
    top_level = ast.parse(text).body
    wanted: list[str] = []
    for node in top_level:
        if getattr(node, "name", None) in names:
            first = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])])
            wanted.append("\n".join(lines[first - 1 : node.end_lineno]))
    missing = set(names) - {getattr(node, "name", None) for node in top_level}
    if missing:
        raise ValueError(f"servers/{name}.py has no top-level {sorted(missing)}")
    return Code("\n\n\n".join(wanted), language="python")
