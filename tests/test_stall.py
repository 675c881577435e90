"""The stall helper against real processes: the target stops, and it is always resumed, however the asker ends."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
import requests

from iolab import servers, stall

RESUMED_WITHIN_S = 2.0  # after the stall's end: starting and scheduling a small process on a loaded machine


def status(pid):
    return psutil.Process(pid).status()


def wait_until_running(pid, deadline_s):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if status(pid) != psutil.STATUS_STOPPED:
            return True
        time.sleep(0.02)
    return False


def test_a_stalled_server_answers_after_the_stall(tornado):
    with stall.stall(tornado, 0.5) as stalled:
        time.sleep(stall.START_MARGIN_S + 0.05)
        assert status(tornado.pid) == psutil.STATUS_STOPPED
        began = time.monotonic()
        answer = requests.get(tornado.url + "/", timeout=5)
        waited = time.monotonic() - began
    assert answer.status_code == 200
    assert 0.3 < waited < 0.5 + RESUMED_WITHIN_S
    stopped, resumed = stalled.stopped_at, stalled.resumed_at
    assert resumed - stopped == pytest.approx(0.5, abs=0.1)
    assert status(tornado.pid) != psutil.STATUS_STOPPED


def test_an_interrupted_block_resumes_at_once(tornado):
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt), stall.stall(tornado, 30):
        time.sleep(stall.START_MARGIN_S + 0.1)
        assert status(tornado.pid) == psutil.STATUS_STOPPED
        raise KeyboardInterrupt
    assert status(tornado.pid) != psutil.STATUS_STOPPED
    assert time.monotonic() - began < 5
    assert requests.get(tornado.url + "/", timeout=5).status_code == 200


def test_cancel_before_the_stall_begins_never_stops_it(tornado):
    stalled = stall.stall(tornado, 5, after_s=1.0)
    stalled.cancel()
    time.sleep(1.2)
    assert status(tornado.pid) != psutil.STATUS_STOPPED
    assert stalled.stopped_at is None


@pytest.mark.parametrize("kill_group", [False, True], ids=["asker-killed", "asker-group-killed"])
def test_the_server_is_resumed_when_the_asker_is_killed(kill_group):
    """The process that asked for the stall (a notebook's kernel) dies by SIGKILL mid-stall, alone or with its group."""
    with servers.serve("tornado_app") as server:
        asker = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(f"""
                import sys, time
                from iolab import stall
                stall.stall({server.pid}, 1.5)
                print("asked", flush=True)
                time.sleep(60)
            """)],
            stdout=subprocess.PIPE, text=True, process_group=0,
        )
        try:
            assert asker.stdout.readline().strip() == "asked"
            time.sleep(stall.START_MARGIN_S + 0.2)
            assert status(server.pid) == psutil.STATUS_STOPPED
            if kill_group:
                os.killpg(asker.pid, signal.SIGKILL)
            else:
                asker.kill()
            asker.wait()
            assert status(server.pid) == psutil.STATUS_STOPPED, "the stall goes on without its asker"
            assert wait_until_running(server.pid, 1.5 + RESUMED_WITHIN_S), "the server was never resumed"
            assert requests.get(server.url + "/", timeout=5).status_code == 200
        finally:
            if asker.poll() is None:
                asker.kill()
                asker.wait()
            asker.stdout.close()


def test_bad_stalls_are_refused_by_name(tornado):
    with pytest.raises(stall.StallError, match="seconds must be between"):
        stall.stall(tornado, 0)
    with pytest.raises(stall.StallError, match="seconds must be between"):
        stall.stall(tornado, 61)
    with pytest.raises(stall.StallError, match="after_s must be between"):
        stall.stall(tornado, 1, after_s=-1)
    with pytest.raises(stall.StallError, match="pid"):
        stall.stall(os.getpid(), 1)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with pytest.raises(stall.StallError, match=f"no process {dead.pid}"):
        stall.stall(dead.pid, 1)
