"""iolab.children: every child starts from one thread, knows its parent, and dies with it."""

import os
import subprocess
import threading

import pytest

from helpers import gone, kill_the_parent
from iolab import children
from iolab.contract import PARENT_ENV

# A child that arms the lab's one mechanism, then prints whom it must not outlive and waits.
CHILD = ("from iolab.contract import die_with_parent; import os, time;"
         " die_with_parent(); print(os.environ[{!r}], flush=True); time.sleep(60)")


def test_a_child_knows_its_parent_and_outlives_the_thread_that_asked_for_it():
    started = []
    asker = threading.Thread(target=lambda: started.append(children.spawn(children.python("-c", CHILD.format(PARENT_ENV)))))
    asker.start()
    asker.join()  # PR_SET_PDEATHSIG would fire now if this thread had forked the child
    (child,) = started
    try:
        assert child.stdout.readline().decode().strip() == str(os.getpid())
        assert child.poll() is None and not gone(child.pid)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


def test_a_child_dies_with_its_killed_parent():
    program = f"""
        import json
        from iolab import children
        child = children.spawn(children.python("-c", {CHILD.format(PARENT_ENV)!r}))
        child.stdout.readline()
        print(json.dumps({{"pids": [child.pid]}}), flush=True)
    """
    _, survivors = kill_the_parent(program)
    assert not survivors, "a child outlived its SIGKILLed parent"


def test_run_bounds_a_program_by_its_timeout():
    with pytest.raises(subprocess.TimeoutExpired):
        children.run(["sleep", "5"], timeout_s=0.2)


@pytest.mark.parametrize("script, said", [
    ("print('one'); print('two', flush=True); import time; time.sleep(5)", b"one\n"),  # the marker, then it stops reading
    ("print('no newline at the end', end='')", b"no newline at the end"),  # the end of the pipe
])
def test_read_until_stops_at_the_marker_or_the_end(script, said):
    child = children.spawn(children.python("-c", script))
    try:
        assert children.read_until(child.stdout, b"\n", timeout_s=5).startswith(said)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


def test_read_until_never_waits_past_its_timeout():
    child = children.spawn(children.python("-c", "import time; time.sleep(5)"))
    try:
        with pytest.raises(TimeoutError):
            children.read_until(child.stdout, b"\n", timeout_s=0.2)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


def test_environment_reaches_children_and_is_put_back(monkeypatch):
    monkeypatch.setenv("IOLAB_TEST_KEPT", "before")
    monkeypatch.delenv("IOLAB_TEST_NEW", raising=False)
    script = "import os; print(os.environ['IOLAB_TEST_KEPT'], os.environ['IOLAB_TEST_NEW'])"
    with children.environment(IOLAB_TEST_KEPT="during", IOLAB_TEST_NEW=1):
        child = children.spawn(children.python("-c", script))
        said, _ = child.communicate(timeout=10)
    assert said.split() == [b"during", b"1"]
    assert os.environ["IOLAB_TEST_KEPT"] == "before" and "IOLAB_TEST_NEW" not in os.environ
