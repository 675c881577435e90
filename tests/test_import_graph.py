"""The import graph of lib/iolab: no circle, and no import up a floor.

Read from the source with test_layout's reader (module-level and function-level
imports alike) and its floors (the core below the lessons). Two circles count:
between modules, and between rooms (a flat core module, a core package such as
iolab.clients, a lesson): a module of a package that imports a module which uses
that package imports upward, as clients/batch.py once imported iolab.load.
"""

import pytest
import test_layout as layout

# Every module's own packages run before it, whatever it imports: an import of one of them adds nothing.
ROOT = "iolab"


def is_own_package(imported, name):
    return name.startswith(imported + ".")


def import_graph():
    """{module: the iolab modules it imports}, over layout.LIB_MODULES (a test may point it at a planted package).

    Importing iolab.clients.kinds runs iolab.clients first: the packages on the way count as imported too.
    """
    modules = layout.LIB_MODULES
    graph = {}
    for name in modules:
        reached = set()
        for module in layout.imported_modules(name):
            parts = module.split(".")
            reached.update(".".join(parts[:depth]) for depth in range(1, len(parts) + 1))
        graph[name] = sorted(module for module in reached
                             if module in modules and module != name and not is_own_package(module, name))
    return graph


def room(name):
    """The room a module belongs to: its lesson, its core package (iolab.clients), or itself (a flat core module)."""
    lesson = layout.lesson_of(name)
    if lesson is not None:
        return f"{ROOT}.lessons.{lesson}"
    parts = name.split(".")
    return ".".join(parts[:2]) if layout.is_core(name) and len(parts) > 2 else name


def floor(name):
    """test_layout's floors: the core (0) below the lessons (1)."""
    return 0 if layout.is_core(name) else 1


def room_graph(graph):
    """{room: the rooms its modules import}, each edge with the module imports that make it."""
    rooms = {}
    for name, imported in graph.items():
        for module in imported:
            if room(module) != room(name):
                rooms.setdefault(room(name), {}).setdefault(room(module), []).append(f"{name} → {module}")
    return rooms


def circles(edges):
    """Each circle in a graph {node: targets}, as the shortest path round it from its first node, sorted."""
    found = []
    for component in strongly_connected(edges):
        start = min(component)
        found.append(shortest_way_back(edges, start, component))
    return sorted(found)


def strongly_connected(edges):
    """The groups of nodes that reach each other (Tarjan's algorithm), those of two nodes or more."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group, member = set(), None
            while member != node:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
            if len(group) > 1:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def shortest_way_back(edges, start, within):
    """[start, ..., start]: the shortest way round through `within`, found breadth first."""
    came_from, frontier = {start: None}, [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(edges.get(node, ())):
                if target == start:
                    path = [node]
                    while came_from[path[-1]] is not None:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target in within and target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"{start} is in a circle but no way back was found")


def upward(graph):
    """Every import of a module on a higher floor than its importer's."""
    return sorted(f"{name} → {module}" for name, imported in graph.items() for module in imported
                  if floor(module) > floor(name))


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_graph_holds_what_the_rules_need(graph):
    # Guards the reading: a module-level import, a function-level one, and the rooms and floors it sorts them into.
    assert "iolab.clients.kinds" in graph["iolab.load"]
    assert "iolab.environment" in graph["iolab.clients.kinds"], "an import inside a function counts"
    assert "iolab.clients" not in graph["iolab.clients.kinds"], "a module's own package adds no edge"
    assert room("iolab.clients.kinds") == "iolab.clients" and room("iolab.load") == "iolab.load"
    assert room("iolab.lessons.bank.measure") == "iolab.lessons.bank"
    assert floor("iolab.clients.kinds") == floor("iolab.load") < floor("iolab.lessons.bank.measure")
    assert "iolab.load" in room_graph(graph)["iolab.lessons.bank"]


def test_no_module_imports_itself_through_others(graph):
    found = circles(graph)
    assert not found, "import circles in lib/iolab:\n" + "\n".join(" → ".join(circle) for circle in found)


def test_no_room_imports_a_room_that_uses_it(graph):
    # A module of a package importing a module that uses the package: an upward import, though both are core.
    rooms = room_graph(graph)
    found = circles({name: sorted(targets) for name, targets in rooms.items()})
    described = [" → ".join(circle) + ": " + "; ".join(
        edge for a, b in zip(circle, circle[1:]) for edge in rooms[a][b]) for circle in found]
    assert not found, "rooms of lib/iolab that import each other:\n" + "\n".join(described)


def test_no_import_goes_up_a_floor(graph):
    found = upward(graph)
    assert not found, "the core imports a lesson:\n" + "\n".join(found)


# A tiny package to plant faults in: each fault alone must be caught, and the clean package must pass.
CLEAN = {
    "iolab/__init__.py": '"""The package."""\n',
    "iolab/top.py": '"""Uses the package below it."""\nfrom .pkg import low\n',
    "iolab/pkg/__init__.py": '"""A concept that is a package."""\n',
    "iolab/pkg/low.py": '"""Below top."""\nfrom .. import base\n',
    "iolab/base.py": '"""The floor of the core."""\n',
    "iolab/a.py": '"""One module."""\nfrom . import b\n',
    "iolab/b.py": '"""Another."""\n\n\ndef later():\n    import iolab.base\n',
    "iolab/lessons/__init__.py": '"""The lessons."""\n',
    "iolab/lessons/demo/__init__.py": '"""A lesson."""\nfrom . import model\n',
    "iolab/lessons/demo/model.py": '"""Its model."""\nfrom iolab import top\nfrom . import helper\n',
    "iolab/lessons/demo/helper.py": '"""Its helper."""\n',
}
PLANTED = {
    "module circle": ("iolab/b.py", '"""Another."""\n\n\ndef later():\n    from . import a\n'),
    "room circle": ("iolab/pkg/low.py", '"""Below top."""\nfrom .. import base, top\n'),
    # A module of the package below top imports top, in a function: the rooms circle, the modules do not.
    "room circle only": ("iolab/pkg/other.py", '"""Beside low."""\n\n\ndef run():\n    from .. import top\n'),
    # base imports only the helper, but the lesson's __init__ runs first and reaches base again through its model.
    "circle through a package": ("iolab/base.py", '"""The floor of the core."""\nfrom .lessons.demo import helper\n'),
    "upward import": ("iolab/a.py", '"""One module."""\nfrom . import b\nfrom .lessons.demo import helper\n'),
}


def plant(tmp_path, monkeypatch, fault=None):
    files = dict(CLEAN)
    if fault is not None:
        path, text = PLANTED[fault]
        files[path] = text
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    modules = {}
    for path in sorted(tmp_path.rglob("*.py")):
        parts = path.relative_to(tmp_path).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    monkeypatch.setattr(layout, "LIB_MODULES", modules)
    graph = import_graph()
    rooms = room_graph(graph)
    return {
        "module circle": circles(graph),
        "room circle": circles({name: sorted(targets) for name, targets in rooms.items()}),
        "upward import": upward(graph),
    }


def test_the_clean_package_passes(tmp_path, monkeypatch):
    assert plant(tmp_path, monkeypatch) == {"module circle": [], "room circle": [], "upward import": []}


def test_a_planted_module_circle_is_caught_through_a_function_level_import(tmp_path, monkeypatch):
    found = plant(tmp_path, monkeypatch, "module circle")
    assert found["module circle"] == [["iolab.a", "iolab.b", "iolab.a"]]
    assert found["room circle"] == [["iolab.a", "iolab.b", "iolab.a"]] and found["upward import"] == []


def test_a_planted_import_into_a_module_that_uses_the_package_is_caught(tmp_path, monkeypatch):
    # pkg.low → top → pkg.low is a module circle too; the room circle names it as the package's.
    found = plant(tmp_path, monkeypatch, "room circle")
    assert found["room circle"] == [["iolab.pkg", "iolab.top", "iolab.pkg"]]
    assert found["upward import"] == []


def test_a_planted_room_circle_without_a_module_circle_is_caught(tmp_path, monkeypatch):
    # The module graph has no circle here (pkg.other → top → pkg.low), only the rooms do: the batch → load case.
    found = plant(tmp_path, monkeypatch, "room circle only")
    assert found["module circle"] == []
    assert found["room circle"] == [["iolab.pkg", "iolab.top", "iolab.pkg"]]


def test_a_planted_upward_import_is_caught(tmp_path, monkeypatch):
    found = plant(tmp_path, monkeypatch, "upward import")
    # The lesson's packages run first, so they are imported too.
    assert found["upward import"] == ["iolab.a → iolab.lessons", "iolab.a → iolab.lessons.demo",
                                      "iolab.a → iolab.lessons.demo.helper"]
    assert found["module circle"] == found["room circle"] == []  # nothing leads back to a: only the floors tell


def test_importing_a_module_runs_its_packages_and_a_circle_through_them_is_caught(tmp_path, monkeypatch):
    found = plant(tmp_path, monkeypatch, "circle through a package")
    assert found["module circle"] == [["iolab.base", "iolab.lessons.demo", "iolab.lessons.demo.model", "iolab.top",
                                       "iolab.pkg.low", "iolab.base"]]
