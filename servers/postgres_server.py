"""A throwaway PostgreSQL cluster (lesson 13's database) under the lab's contract.

It makes a cluster in a temporary folder (initdb, trust on loopback, no
fsync: nothing here is kept), runs `postgres` itself as its own child on
127.0.0.1 with its own port and socket folder, and announces LISTENING once
the postmaster accepts connections. PostgreSQL refuses to run as root, so as
root the cluster runs as the `postgres` account. Like redis_server.py it picks
a free port for a program that cannot inherit a socket, leads a process group
holding the postmaster and every backend it forks, stops them on SIGTERM and
takes them down when its own parent dies, however it dies; the postmaster also
dies with this wrapper, and each backend with the postmaster (PostgreSQL's own
rule). Its port speaks PostgreSQL's protocol: the registry says so.
"""

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time

import _wrapper
from _wrapper import count_between
from iolab import owned_folders, postgres
from iolab.contract import log, parse_args

INITDB_TIMEOUT_S = 60.0  # 0.46 s here; a cold disk on a shared machine may take far longer, but not for ever
STOP_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 1000


def add_arguments(parser):
    parser.add_argument(
        "--max-connections", type=count_between(1, MAX_CONNECTIONS), default=100,
        help="connections PostgreSQL accepts at once (its default, 100); past it: 'sorry, too many clients already'",
    )
    parser.add_argument(
        "--shared-buffers-mb", type=count_between(1, 1024), default=128,
        help="PostgreSQL's shared buffer cache in MB (its default, 128; memory is used as pages are touched)",
    )


def initdb(programs, found, folder, owner):
    """Make the cluster in folder/data: the superuser `postgres`, trusted on loopback, no fsync while making it."""
    command = [
        found["initdb"], "-D", os.path.join(folder, "data"), "-U", postgres.SUPERUSER,
        "-A", "trust",  # loopback only, a throwaway cluster: no passwords to manage
        "--no-sync", "-E", "UTF8", "--locale=C",  # C exists everywhere; C.UTF-8 is not on every image
    ]
    began = time.monotonic()
    process = programs.start("initdb", command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             **postgres.as_account(owner))
    try:
        _, err = process.communicate(timeout=INITDB_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"initdb did not finish within {INITDB_TIMEOUT_S:g} s") from None
    programs.processes.remove(process)
    if process.returncode != 0:
        raise SystemExit(f"initdb failed with code {process.returncode}: {err.decode(errors='replace').strip()}")
    log(f"initdb took {time.monotonic() - began:.2f} s")


def postgres_command(found, folder, host, port, args):
    return [
        found["postgres"], "-D", os.path.join(folder, "data"),
        "-c", f"listen_addresses={host}",
        "-c", f"port={port}",
        "-c", f"unix_socket_directories={folder}",  # its own, not /var/run/postgresql, which only postgres may write
        "-c", f"max_connections={args.max_connections}",
        # Every client here is the superuser `postgres`: with slots reserved for superusers, max_connections would
        # not be what a non-superuser gets, and below 4 PostgreSQL would refuse to start.
        "-c", "superuser_reserved_connections=0",
        "-c", f"shared_buffers={args.shared_buffers_mb}MB",
        "-c", "fsync=off",  # nothing here outlives the lesson: a crash loses only what we would delete anyway
        "-c", "synchronous_commit=off",
        "-c", "full_page_writes=off",
        "-c", "autovacuum=off",  # no background work of its own to share the lesson's CPUs with
        "-c", "logging_collector=off",  # logs go to stderr, which the wrapper sends to the launcher's log
    ]


def start_postgres(programs, found, folder, owner, args):
    """Start the postmaster and return (it, its port) once it accepts connections; another port if one was taken."""
    data = os.path.join(folder, "data")
    began = time.monotonic()
    postmaster, port = _wrapper.start_on_a_port(
        programs, "postgres", args.host, args.port,
        lambda port: programs.start("postgres", postgres_command(found, folder, args.host, port, args), cwd=folder,
                                    preexec_fn=postgres.die_with_us(), **postgres.as_account(owner)),
        lambda port: postgres.ready(data), waiting_for="accept connections",
    )
    log(f"postgres accepted connections {time.monotonic() - began:.2f} s after it started, on port {port}")
    return postmaster, port


def stop_postgres(postmaster):
    """Immediate shutdown (SIGQUIT): the postmaster takes its backends down and nothing needs saving."""
    if postmaster.poll() is None:
        postmaster.send_signal(signal.SIGQUIT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            postmaster.wait(timeout=STOP_TIMEOUT_S)


def make_folder(owner):
    """The cluster's temporary folder, with our pid in it, owned by the account PostgreSQL runs as."""
    tmp = tempfile.gettempdir()
    postgres.remove_abandoned_clusters(tmp)  # their postmasters and shared memory, before their folders
    folder = owned_folders.make(postgres.CLUSTER_PREFIX, tmp)
    if owner is not None:
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    return folder


def main():
    args = parse_args(__doc__, add_arguments)
    reason = postgres.missing_reason()
    found = postgres.programs()
    if reason or found is None:
        raise SystemExit(reason)
    owner = postgres.account()
    folder = make_folder(owner)
    postmaster = None

    def cleanup():  # the parent died: the whole group is about to be SIGKILLed, the postmaster with it
        postgres.remove_cluster(folder)

    try:
        with _wrapper.in_charge(cleanup) as programs:
            initdb(programs, found, folder, owner)
            postmaster, port = start_postgres(programs, found, folder, owner, args)
            try:
                programs.announce_and_run(args.host, port)
            finally:  # SIGTERM: an immediate shutdown, before in_charge stops what is left
                stop_postgres(postmaster)
    finally:
        postgres.remove_cluster(folder)


if __name__ == "__main__":
    sys.exit(main())
