"""Shared fixtures: no test may leave a child process or a listening socket behind; servers and exercises tests share."""

import importlib
import importlib.util
import os
import pkgutil
import re
import socket
import sys
import time
from pathlib import Path

import psutil
import pytest

import iolab.lessons
from iolab import checks, servers

# Under pytest-xdist (make test), each worker keeps to a CPU of its own: tests/lanes.py.
pytest_plugins = ("lanes",)

ROOT = Path(__file__).resolve().parents[1]
SETTLE_S = 2.0  # how long a stopped child may take to disappear before it counts as leaked


def _children(baseline=frozenset()):
    # Zombies count too: a child nobody reaped is a leak of its own kind.
    return [child for child in psutil.Process().children(recursive=True) if child.pid not in baseline]


def _listening():
    # Asks each of this process's own sockets whether it listens. psutil.Process().net_connections parses the whole
    # machine's /proc/net/tcp instead, which after a load test holds thousands of TIME_WAIT lines: 20-50 ms a call,
    # twice a test, about a minute of the suite.
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            with socket.socket(fileno=os.dup(int(fd))) as sock:
                if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.getsockopt(
                    socket.SOL_SOCKET, socket.SO_ACCEPTCONN
                ):
                    found.add(sock.getsockname()[:2])
        except OSError:  # the fd closed meanwhile, or was listdir's own
            continue
    return found


def _assert_no_leaks(children_before=frozenset(), listening_before=frozenset()):
    deadline = time.monotonic() + SETTLE_S
    while (leaked := _children(children_before)) and time.monotonic() < deadline:
        time.sleep(0.05)
    leaked_sockets = _listening() - listening_before
    descriptions = []
    for child in leaked:
        try:
            descriptions.append(f"pid {child.pid} {' '.join(child.cmdline()[:4])} ({child.status()})")
            child.kill()
        except psutil.NoSuchProcess:
            pass
    assert not descriptions, f"test left child processes behind: {descriptions}"
    assert not leaked_sockets, f"test left listening sockets open: {sorted(leaked_sockets)}"


@pytest.fixture(autouse=True)
def no_leaks():
    """Fail a test that leaves a child process (a server, a client, a kernel) or a listening socket.

    Processes and sockets that module-scoped fixtures set up before the test are
    its baseline; the session check below makes sure those go too.
    """
    children_before = frozenset(child.pid for child in _children())
    listening_before = _listening()
    yield
    _assert_no_leaks(children_before, listening_before)


@pytest.fixture(scope="session", autouse=True)
def nothing_left_at_the_end():
    yield
    _assert_no_leaks()


@pytest.fixture
def python():
    """The interpreter of this environment, for starting helper processes."""
    return sys.executable


@pytest.fixture(scope="module")
def tornado():
    """One Tornado server for a whole test module."""
    with servers.serve("tornado_app") as server:
        yield server


@pytest.fixture(scope="module")
def step4():
    """One step4_event_loop, step 4: the server on the hand-built loop, for a whole test module."""
    with servers.serve("step4_event_loop") as server:
        yield server


def every_exercise():
    """q1, q2, ... of every lesson's exercises module, found by walking iolab.lessons."""
    found = []
    for lesson in pkgutil.iter_modules(iolab.lessons.__path__, "iolab.lessons."):
        if importlib.util.find_spec(f"{lesson.name}.exercises") is None:  # a lesson without exercises
            continue
        module = importlib.import_module(f"{lesson.name}.exercises")
        found += [v for k, v in vars(module).items() if re.fullmatch(r"q\d+", k) and isinstance(v, checks.Exercise)]
    return found


@pytest.fixture
def fresh_exercises():
    """Every lesson's exercises start and end the test unattempted, whatever another test answered."""
    exercises = every_exercise()
    for exercise in exercises:
        exercise.reset()
    yield
    for exercise in exercises:
        exercise.reset()


def pytest_configure(config):
    os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected what they will
def pytest_collection_modifyitems(config, items):
    """Each lesson's filled-in student copy runs once: in the browser when that test is selected and can run there,
    else under papermill (test_make_student.py)."""
    from browser_lab import why_the_lab_cannot_run

    in_browser = {item.callspec.params["path"]: item.nodeid for item in items
                  if getattr(item, "originalname", None) == "test_lesson_runs_in_the_browser"}
    if not in_browser or why_the_lab_cannot_run() is not None:  # the browser test will skip: papermill runs them
        return
    for item in items:
        if getattr(item, "originalname", None) != "test_a_student_copy_as_a_student_answers_it_is_checked":
            continue
        params = item.callspec.params
        if params["answers"] == "right" and params["path"] in in_browser:
            item.add_marker(pytest.mark.skip(reason=f"filled in right, it runs in the browser: {in_browser[params['path']]}"))
