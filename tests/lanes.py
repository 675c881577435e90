"""Lanes: under pytest-xdist each worker keeps to a CPU of its own, and a test that needs every core runs alone.

The suite measures: a lesson's claims compare the seconds a run took with a prediction, so two tests must never
share a CPU. With `-n N` (the Makefile passes one worker a usable CPU), worker k is pinned to the k-th CPU: its
tests, the servers and clients they start and the browser they drive all run there, as a student's lab does under
Binder's quota of one CPU, and no two workers' processes meet on a core. The tests whose point is more than one core
(EVERY_CORE) take the whole machine instead: they hold an exclusive lock that keeps every other worker waiting
between its tests, and run with the worker's affinity widened to every CPU. Without xdist nothing here acts.

The lock is a pair of flocks. A worker takes the turnstile, then the lanes lock (shared for a laned test, exclusive
for an every-core one), then lets the turnstile go; a worker waiting for the exclusive lock still holds the
turnstile, so the others cannot keep taking the shared lock past it, and it waits at most for the tests already
running.
"""

import contextlib
import fcntl
import fnmatch
import os
import tempfile
from collections.abc import Iterator

import psutil
import pytest

# Tests whose claims are about more than one core, or that plant hogs on chosen CPUs or read the whole machine's
# CPU time: on one CPU they would check less (threads against processes, a client's threads, a hog per core).
EVERY_CORE = [
    "tests/lessons/workers/*",  # lesson 06: threads and processes on every core
    "tests/lessons/test_exercises.py::*",  # four threads of CPU work on every core and on one
    "tests/lessons/pipelining/*",  # the client's threads: one a usable core, up to four
    "tests/lessons/event_loop/test_probes.py::*",  # a spinning process's share of a CPU
    "tests/test_steps.py::*",  # the same, for the hand-built servers
    "tests/test_neighbours.py::*",  # plants a hog on each CPU and reads the machine's pressure
    "tests/test_environment.py::*",  # reads this process's affinity against the machine's CPUs
    "tests/test_browser.py::*[[]06-workers-threads-processes[]]",
    "tests/test_browser.py::*[[]08-pipelining[]]",
]

# After them, the longest tests: dealt out early, they cannot leave one lane running a minute after the other ends.
LONGEST_FIRST = ("tests/test_browser.py::", "tests/test_hub.py::")


def needs_every_core(nodeid: str) -> bool:
    return any(fnmatch.fnmatchcase(nodeid, pattern) for pattern in EVERY_CORE)


def pin_tree(cpus: list[int]) -> None:
    """Every thread of this process and of every process below it (a server, JupyterLab, its kernel) onto `cpus`.

    sched_setaffinity moves one thread, and a child started earlier keeps the CPUs it started with: an every-core
    test that finds a lane's JupyterLab already running must widen that whole tree, and narrow it again after."""
    processes = [psutil.Process(), *psutil.Process().children(recursive=True)]
    for process in processes:
        try:
            threads = [thread.id for thread in process.threads()]
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for thread in threads:
            try:
                os.sched_setaffinity(thread, cpus)
            except OSError:  # it ended meanwhile, or belongs to a user we may not move (not as root)
                pass


def lock_path(controller: int, kind: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"iolab-lanes-{controller}.{kind}")


class LaneLock:
    """Shared for a laned test, exclusive for an every-core one, with a turnstile so an exclusive waiter goes next."""

    def __init__(self, turnstile: str, lock: str) -> None:
        self.turnstile = open(turnstile, "a")
        self.lock = open(lock, "a")

    @contextlib.contextmanager
    def held(self, exclusive: bool) -> Iterator[None]:
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self.lock, fcntl.LOCK_UN)


class Lanes:
    """One worker's lane: its CPU, the machine's CPUs, and the lock every worker of this run shares."""

    def __init__(self, worker: str) -> None:
        self.every_cpu = sorted(os.sched_getaffinity(0))
        self.lane_cpu = self.every_cpu[int(worker.removeprefix("gw")) % len(self.every_cpu)]
        # Named by the run's controller, whose children the workers are; it removes them when the run ends.
        self.lock = LaneLock(lock_path(os.getppid(), "turnstile"), lock_path(os.getppid(), "lock"))
        pin_tree([self.lane_cpu])

    @contextlib.contextmanager
    def test(self, every_core: bool) -> Iterator[None]:
        with self.lock.held(exclusive=every_core):
            if every_core:
                pin_tree(self.every_cpu)
            try:
                yield
            finally:
                if every_core:
                    pin_tree([self.lane_cpu])


_lanes: Lanes | None = None


def pytest_configure(config):
    global _lanes
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and len(os.sched_getaffinity(0)) > 1:
        _lanes = Lanes(worker)


def pytest_unconfigure(config):
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # the controller, after its workers
        for kind in ("turnstile", "lock"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock_path(os.getpid(), kind))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Every-core tests first, all together: scattered, each would wait for the other lane's current test (a lesson
    in the browser, up to a minute) and then keep that lane idle; together they run one after another. Then the
    lessons in the browser, the longest tests, dealt out to the lanes in turn, and the many short tests last, which
    even out the lanes' ends. Every worker sorts the same collection the same way, as xdist requires."""
    if _lanes is not None:
        items.sort(key=order)  # stable: each module's own order is kept


def order(item) -> int:
    if needs_every_core(item.nodeid):
        return 0
    return 1 if item.nodeid.startswith(LONGEST_FIRST) else 2


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outermost: the wait for the lock is no part of a test's time
def pytest_runtest_protocol(item, nextitem):
    if _lanes is None:
        yield
        return
    with _lanes.test(needs_every_core(item.nodeid)):
        yield
