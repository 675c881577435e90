"""What both nginx wrappers share.

A temporary prefix, the configuration around their server block, and the start.

nginx runs unprivileged and in the foreground, with everything it writes
(pid, lock, temporary files) inside the prefix and its log on stderr. It does
not bind the port itself: it inherits the wrapper's listening socket through
the NGINX environment variable, the way a new nginx binary takes over the
sockets of an old one during an upgrade, and uses it for the `listen`
directive with the same address.
"""

import os
import resource
import shutil

from _wrapper import count_between
from iolab import owned_folders
from iolab.contract import SBIN_DIRS, find_program

MAX_WORKERS = 64


def add_arguments(parser):
    parser.add_argument(
        "--workers", type=count_between(1, MAX_WORKERS), default=1,
        help="worker processes, each an event loop (nginx's worker_processes)",
    )


def quote(text):
    """A string as nginx's configuration writes it, in double quotes with its newlines escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def address(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def worker_connections():
    # As many as one process may open, so a run with thousands of connections meets
    # the machine's limit, not a number in this file.
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(512, min(soft, 65536))


def user_line(uid_map="/proc/self/uid_map"):
    """nginx's `user` line. Started as root, nginx runs its workers as nobody, its default. As root of a user
    namespace that maps only this one user (a lab link run by an ordinary user), nobody does not exist there and
    nginx would fail to start: the workers stay the user that started it, who is no one else outside."""
    if os.geteuid() != 0:
        return ""  # not root: nginx cannot switch users, and does not try
    with open(uid_map) as table:
        ranges = [tuple(map(int, line.split())) for line in table if line.strip()]
    nobody = 65534
    if any(inside <= nobody < inside + count for inside, _, count in ranges):
        return ""
    return "user root;  # root of a user namespace of one user: no one else exists here to switch to\n"


PREFIX_NAME = "iolab-nginx-"


class Prefix:
    """A temporary directory nginx runs from: its configuration, pid and temporary files."""

    def __init__(self):
        self.path = owned_folders.make(PREFIX_NAME)
        # Started as root, nginx runs its workers as nobody: they must be able to reach the temporary paths.
        os.chmod(self.path, 0o755)
        self.config = os.path.join(self.path, "nginx.conf")

    def write_config(self, workers, server_block):
        with open(self.config, "w") as file:
            file.write(f"""\
daemon off;  # in the foreground: the wrapper is nginx's parent and waits for it
{user_line()}worker_processes {workers};
pid nginx.pid;
lock_file nginx.lock;
error_log stderr warn;

events {{
    worker_connections {worker_connections()};
}}

http {{
    access_log off;
    # This nginx was built to write under /var/lib/nginx, which only root may.
    client_body_temp_path client_body;
    proxy_temp_path proxy;
    fastcgi_temp_path fastcgi;
    uwsgi_temp_path uwsgi;
    scgi_temp_path scgi;
    default_type text/plain;
    keepalive_requests 1000000;  # the lab's clients keep one connection for a whole run
{server_block}
}}
""")

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def start(programs, prefix, listener):
    """Start nginx from `prefix`, serving on `listener`, whose address the configuration's `listen` names."""
    nginx = find_program("nginx")
    if nginx is None:
        raise SystemExit(f"nginx is not installed here (not on PATH, nor in {', '.join(SBIN_DIRS)})")
    fd = listener.fileno()
    return programs.start(
        "nginx",
        [nginx, "-p", prefix.path + "/", "-c", prefix.config, "-e", "stderr"],
        pass_fds=[fd],
        env={"NGINX": f"{fd};"},
    )
