"""PostgreSQL for lesson 13: its programs, its account, a DSN, a table.

What the `postgres` launcher (servers/postgres_server.py), the `pgbouncer`
wrapper and the lesson share: where Debian put the programs (off PATH, one
folder per major version), which account runs them (`postgres` when the lab
runs as root: initdb and postgres refuse root), how to reach a cluster the lab
started, and a table of R rows to read back.
"""

import ctypes
import os
import pwd
import shutil
import signal
from collections.abc import Callable
from typing import Any, cast

from . import owned_folders
from .contract import LOOPBACK, find_program

SUPERUSER = "postgres"  # the cluster's superuser, whoever runs it: initdb -U postgres
DATABASE = "postgres"
ACCOUNT = "postgres"  # Debian's package makes it; as root, the lab runs PostgreSQL as this user
CLUSTER_PREFIX = "iolab-postgres-"  # the launcher's temporary folders, under tempfile.gettempdir()
OWNER_FILE = owned_folders.OWNER_FILE
_IPC_RMID = 0
_PR_SET_PDEATHSIG = 1


def programs() -> dict[str, str] | None:
    """{"postgres": path, "initdb": path} from one installation, or None where PostgreSQL is not installed."""
    server = find_program("postgres")
    if server is None:
        return None
    # /usr/local/bin/postgres may be a link into /usr/lib/postgresql/N/bin: initdb must be the same version's.
    folder = os.path.dirname(os.path.realpath(server))
    initdb: str | None  # the one beside postgres, or else the one find_program finds (None: none)
    initdb = os.path.join(folder, "initdb")
    if not os.access(initdb, os.X_OK):
        initdb = find_program("initdb")
    if initdb is None:
        return None
    return {"postgres": server, "initdb": initdb}


def missing_reason() -> str | None:
    """Why this machine cannot start a PostgreSQL cluster, as a sentence, or None."""
    if programs() is None:
        return ("PostgreSQL is not installed here (Debian and Ubuntu: apt-get install postgresql; the lab looks on"
                " PATH and in /usr/lib/postgresql/*/bin)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(ACCOUNT)
        except KeyError:
            return f"PostgreSQL refuses to run as root, and there is no {ACCOUNT!r} account to run it as"
    return None


def account() -> pwd.struct_passwd | None:
    """The pwd entry PostgreSQL runs as: the `postgres` account when we are root, else None (run as we are)."""
    return pwd.getpwnam(ACCOUNT) if os.geteuid() == 0 else None


def as_account(entry: pwd.struct_passwd | None) -> dict[str, Any]:
    """Popen's arguments that run a program as `entry` (nothing when entry is None)."""
    if entry is None:
        return {}
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def die_with_us() -> Callable[[], None]:
    """A preexec_fn: the program dies with this process, even when this one is SIGKILLed by itself.

    Popen runs it after changing the user (the kernel clears the parent-death signal on a change of credentials).
    """
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child after fork only calls it
    parent = os.getpid()

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # we died before the signal was armed
            os._exit(1)

    return arm


def dsn(port: int, host: str = LOOPBACK, dbname: str = DATABASE, **settings: object) -> str:
    """A libpq connection string for psycopg: `dsn(port, options="-c statement_timeout=100")`."""
    # sslmode=disable: the lab's clusters have no TLS, and libpq's default (prefer) would ask first on every connect.
    parts = {"host": host, "port": port, "user": SUPERUSER, "dbname": dbname, "sslmode": "disable", **settings}
    return " ".join(f"{key}='{str(value)}'" if " " in str(value) else f"{key}={value}" for key, value in parts.items())


def url(port: int, host: str = LOOPBACK, dbname: str = DATABASE) -> str:
    """The same address as a URL, which asyncpg takes."""
    return f"postgresql://{SUPERUSER}@{host}:{port}/{dbname}?sslmode=disable"


# --- A table to read back ------------------------------------------------------------------------------

TABLE = "items"
# Four columns of common types: an int, a short text, a float and a timestamp, decoded into four Python objects.
TABLE_COLUMNS = "id integer primary key, name text not null, score double precision not null, created timestamptz not null"


def make_table(port: int, rows: int, table: str = TABLE, host: str = LOOPBACK) -> int:
    """(Re)create `table` with `rows` rows in the cluster on `port`; returns the rows it holds."""
    import psycopg  # here: the launcher imports this module and needs no driver

    if not isinstance(rows, int) or rows < 0:
        raise ValueError(f"rows must be a whole number of at least 0, got {rows!r}")
    with psycopg.connect(dsn(port, host=host), autocommit=True, connect_timeout=10) as connection:
        connection.execute(f"drop table if exists {table}")
        connection.execute(f"create table {table} ({TABLE_COLUMNS})")
        connection.execute(
            f"insert into {table} select i, 'item ' || i, i * 0.5, timestamptz '2026-01-01' + i * interval '1 second'"
            f" from generate_series(1, %s) as i", (rows,))
        connection.execute(f"analyze {table}")
        return cast(tuple[int], connection.execute(f"select count(*) from {table}").fetchone())[0]


# --- A cluster's folder: made by the launcher, removed by it, or by the next one if it was killed ------------

def postmaster_pid_fields(data_dir: str) -> list[str]:
    """The lines of data_dir/postmaster.pid (pid, folder, start, port, socket dir, address, shm key and id, status)."""
    try:
        with open(os.path.join(data_dir, "postmaster.pid")) as file:
            return file.read().splitlines()
    except OSError:
        return []


def ready(data_dir: str) -> bool:
    """True once the postmaster says, in postmaster.pid, that it accepts connections (what pg_ctl -w waits for)."""
    fields = postmaster_pid_fields(data_dir)
    return len(fields) >= 8 and fields[7].strip() == "ready"


def remove_shared_memory(data_dir: str) -> None:
    """Remove the cluster's System V segment: a postmaster killed with SIGKILL leaves it in the kernel."""
    fields = postmaster_pid_fields(data_dir)
    try:
        key, shmid = (int(field) for field in fields[6].split())
    except (IndexError, ValueError):
        return
    # Only the segment postmaster.pid names, and only if the kernel still has that key under that id: an id the
    # kernel has since given to someone else's segment is left alone. It goes once its last process detaches.
    try:
        with open("/proc/sysvipc/shm") as table:
            ours = any(line.split()[:2] == [str(key), str(shmid)] for line in table)
    except OSError:
        return
    if ours:
        ctypes.CDLL(None, use_errno=True).shmctl(shmid, _IPC_RMID, None)


def remove_cluster(folder: str) -> None:
    """Remove a cluster's folder and its shared memory (the postmaster must be gone, or about to be killed)."""
    remove_shared_memory(os.path.join(folder, "data"))
    shutil.rmtree(folder, ignore_errors=True)


def remove_abandoned_clusters(tmp: str | None, prefix: str = CLUSTER_PREFIX) -> None:
    """Remove the folders of launchers that are gone (one SIGKILLed itself, not through its parent, leaves its own);
    `prefix` names the wrapper's folders (the pgbouncer wrapper's too)."""
    for folder in owned_folders.abandoned(prefix, tmp):
        kill_postmaster_of(folder)
        remove_cluster(folder)


def kill_postmaster_of(folder: str) -> None:
    """SIGKILL the postmaster still running from `folder`, if any (its command line names the folder)."""
    fields = postmaster_pid_fields(os.path.join(folder, "data"))
    if not fields or not fields[0].strip().isdigit():
        return
    pid = int(fields[0])
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            if os.fsencode(folder) not in file.read():
                return  # that pid is someone else's now
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
