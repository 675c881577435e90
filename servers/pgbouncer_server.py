"""Debian's pgbouncer in transaction mode, under the lab's contract.

Many clients share `--pool-size` server connections: a client holds one only
for the length of a transaction (pool_mode = transaction), and up to
`--max-client-conn` clients may be connected at once. It points at the
`postgres` server on `--db-port`; without one it starts a cluster of its own
(servers/postgres_server.py), which stops with it. pgbouncer refuses to run as
root, so as root it runs as the `postgres` account. Like postgres_server.py it
picks a free port, leads a process group, stops on SIGTERM and dies with its
parent; pgbouncer also dies with this wrapper.

Transaction mode hands each transaction to any server connection, so named
prepared statements cannot follow a client (pgbouncer 1.18, Debian 12's, keeps
none): connect with psycopg's prepare_threshold=None and asyncpg's
statement_cache_size=0. Startup settings (`options`, `statement_timeout`) are
accepted and ignored: set them with SET in the transaction instead.
"""

import os
import resource
import shutil
import socket
import subprocess
import sys

import _wrapper
from _wrapper import count_between
from iolab import owned_folders, postgres
from iolab.contract import FDS_BESIDES_CONNECTIONS, find_program, parse_args, parse_listening

MAX_CLIENTS = 100_000
FOLDER_PREFIX = "iolab-pgbouncer-"


def add_arguments(parser):
    parser.add_argument("--db-port", type=int, default=0,
                        help="the port of the lab's PostgreSQL; without it, a cluster of its own")
    parser.add_argument("--pool-size", type=count_between(1, 10_000), default=20,
                        help="server connections per database and user (default_pool_size; pgbouncer's own 20)")
    parser.add_argument("--max-client-conn", type=count_between(1, MAX_CLIENTS), default=100,
                        help="clients connected at once (max_client_conn; pgbouncer's own 100)")


def write_config(folder, host, port, db_port, args):
    with open(os.path.join(folder, "userlist.txt"), "w") as file:
        file.write(f'"{postgres.SUPERUSER}" ""\n')  # trust still needs the user listed
    path = os.path.join(folder, "pgbouncer.ini")
    with open(path, "w") as file:
        file.write(f"""\
[databases]
{postgres.DATABASE} = host={host} port={db_port} dbname={postgres.DATABASE} user={postgres.SUPERUSER}

[pgbouncer]
listen_addr = {host}
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/userlist.txt
pool_mode = transaction
default_pool_size = {args.pool_size}
max_client_conn = {args.max_client_conn}
; psycopg and asyncpg send these at startup; a transaction-mode pool cannot keep a setting per client
ignore_startup_parameters = extra_float_digits,options,statement_timeout
log_connections = 0
log_disconnections = 0
""")
    return path


def raise_file_limit(args):
    """Room for every client and server connection: the soft limit raised towards the hard one, or a clear refusal."""
    needed = args.max_client_conn + args.pool_size + FDS_BESIDES_CONNECTIONS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and needed > hard:
        raise SystemExit(f"--max-client-conn {args.max_client_conn} needs {needed} open files; this machine allows"
                         f" {hard} (ulimit -Hn)")
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def accepts(host, port):
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def own_database(programs):
    """Start a `postgres` server of our own, in our care; its port."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "postgres_server.py")
    database = programs.start("postgres", [sys.executable, script, "--port", "0"], stdout=subprocess.PIPE)
    line = database.stdout.readline().decode()
    address = parse_listening(line)
    if address is None:
        raise SystemExit(f"the database of our own did not start (it printed {line!r}); see its log above")
    return address[1]


def start_pgbouncer(programs, program, folder, owner, db_port, args):
    def start(port):
        config = write_config(folder, args.host, port, db_port, args)
        return programs.start("pgbouncer", [program, config], cwd=folder, preexec_fn=postgres.die_with_us(),
                              **postgres.as_account(owner))

    _, port = _wrapper.start_on_a_port(programs, "pgbouncer", args.host, args.port, start,
                                       lambda port: accepts(args.host, port))
    return port


def main():
    args = parse_args(__doc__.splitlines()[0], add_arguments)
    if not 0 <= args.db_port <= 65535:
        raise SystemExit(f"--db-port must be between 0 and 65535, got {args.db_port}")
    program = find_program("pgbouncer")
    if program is None:
        raise SystemExit("pgbouncer is not installed here (Debian: apt-get install pgbouncer)")
    raise_file_limit(args)
    owner = postgres.account()
    folder = owned_folders.make(FOLDER_PREFIX)
    if owner is not None:
        os.chown(folder, owner.pw_uid, owner.pw_gid)

    def cleanup():  # the parent died: the whole group is about to be SIGKILLed
        shutil.rmtree(folder, ignore_errors=True)

    try:
        with _wrapper.in_charge(cleanup) as programs:
            db_port = args.db_port or own_database(programs)
            port = start_pgbouncer(programs, program, folder, owner, db_port, args)
            programs.announce_and_run(args.host, port)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
