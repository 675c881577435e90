"""Debian's redis-server as lesson 10's broker and result store, under the lab's contract: loopback, no persistence, a memory cap.

Redis cannot inherit a listening socket, so with `--port 0` this wrapper asks
the kernel for a free port, lets it go and hands its number to redis-server
(trying another if someone took it in between). It announces LISTENING only
once Redis answers PING, leads a process group holding redis-server, stops it
on SIGTERM and takes it down when its own parent dies, however it dies.
Redis speaks its own protocol, not HTTP: the registry says so
(`protocol="redis"`), and the LISTENING line is Redis's own port.
"""

import shutil
import socket
import sys

import _wrapper
from _wrapper import count_between
from iolab import owned_folders
from iolab.contract import find_program, parse_args

MAX_MEMORY_MB = 4096


def add_arguments(parser):
    parser.add_argument(
        "--maxmemory-mb", type=count_between(1, MAX_MEMORY_MB), default=64,
        help="Redis's memory cap; past it, writes fail with an out-of-memory error (maxmemory-policy noeviction)",
    )


def redis_command(program, host, port, maxmemory_mb, directory):
    return [
        program,
        "--port", str(port),
        "--bind", host,
        "--save", "",  # no RDB snapshots: the lab's queue lives and dies with the lesson
        "--appendonly", "no",
        "--dir", directory,  # where Redis would write, if it ever did: a temporary folder, not the notebook's
        "--daemonize", "no",  # stay our child, in our process group
        "--protected-mode", "yes",
        "--maxmemory", f"{maxmemory_mb}mb",
        "--maxmemory-policy", "noeviction",  # a full broker refuses new tasks instead of silently dropping old ones
        "--loglevel", "warning",
        "--logfile", "",  # logs to stdout, which the wrapper sends to stderr
    ]


def answers_ping(host, port, timeout_s=0.5):
    """True when a Redis on host:port answers PING with PONG."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(programs, program, args, directory):
    """Start redis-server and return its port once it answers PING; another port if the one picked was taken."""
    _, port = _wrapper.start_on_a_port(
        programs, "redis-server", args.host, args.port,
        lambda port: programs.start("redis-server", redis_command(program, args.host, port, args.maxmemory_mb,
                                                                  directory)),
        lambda port: answers_ping(args.host, port), waiting_for="answer PING",
    )
    return port


def main():
    args = parse_args(__doc__, add_arguments)
    program = find_program("redis-server")
    if program is None:
        raise SystemExit("redis-server is not installed here (Debian: apt-get install redis-server)")
    # Not a TemporaryDirectory: when the parent dies the group is SIGKILLed and no `with` exits, so the wrapper's
    # cleanup removes the folder first, and a wrapper SIGKILLed by itself leaves one the next start removes.
    directory = owned_folders.make("iolab-redis-")
    try:
        with _wrapper.in_charge(lambda: shutil.rmtree(directory, ignore_errors=True)) as programs:
            programs.announce_and_run(args.host, start_redis(programs, program, args, directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
