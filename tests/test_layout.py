"""The layout's rules, read from the source without importing it.

Core apart from lessons, drawing apart from measuring.
"""

import ast
import re
import sys
from pathlib import Path

import pytest

from helpers import table_rows
from iolab import registry

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "lib" / "iolab"
# Every Python file of ours: each opens with a docstring that says in one line what it is.
OUR_FILES = sorted(
    path
    for folder in ("lib", "servers", "tools", "benchmarks", "tests")
    for path in (REPO / folder).rglob("*.py")
    if "__pycache__" not in path.parts
)

# The only modules that may import a drawing library. The core's are named here;
# a lesson's drawing module is its view.py.
DRAWING_LIBRARIES = {"matplotlib", "IPython", "ipywidgets"}
CORE_DRAWING_MODULES = {"live", "controls", "show", "tables", "figures"}
PURPOSE_LINE_MEDIAN = 65  # characters: a module's first docstring line, said at a glance


def is_lesson_drawing_module(name):
    return name == "view"


def module_name(path):
    """iolab.lessons.bank.view for lib/iolab/lessons/bank/view.py; a package is named by its folder."""
    parts = path.relative_to(REPO / "lib").with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


LIB_MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def is_package(name):
    return LIB_MODULES[name].name == "__init__.py"


def imported_modules(name):
    """Every module `name` imports, anywhere in the file (a lazy import inside a function counts too), absolute."""
    tree = ast.parse(LIB_MODULES[name].read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: count up from this module's package
                package = name.split(".") if is_package(name) else name.split(".")[:-1]
                base = ".".join(package[: len(package) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module
            found.add(base)
            # `from iolab import load` imports the module iolab.load, not just the package.
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in LIB_MODULES)
    return found


def is_core(name):
    """Everything in iolab outside iolab.lessons (the core is flat, but a concept may be a package: iolab.clients)."""
    return name == "iolab" or (name.startswith("iolab.") and name != "iolab.lessons" and not name.startswith("iolab.lessons."))


def lesson_of(name):
    """'bank' for iolab.lessons.bank and everything in it; None outside the lessons."""
    parts = name.split(".")
    return parts[2] if parts[:2] == ["iolab", "lessons"] and len(parts) > 2 else None


def is_drawing_module(name):
    if is_core(name):
        return name.removeprefix("iolab.") in CORE_DRAWING_MODULES
    return lesson_of(name) is not None and is_lesson_drawing_module(name.rsplit(".", 1)[-1])


CORE = sorted(name for name in LIB_MODULES if is_core(name))
LESSON_MODULES = sorted(name for name in LIB_MODULES if lesson_of(name))


def test_the_layout_is_what_these_rules_expect():
    # Guards the rules themselves: a renamed module or a typo in the lists would make them pass vacuously.
    assert {"iolab.contract", "iolab.servers", "iolab.load", "iolab.live"} <= set(CORE)
    assert {f"iolab.{name}" for name in CORE_DRAWING_MODULES} <= set(CORE)
    assert len({lesson_of(name) for name in LESSON_MODULES}) >= 6
    lesson_drawing = [name for name in LESSON_MODULES if is_drawing_module(name)]
    assert "iolab.lessons.io_models.view" in lesson_drawing and "iolab.lessons.bank.view" in lesson_drawing
    assert "iolab.lessons.bank.measure" in imported_modules("iolab.lessons.bank.exercises")
    assert "iolab.checks" in imported_modules("iolab.lessons.bank.exercises")


@pytest.mark.parametrize("name", CORE)
def test_the_core_never_imports_a_lesson(name):
    lessons = sorted(module for module in imported_modules(name) if module == "iolab.lessons" or lesson_of(module))
    assert not lessons, f"{name} is core and imports {lessons}: move what they share into the core"


@pytest.mark.parametrize("name", LESSON_MODULES)
def test_a_lesson_imports_only_the_core_and_itself(name):
    ours = [module for module in imported_modules(name) if module == "iolab" or module.startswith("iolab.")]
    other = sorted(
        module for module in ours if module != "iolab" and not is_core(module) and lesson_of(module) != lesson_of(name)
    )
    assert not other, f"{name} imports {other}: a lesson uses the core and its own package only"


@pytest.mark.parametrize("name", sorted(LIB_MODULES))
def test_only_drawing_modules_import_drawing_libraries(name):
    if is_drawing_module(name):
        return
    imported = imported_modules(name)
    drawing = sorted(module for module in imported if module.split(".")[0] in DRAWING_LIBRARIES)
    assert not drawing, f"{name} measures or computes, and imports {drawing}: drawing belongs in a drawing module"
    # Importing a drawing module would pull the libraries in just the same.
    via = sorted(module for module in imported if module in LIB_MODULES and is_drawing_module(module))
    assert not via, f"{name} imports the drawing modules {via}"


def test_the_contract_needs_only_the_standard_library():
    # servers/ import it, and a server must start without the lab's third-party packages.
    outside = sorted(
        module for module in imported_modules("iolab.contract") if module.split(".")[0] not in sys.stdlib_module_names
    )
    assert not outside, f"iolab.contract imports {outside}; it may use the standard library only"


@pytest.mark.parametrize("path", OUR_FILES, ids=[str(p.relative_to(REPO)) for p in OUR_FILES])
def test_module_has_one_line_docstring(path):
    docstring = ast.get_docstring(ast.parse(path.read_text()), clean=False)
    assert docstring and docstring.strip(), f"{path.relative_to(REPO)}: no module docstring"
    summary, *rest = docstring.strip().split("\n")
    assert summary.strip(), f"{path.relative_to(REPO)}: the docstring's first line must say what the module is"
    # PEP 257: a longer docstring keeps its one-line summary, then a blank line.
    assert not rest or not rest[0].strip(), f"{path.relative_to(REPO)}: docstring summary runs past one line"


def test_purpose_lines_are_short_enough_to_take_in_at_a_glance():
    # tornado/ioloop.py: "An I/O event loop for non-blocking sockets." Detail goes in the paragraph below it.
    lengths = sorted(
        len(ast.get_docstring(ast.parse(path.read_text()), clean=False).strip().split("\n")[0]) for path in OUR_FILES
    )
    median = lengths[len(lengths) // 2]
    assert median <= PURPOSE_LINE_MEDIAN, f"the median module purpose line is {median} characters"


def servers_readme_rows():
    """{server name: its cells} from the table under '## Every server' in servers/README.md."""
    text = (REPO / "servers" / "README.md").read_text()
    assert "\n## Every server\n" in text, "servers/README.md lost its '## Every server' table"
    section = text.split("\n## Every server\n", 1)[1].split("\n## ", 1)[0]
    return table_rows(section, "servers/README.md", ("server", "file", "model", "routes", "at once", "options"))


def test_servers_readme_table_matches_the_registry():
    rows = servers_readme_rows()
    assert sorted(rows) == registry.names(), "servers/README.md's table and registry.SERVERS name different servers"
    for name, info in registry.SERVERS.items():
        _, file, _, routes, at_once, options = rows[name]
        assert f"`{info.script}`" in file, f"servers/README.md: {name} is served by {info.script}"
        listed = set(re.findall(r"`(/[^`]*)`", routes))
        assert listed == set(info.routes), (
            f"servers/README.md: {name}'s routes are {list(info.routes)}, the table says {sorted(listed)}"
        )
        default = info.at_once()
        expected = "no fixed limit" if default is None else str(default)
        assert at_once.startswith(expected), f"servers/README.md: {name} serves {expected} at once by default"
        flags = [option.flag for option in info.options.values()]
        missing = [flag for flag in flags if f"`{flag}" not in options]
        assert not missing, f"servers/README.md: {name}'s options leave out {missing}"
        assert flags or options == "none", f"servers/README.md: {name} takes no options"


LESSON_FOLDERS = sorted(path.name for path in (PACKAGE / "lessons").iterdir() if (path / "__init__.py").exists())


def test_the_readme_layout_names_every_lesson_folder():
    text = (REPO / "README.md").read_text()
    layout = text[text.index("lessons/<topic>/"):].split("\nservers/", 1)[0]
    missing = [folder for folder in LESSON_FOLDERS if not re.search(rf"\b{folder}\b", layout)]
    assert not missing, f"README.md's layout leaves out the lesson folders {missing}"


@pytest.mark.parametrize("lesson", LESSON_FOLDERS)
def test_a_lesson_names_each_module_by_its_role_without_twins(lesson):
    # Twins such as holder.py and holding.py, or limits.py and limit_runs.py, make a reader guess which is which.
    names = sorted(module.rsplit(".", 1)[-1] for module in LESSON_MODULES if lesson_of(module) == lesson)
    names = [name for name in names if name != lesson]  # the package itself
    twins = [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if a[:4] == b[:4]]
    assert not twins, f"lesson {lesson} has modules named alike: {twins}"
    drawing = [name for name in names if "view" in name or "draw" in name]
    assert drawing in ([], ["view"]), f"lesson {lesson}'s drawing module must be view.py, found {drawing}"


def test_the_graded_server_series_is_numbered_without_a_gap():
    # Lesson 05's steps are read in order; a step named otherwise hides where it falls.
    steps = sorted(name for name in registry.names() if re.fullmatch(r"step\d+_\w+", name))
    numbers = [int(re.match(r"step(\d+)", name).group(1)) for name in steps]
    assert numbers == list(range(1, len(steps) + 1)), f"lesson 05's steps are numbered {numbers}: {steps}"
    for name in steps:
        assert registry.get(name).lesson == "05-event-loop-from-scratch", f"{name} is not one of lesson 05's steps"
        assert (REPO / "servers" / f"{name}.py").exists(), f"{name} has no servers/{name}.py"
    assert len(steps) == 5


# One module owns each mechanism: whatever else needs it calls that module.
OWNERS = {
    "starts a process": (r"subprocess\.(Popen|run|call|check_output)\(|os\.fork\(|create_subprocess_", "iolab.children"),
    # a command list that starts with wrk, not a subscript such as runs["wrk"]
    "runs wrk": (r"(?<![\w\])])\[\s*\"wrk\"", "iolab.benchtools"),
    # The header's name alone, to look for its value (a request's "Content-Length: 5" only writes one).
    "cuts HTTP answers apart": (r"[Cc]ontent-[Ll]ength:\s?[\"']|[\"']content-length", "iolab.http1"),
    "reads the kernel's listen counters": (r"/proc/net/netstat|\"ss\", \"-", "iolab.listening"),
    "picks an event loop": (r"import uvloop|(asyncio|uvloop)\.new_event_loop\(", "iolab.clients.event_loops"),
    # Starts a client module of ours as a process and talks to it: the frames of clients.wire and a go line.
    "speaks to a client process": (r"python\(\"-m\", (__name__|\w+\.__name__|\"iolab\.clients)", "iolab.load"),
}
# Modules that do it too, on purpose, each with its reason.
SPEAKS_OTHERWISE = {
    "iolab.lessons.c10k.holding": "the c10k client's JSON lines: the notebook drives it a step at a time (next, stop)",
    "iolab.clients.held_subscribers": "the subscribers kind held open: lesson 12 asks for each message's deliveries"
                                      " and the client's CPU per message while they stay held (wait, add, repoll)",
}
EXCEPTIONS = {"speaks to a client process": SPEAKS_OTHERWISE}


@pytest.mark.parametrize("mechanism", sorted(OWNERS))
def test_one_module_owns_each_mechanism(mechanism):
    pattern, owner = OWNERS[mechanism]
    doing = sorted(name for name, path in LIB_MODULES.items() if re.search(pattern, path.read_text()))
    allowed = EXCEPTIONS.get(mechanism, {})
    assert sorted(set(doing) - set(allowed)) == [owner], f"only {owner} {mechanism}; found {doing}"
    assert set(allowed) <= set(doing), f"{sorted(set(allowed) - set(doing))} no longer {mechanism}: drop the exception"


# Libraries that meter processes (their CPU, memory, descriptors): the laws must not depend on them.
METERING_LIBRARIES = {"psutil"}


def imports_reached(name):
    """Every module that importing `name` runs: its imports, theirs in turn, and each lib module's packages."""
    reached, waiting = set(), [name]
    while waiting:
        for module in imported_modules(waiting.pop()):
            parts = module.split(".")
            for depth in range(1, len(parts) + 1):  # importing iolab.clients.aggregate runs iolab.clients too
                step = ".".join(parts[:depth])
                if step not in reached:
                    reached.add(step)
                    if step in LIB_MODULES:
                        waiting.append(step)
    return reached


def test_the_laws_depend_on_nothing_that_meters_processes():
    # theory is arithmetic on measured figures; a lesson or a test that only computes bounds must not pull in psutil.
    metering = sorted(module for module in imports_reached("iolab.theory") if module in METERING_LIBRARIES)
    assert not metering, f"iolab.theory reaches {metering}: the laws must not import what meters processes"
    # The rule can fail: metrics meters a run's server through usage, and is reached that way.
    assert "psutil" in imports_reached("iolab.metrics")


def test_the_readme_layout_names_every_core_module():
    text = (REPO / "README.md").read_text()
    layout = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    core = sorted(path.stem if path.suffix == ".py" else f"{path.name}/" for path in PACKAGE.iterdir()
                  if path.name != "lessons" and not path.name.startswith("_")
                  and (path.suffix == ".py" or (path / "__init__.py").exists()))
    assert len(core) > 20  # the listing found the core, not an empty folder
    missing = [name for name in core if not re.search(rf"(?<![\w/]){re.escape(name)}(?![\w])", layout)]
    assert not missing, f"README.md's Layout block leaves out the core modules {missing}"


# A call past a few arguments reads by name: a function in lib/ or servers/ takes at most this many by position
# (self and cls not counted), the rest after `*`, or grouped in a small dataclass where they travel together.
MOST_POSITIONAL = 7
# A function is read whole: at most this many lines, except a table of data, named here with why.
MOST_LINES = 60
LONG_TABLES = {"lib/iolab/hostile.py fixed_cases": "the hand-written corpus of hostile requests, one trick a line"}
CODE_FILES = [path for path in OUR_FILES if path.relative_to(REPO).parts[0] in ("lib", "servers")]


def functions(source, label=""):
    """(where, node) for every function in `source`, a method as Class.method: where is 'label Class.method'."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((f"{label} {prefix}{child.name}".strip(), child))
                visit(child, "")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


CODE_FUNCTIONS = [found for path in CODE_FILES for found in functions(path.read_text(), str(path.relative_to(REPO)))]


def positional(function):
    """How many arguments `function` takes by position, not counting a method's self or cls."""
    names = [arg.arg for arg in function.args.posonlyargs + function.args.args]
    return len(names) - (names[:1] in (["self"], ["cls"]))


def length(function):
    return function.end_lineno - function.lineno + 1


def test_no_function_takes_more_than_a_few_arguments_by_position():
    wide = [f"{where} ({positional(node)})" for where, node in CODE_FUNCTIONS if positional(node) > MOST_POSITIONAL]
    assert not wide, f"more than {MOST_POSITIONAL} positional parameters: {wide}; put the rest after `*`"


def test_no_function_is_longer_than_a_reading():
    long = [f"{where} ({length(node)} lines)" for where, node in CODE_FUNCTIONS
            if length(node) > MOST_LINES and where not in LONG_TABLES]
    assert not long, f"functions over {MOST_LINES} lines: {long}; split them by what each part does"


def test_the_signature_and_length_rules_can_fail():
    source = "class A:\n    def f(self, a, b, c, d, e, f, g, h, *, i):\n" + "        pass\n" * MOST_LINES
    ((where, node),) = functions(source)
    assert where == "A.f" and positional(node) == MOST_POSITIONAL + 1 and length(node) > MOST_LINES
    assert set(LONG_TABLES) <= {where for where, _ in CODE_FUNCTIONS}, "a table named here is gone: drop it"
