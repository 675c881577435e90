"""Faults: servers that crash, hang or cannot bind, bad parameters, and parents killed with SIGKILL."""

import os
import signal
import time

import pytest

from helpers import GONE_WITHIN_S, gone, kill_the_parent, wait_until_gone
from iolab import load, metrics, registry, servers

# A run whose server is SIGKILLed ends within its 5 s request timeout and a second more for the
# client to report; a server that never gets ready is stopped 1 s in, plus the stop's grace.
RUN_ENDS_AFTER_CRASH_WITHIN_S = 6
NOT_READY_REPORTED_WITHIN_S = 3


@pytest.fixture
def fake_servers(tmp_path, monkeypatch):
    """A servers/ folder of misbehaving servers, so the launcher meets each fault for real."""
    (tmp_path / "never_ready.py").write_text("import time\nwhile True:\n    time.sleep(1)\n")
    (tmp_path / "crashes_at_start.py").write_text("raise RuntimeError('the database is on fire')\n")
    (tmp_path / "says_hello.py").write_text("print('hello, I am a server', flush=True)\nimport time; time.sleep(30)\n")
    monkeypatch.setattr(servers, "SERVERS_DIR", tmp_path)
    for script in tmp_path.glob("*.py"):
        monkeypatch.setitem(registry.SERVERS, script.stem, registry.ServerInfo(script.stem, script.name, "a misbehaving double"))
    return tmp_path


@pytest.mark.parametrize("client", load.CLIENTS)
def test_server_crashing_mid_run_becomes_recorded_errors(client):
    with servers.serve("tornado_app") as server:
        run = load.start_load(
            server.url + "/async-sleep?ms=200", requests=200, concurrency=10, timeout_s=5, kind=f"closed_{client}"
        )
        time.sleep(0.5)
        os.kill(server.pid, signal.SIGKILL)
        began = time.monotonic()
        result = run.wait()
        assert time.monotonic() - began < RUN_ENDS_AFTER_CRASH_WITHIN_S, "the run did not end soon after the server died"
        with pytest.raises(servers.ServerError, match="exited with code -9 while in use"):
            server.check()
    summary = metrics.summarize(result)
    assert len(result.samples) == 200, "every request must be accounted for"
    assert summary.errors > 0
    assert set(summary.error_kinds) <= {"refused", "disconnected"}, summary.error_kinds


def test_server_that_never_gets_ready_times_out_and_is_reaped(fake_servers):
    began = time.monotonic()
    with pytest.raises(servers.ServerNotReady, match="did not print LISTENING within 1.0 s; it was stopped"):
        servers.start("never_ready", ready_timeout=1.0)
    assert time.monotonic() - began < NOT_READY_REPORTED_WITHIN_S
    assert not servers.running()


def test_server_that_crashes_at_start_reports_exit_code_and_stderr(fake_servers):
    with pytest.raises(servers.ServerError) as raised:
        servers.start("crashes_at_start")
    message = str(raised.value)
    assert "exited before listening (exit code 1)" in message
    assert "the database is on fire" in message


def test_server_that_prints_something_else_is_refused(fake_servers):
    with pytest.raises(servers.ServerError, match="printed 'hello, I am a server' instead of 'LISTENING host:port'"):
        servers.start("says_hello")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"name": "nginx_but_typo"}, ["server must be one of", "'nginx_but_typo'"]),
        ({"host": "0.0.0.0"}, ["host must be a loopback address", "'0.0.0.0'"]),
        ({"host": "192.168.1.10"}, ["host must be a loopback address", "'192.168.1.10'"]),
        ({"port": 70000}, ["port must be between 0 and 65535", "70000"]),
    ],
)
def test_bad_server_parameters_are_named(kwargs, words):
    kwargs = {"name": "tornado_app", **kwargs}
    with pytest.raises(ValueError) as raised:
        servers.start(kwargs.pop("name"), **kwargs)
    for word in words:
        assert word in str(raised.value)


PARENT = """
    import json
    from iolab import load, servers
    a = servers.start("tornado_app")
    b = servers.start("threaded_app")
    run = load.start_load(a.url + "/async-sleep?ms=500", requests=10000, concurrency=4, max_duration_s=60)
    print(json.dumps({"pids": [a.pid, b.pid, run.process.pid]}), flush=True)
"""


def test_parent_killed_with_sigkill_takes_its_servers_along():
    report, survivors = kill_the_parent(PARENT)
    assert len(report["pids"]) == 3
    assert not survivors, f"still running {GONE_WITHIN_S} s after the parent was SIGKILLed: {survivors}"


def test_kernel_killed_with_sigkill_takes_its_servers_along():
    """The real case: a Jupyter kernel started a server in a cell and was then SIGKILLed."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    printed = []
    try:
        reply = client.execute_interactive(
            "from iolab import servers\nserver = servers.start('tornado_app')\nprint(server.pid)",
            timeout=30,
            output_hook=lambda message: printed.append(message["content"].get("text", "")),
        )
        assert reply["content"]["status"] == "ok"
        server_pid = int("".join(printed).split()[0])
        assert not gone(server_pid)
        os.kill(manager.provisioner.process.pid, signal.SIGKILL)
        survivors = wait_until_gone([server_pid])
        assert not survivors, f"server {server_pid} outlived its SIGKILLed kernel"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


@pytest.mark.parametrize("client", load.CLIENTS)
def test_a_run_against_nothing_ends_with_refused_errors(client):
    with servers.serve("tornado_app") as server:
        url = server.url + "/"
    result = load.run_load(url, requests=20, concurrency=2, timeout_s=2, kind=f"closed_{client}")
    assert len(result.samples) == 20
    assert metrics.summarize(result).error_kinds == {"refused": 20}
