"""The postgres launcher: start, refuse past its limit, leave nothing.

Nothing of it (wrapper, postmaster, every backend, its folder, its shared memory) survives the SIGKILL of the process
that started it, run as root (PostgreSQL then runs as `postgres`) and as an unprivileged user.
"""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from helpers import GONE_WITHIN_S, gone, kill_the_parent, left_listening, wait_until, wait_until_gone
from iolab import contract, postgres, registry, servers

REASON = registry.get("postgres").missing()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")
REPO = Path(__file__).resolve().parents[1]


def psycopg():
    import psycopg

    return psycopg


def tree(server):
    wrapper = psutil.Process(server.pid)
    return [wrapper, *wrapper.children(recursive=True)]


def cluster_folder(server):
    """The temporary folder the postmaster runs from (its -D is folder/data)."""
    (postmaster,) = [p for p in psutil.Process(server.pid).children() if "-D" in p.cmdline()]
    command = postmaster.cmdline()
    return os.path.dirname(command[command.index("-D") + 1]), postmaster


def shared_memory_of(pid):
    """The System V segments the kernel still has that `pid` created (PostgreSQL's interlock segment)."""
    with open("/proc/sysvipc/shm") as table:
        rows = [line.split() for line in table.read().splitlines()[1:]]
    return [row[1] for row in rows if row[4] == str(pid)]


def test_a_cluster_answers_queries_and_stop_leaves_nothing():
    with servers.serve("postgres") as server:
        folder, postmaster = cluster_folder(server)
        expected_user = postgres.ACCOUNT if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        assert postmaster.username() == expected_user
        assert postgres.make_table(server.port, 1000) == 1000
        with psycopg().connect(postgres.dsn(server.port), connect_timeout=5) as connection:
            assert connection.execute("show max_connections").fetchone() == ("100",)
            assert connection.execute("show fsync").fetchone() == ("off",)
            assert connection.execute("select sum(id) from items").fetchone() == (500500,)
            processes = tree(server)  # the backend serving this connection among them
        assert len(processes) >= 5, [p.cmdline() for p in processes]
        assert shared_memory_of(postmaster.pid)
    assert not wait_until_gone([p.pid for p in processes]), "the cluster left processes behind"
    assert not os.path.exists(folder) and not shared_memory_of(postmaster.pid) and not left_listening(server.port)


def test_the_connection_past_max_connections_is_refused():
    with servers.serve("postgres", max_connections=2) as server:
        connect = psycopg().connect
        with (connect(postgres.dsn(server.port)), connect(postgres.dsn(server.port)),
              pytest.raises(psycopg().OperationalError, match="too many clients already")):
            connect(postgres.dsn(server.port), connect_timeout=5)


@pytest.mark.parametrize("argument, words", [("0", "between 1 and 1000, got 0"), ("many", "whole number")])
def test_a_bad_connection_limit_is_refused_by_name(argument, words):
    done = subprocess.run([sys.executable, str(servers.SERVERS_DIR / "postgres_server.py"), "--max-connections",
                           argument], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "--max-connections" in done.stderr and words in done.stderr, done.stderr


def test_a_machine_without_postgresql_is_told_so(monkeypatch):
    monkeypatch.setenv(contract.TOOLS_OFF_VARIABLE, "postgres")
    assert "PostgreSQL is not installed here" in postgres.missing_reason()
    assert "'postgres'" in registry.get("postgres").missing()
    with pytest.raises(servers.ServerUnavailable):
        servers.start("postgres")
    done = subprocess.run([sys.executable, str(servers.SERVERS_DIR / "postgres_server.py")], capture_output=True,
                          text=True, timeout=30, env={**os.environ, contract.TOOLS_OFF_VARIABLE: "postgres"})
    assert done.returncode == 1 and "apt-get install postgresql" in done.stderr, done.stderr
    monkeypatch.setenv(contract.TOOLS_OFF_VARIABLE, "pgbouncer")
    assert "'pgbouncer'" in registry.get("pgbouncer").missing() and registry.get("postgres").missing() is None


# The parent starts a cluster, opens two connections (two backends), starts pgbouncer with a cluster of its own and a
# client through it, and reports every process of theirs.
PARENT = """
    import json, os, psutil, psycopg
    from iolab import postgres, servers
    server = servers.start("postgres")
    held = [psycopg.connect(postgres.dsn(server.port)) for _ in range(2)]
    bouncer = servers.start("pgbouncer")
    held.append(psycopg.connect(postgres.dsn(bouncer.port), prepare_threshold=None))
    held[-1].execute("select 1")
    processes = [process for started in (server, bouncer) for process in
                 [psutil.Process(started.pid), *psutil.Process(started.pid).children(recursive=True)]]
    wrapper = psutil.Process(server.pid)
    (postmaster,) = [p for p in wrapper.children() if "-D" in p.cmdline()]
    folder = os.path.dirname(postmaster.cmdline()[postmaster.cmdline().index("-D") + 1])
    backends = [p.pid for p in postmaster.children() if any(c.status == "ESTABLISHED" for c in p.net_connections())]
    print(json.dumps({"pids": [p.pid for p in processes], "backends": backends, "port": server.port,
                      "bouncer_port": bouncer.port, "names": sorted({p.name() for p in processes}),
                      "bouncer_folder": [os.path.dirname(p.cmdline()[-1]) for p in processes if p.name() == "pgbouncer"][0],
                      "folder": folder, "postmaster": postmaster.pid, "users": sorted({p.username() for p in processes})}),
          flush=True)
"""


def assert_nothing_survives(report, survivors):
    names = {pid: psutil.Process(pid).cmdline()[:3] for pid in survivors if not gone(pid)}
    assert not survivors, f"still running {GONE_WITHIN_S} s after their parent was SIGKILLed: {names}"
    assert len(report["backends"]) == 2, report  # the two connections' backends were among the pids checked
    assert not left_listening(report["port"]) and not left_listening(report["bouncer_port"])
    assert {"pgbouncer", "postgres"} <= set(report["names"]), report
    # The folders and the shared memory go with the group: the wrappers remove them before their last SIGKILL.
    for folder in (report["folder"], report["bouncer_folder"]):
        assert wait_until(lambda folder=folder: not os.path.exists(folder), GONE_WITHIN_S), f"{folder} is left"
    assert not shared_memory_of(report["postmaster"])


def test_the_sigkill_of_the_starter_takes_postmaster_and_backends_along():
    report, survivors = kill_the_parent(PARENT)
    assert_nothing_survives(report, survivors)
    if os.geteuid() == 0:
        assert set(report["users"]) == {"root", postgres.ACCOUNT}, report


@pytest.mark.skipif(os.geteuid() != 0, reason="run as root, this test starts the parent as the unprivileged `nobody`")
def test_the_sigkill_of_an_unprivileged_starter_takes_everything_along():
    from browser_lab import ordinary_user

    folder = tempfile.mkdtemp(prefix="iolab-test-python-")
    try:
        python, env, home, as_nobody = ordinary_user(folder, REPO)
        report, survivors = kill_the_parent(PARENT, python=python, env=env, cwd=home, **as_nobody)
        assert_nothing_survives(report, survivors)
        assert report["users"] == ["nobody"], report  # initdb and postgres ran as the user, no `postgres` account
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_folder_left_by_a_killed_launcher_goes_at_the_next_start():
    # A launcher SIGKILLed by itself (not through its parent) cannot clean up; the postmaster still dies with it.
    server = servers.start("postgres")
    try:
        folder, postmaster = cluster_folder(server)
        psutil.Process(server.pid).kill()
        assert wait_until(lambda: gone(postmaster.pid), GONE_WITHIN_S), "the postmaster outlived its launcher"
        assert os.path.exists(folder)
    finally:
        server.stop()
    with servers.serve("postgres"):
        assert not os.path.exists(folder)
        assert not shared_memory_of(postmaster.pid)


def test_pgbouncer_lets_many_clients_share_a_few_server_connections():
    """10 clients at once, each a 100 ms transaction, through 2 server connections: 5 rounds, and 2 backends."""
    import asyncio

    async def client(port):
        async with await psycopg().AsyncConnection.connect(postgres.dsn(port), autocommit=True,
                                                           prepare_threshold=None) as connection:
            await connection.execute("select pg_sleep(0.1)")

    async def clients(port, count):
        began = time.perf_counter()
        await asyncio.gather(*[client(port) for _ in range(count)])
        return time.perf_counter() - began

    with (servers.serve("postgres") as database,
          servers.serve("pgbouncer", db_port=database.port, pool_size=2, max_client_conn=12) as bouncer):
        asyncio.run(clients(bouncer.port, 2))  # opens the 2 server connections
        elapsed = asyncio.run(clients(bouncer.port, 10))
        with psycopg().connect(postgres.dsn(database.port)) as watcher:
            backends = watcher.execute("select count(*) from pg_stat_activity where backend_type = 'client backend'"
                                       " and pid <> pg_backend_pid()").fetchone()[0]
        assert 5 * 0.9 <= elapsed / 0.1 < 5 * 1.6, f"10 transactions of 100 ms through 2 connections took {elapsed:.2f} s"
        assert backends == 2
        # Past max_client_conn, pgbouncer refuses the client itself.
        connect = psycopg().connect
        held = [connect(postgres.dsn(bouncer.port), prepare_threshold=None) for _ in range(12)]
        try:
            with pytest.raises(psycopg().OperationalError, match="max_client_conn"):
                connect(postgres.dsn(bouncer.port), connect_timeout=5)
        finally:
            for connection in held:
                connection.close()


def test_postgresqls_programs_are_found_off_path_newest_version_first(monkeypatch, tmp_path):
    # Debian and Ubuntu put them in /usr/lib/postgresql/N/bin, on nobody's PATH; Binder's Ubuntu has another N.
    for version in ("9.6", "14", "15"):
        folder = tmp_path / version / "bin"
        folder.mkdir(parents=True)
        for name in ("postgres", "initdb"):
            (folder / name).write_text("#!/bin/sh\n")
            (folder / name).chmod(0o755)
    monkeypatch.setattr(contract, "VERSIONED_DIRS", str(tmp_path / "*" / "bin"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(contract, "SBIN_DIRS", ())
    assert postgres.programs() == {"postgres": str(tmp_path / "15" / "bin" / "postgres"),
                                   "initdb": str(tmp_path / "15" / "bin" / "initdb")}
