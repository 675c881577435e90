"""The suite's lanes: which tests take every core, and the lock that lets one of them in without starving it."""

import fcntl
import threading
import time

from lanes import LaneLock, needs_every_core


def test_tests_about_more_than_one_core_are_the_ones_that_run_alone():
    assert needs_every_core("tests/lessons/workers/test_measure.py::test_x")
    assert needs_every_core("tests/test_browser.py::test_lesson_runs_in_the_browser[06-workers-threads-processes]")
    assert not needs_every_core("tests/test_browser.py::test_lesson_runs_in_the_browser[07-c10k]")
    assert not needs_every_core("tests/lessons/bank/test_measure.py::test_model_predicts_all_three_banks[24-6-250-3]")


def turnstile_taken(path, timeout_s=5.0):
    """True once someone holds `path`'s flock (the waiter, holding the turnstile while it waits for the lock)."""
    deadline = time.monotonic() + timeout_s
    with open(path, "a") as probe:
        while time.monotonic() < deadline:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(probe, fcntl.LOCK_UN)
            time.sleep(0.01)
    return False


def test_an_exclusive_waiter_goes_before_a_shared_holder_that_comes_back(tmp_path):
    # Two workers in one process: flock treats each open file as its own owner. The laned worker holds the shared
    # lock, the every-core one waits for the exclusive lock; when the laned one lets go and asks again at once, it
    # must wait until the every-core test has run, or a busy lane would keep it out for the whole suite.
    paths = (str(tmp_path / "turnstile"), str(tmp_path / "lock"))
    laned, every_core = LaneLock(*paths), LaneLock(*paths)
    order = []
    with laned.held(exclusive=False):
        def take_exclusive():
            with every_core.held(exclusive=True):
                order.append("every-core test")
                time.sleep(0.2)

        waiter = threading.Thread(target=take_exclusive)
        waiter.start()
        assert turnstile_taken(paths[0]), "the every-core worker never reached the turnstile"
        assert not order
    with laned.held(exclusive=False):
        order.append("next laned test")
    waiter.join(timeout=5)
    assert order == ["every-core test", "next laned test"]
