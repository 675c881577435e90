"""Every client kind in clients.kinds against a real server: rows by field name, nothing left behind, bad options named."""

import importlib
import re
from pathlib import Path

import psutil
import pytest

from helpers import table_rows
from iolab import load, servers
from iolab.clients import kinds
from iolab.params import ParameterError

README = Path(kinds.__file__).with_name("README.md")

# Each kind's options for a short run, and one bad option with the name its refusal must give.
CASES = {
    "closed_async": ({"think_s": 0.001}, {"think_s": -1}),
    "closed_raw": ({"connect_first": True}, {"connect_first": "yes"}),
    "closed_sync": ({"keep_alive": False}, {"keep_alive": "no"}),
    "open": ({"rate_rps": 400, "schedule": "poisson", "seed": 3}, {"rate_rps": 0}),
    "pipelined": ({"pipeline_depth": 4, "pipeline_paths": ["/", "/async-sleep?ms=1"]}, {"pipeline_depth": 0}),
    "batch": ({"depth": 4}, {"depth": 257}),
    "library": ({"library": "tornado"}, {"library": "curl"}),
    "subscribers": ({"transport": "sse", "publish": True}, {"transport": "pigeon"}),
}
REQUESTS, CONCURRENCY = 40, 4


def test_every_kind_has_a_case_here_and_runs_under_load():
    # A new kind without a case here fails this test, as a new server without a README row fails test_layout.
    assert kinds.names() == sorted(CASES)
    for name in kinds.names():
        info = kinds.get(name)
        module = importlib.import_module(f"iolab.clients.{info.module}")
        assert callable(getattr(module, "run", None)), f"clients/{info.module}.py has no run()"
        assert set(CASES[name][0]) <= set(info.option_names)
        assert load.LoadSpec("http://127.0.0.1:9/", kind=name, **CASES[name][0]).kind == name


def readme_kinds():
    """{kind: its cells} from the table of kinds in clients/README.md."""
    return table_rows(README.read_text(), "clients/README.md", ("kind", "module", "options", "concurrency"))


def test_the_readme_table_of_kinds_matches_the_registry():
    rows = readme_kinds()
    assert sorted(rows) == kinds.names(), "clients/README.md's table and kinds.KINDS name different kinds"
    for name, (_, module, options, _) in rows.items():
        info = kinds.get(name)
        assert module.startswith(f"`{info.module}.py`"), f"clients/README.md: {name} lives in {info.module}.py"
        listed = set(re.findall(r"`(\w+)`", options))
        assert listed == set(info.option_names), (
            f"clients/README.md: {name}'s options are {list(info.option_names)}, the table says {sorted(listed)}"
        )


def test_the_package_lists_each_of_its_modules_once():
    # clients/__init__.py says which side of the client process's pipe each module is on: all of them, no ghosts.
    import iolab.clients

    rows = re.findall(r"^([a-z_]+(?:, [a-z_]+)*) {2,}\S", iolab.clients.__doc__, re.MULTILINE)
    listed = [name for row in rows for name in row.split(", ")]
    modules = sorted(path.stem for path in README.parent.glob("*.py") if path.stem != "__init__")
    assert len(modules) > 15 and sorted(listed) == modules, f"listed {sorted(listed)}, the package holds {modules}"


def test_the_shared_spec_holds_only_what_every_kind_uses():
    shared = [field for field in load.LoadSpec.__dataclass_fields__ if field not in ("kind", "options")]
    assert shared == ["url", "requests", "concurrency", "timeout_s", "max_duration_s", "processes", "record",
                      "event_loop"]
    for name in kinds.names():
        assert not set(shared) & set(kinds.get(name).option_names), name


@pytest.fixture(scope="module")
def batch_server():
    # tornado_app does not echo a request's number; the batch client checks every one, so it needs this server.
    with servers.serve("pipeline_batch_app") as server:
        yield server


@pytest.fixture(scope="module")
def push_server():
    # Subscribers need a server that pushes: tornado_app has no /sse.
    with servers.serve("tornado_push") as server:
        yield server


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_kind_runs_against_a_real_server(name, tornado, batch_server, push_server):
    good, _ = CASES[name]
    descriptors = psutil.Process().num_fds()
    children = {child.pid for child in psutil.Process().children(recursive=True)}  # the servers, started before
    counts = kinds.get(name).loop == "batch"  # it keeps no rows: its totals come in its done frame
    pushed = kinds.get(name).loop == "push"  # rows of messages the server pushed; its report holds /publish's answers
    server = batch_server if counts else push_server if pushed else tornado
    result = load.run_load(server.url + "/", kind=name, requests=REQUESTS,
                           concurrency=CONCURRENCY, timeout_s=10, max_duration_s=30, **good)
    assert result.spec.kind == name and result.stop_reason == "completed"
    if counts:
        (report,) = result.reports
        assert report["errors"] == {} and report["requests"] == REQUESTS and report["seconds"] > 0
        assert len(result.samples) == 0
    else:
        assert result.completed == REQUESTS and result.errors == 0 and (pushed or not result.reports)
        for sample in result.samples:
            assert sample.status == 200 and sample.error is None and sample.bytes > 0
            assert 0 <= sample.start <= sample.end and sample.connection >= 0
            assert sample.latency_from_intended >= sample.latency >= 0
        users = {sample.user for sample in result.samples}
        assert len(users) == (REQUESTS if name == "open" else CONCURRENCY)  # an open loop's user is an arrival
    assert psutil.Process().num_fds() <= descriptors, "a run left file descriptors open"
    left = [child.cmdline() for child in psutil.Process().children(recursive=True) if child.pid not in children]
    assert not left, f"a run left processes behind: {left}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_options_are_refused_by_name(name):
    good, bad = CASES[name]
    (option, value), = bad.items()
    with pytest.raises(ParameterError) as raised:
        kinds.options_for(name, **(good | bad))
    assert option in str(raised.value) and repr(value) in str(raised.value)


@pytest.mark.parametrize("name", kinds.names())
def test_an_option_of_another_kind_is_refused_with_the_kinds_that_take_it(name):
    other = next(option for other in kinds.names() for option in kinds.get(other).option_names
                 if option not in kinds.get(name).option_names)
    with pytest.raises(ParameterError) as raised:
        load.LoadSpec("http://127.0.0.1:9/", kind=name, **CASES[name][0], **{other: 1})
    assert f"{other} is not an option of the {name!r} client kind" in str(raised.value)
    assert all(taker in str(raised.value) for taker in kinds.takers(other))
