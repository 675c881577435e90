"""JupyterHub for a class on one host: each student's own server and kernels, a student copy made at first login.

`make hub` (hub/serve.py) starts JupyterHub with this file and passes everything it needs in IOLAB_HUB_* variables,
so the file holds no path or name of this machine. Read by JupyterHub's config loader, which provides `c`.
"""

import asyncio
import os
import pwd
import shutil
import socket
import sys
import tempfile
from pathlib import Path

# The folder a student's copy of the lessons goes to, in their home; their server opens its first lesson.
COPY = "iolab"
FIRST_LESSON = "00-start-here.ipynb"
# How long a spawn may take: a first login copies the lessons (about a second) before the server starts.
START_TIMEOUT_S = 90


def setting(name, default=None):
    """An IOLAB_HUB_<name> variable hub/serve.py set; a missing one without a default is a clear error."""
    value = os.environ.get(f"IOLAB_HUB_{name}", default)
    if value is None:
        sys.exit(f"jupyterhub_config.py: IOLAB_HUB_{name} is not set; start the hub with `make hub` (hub/serve.py)")
    return value


def free_loopback_port():
    """A port nothing on 127.0.0.1 listens on now: the hub's and the proxy's own APIs take one each, so a second hub,
    or anything else on 8081 and 8001 (JupyterHub's fixed defaults), does not clash with this one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


STATE = Path(setting("STATE"))
PYTHON = setting("PYTHON")  # the students' Python: their server, their kernels and the servers lessons start
LAB = Path(setting("LAB"))  # the lab's copy every student reads: lib/, servers/, tools/, notebooks/
STUDENTS = setting("STUDENTS", "").split()
PASSWORD = setting("PASSWORD", "")


async def run(argv, account=None):
    """Run argv (as `account`, a pwd entry, when given); raise naming the command and its last words if it fails."""
    who = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []} if account else {}
    process = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                                                   cwd="/", **who)
    output, _ = await process.communicate()
    if process.returncode:
        tail = output.decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"{' '.join(map(str, argv))} failed ({process.returncode}): {' / '.join(tail)}")


async def make_student_copy(spawner):
    """First login: the student's copy of the lessons in ~/iolab, by tools/make_student.py (solutions cut, and
    solution() disabled). A later login finds the folder and leaves the student's work alone.

    make_student.py reads the instructor's notebooks, which only root may read, so it writes to a private folder
    that is then handed to the student, who copies it into their home as themselves: nothing is written there as
    root.
    """
    account = pwd.getpwnam(spawner.user.name)
    home = Path(account.pw_dir)
    if not home.is_dir():
        raise RuntimeError(f"{spawner.user.name}'s home {home} does not exist: create the account with a home "
                           "(make hub STUDENTS=... does)")
    if os.path.lexists(home / COPY):
        return
    # A folder only root may enter until it is handed to the student, with the copy in it.
    staging = Path(tempfile.mkdtemp(prefix="iolab-copy-"))
    try:
        await run([sys.executable, LAB / "tools" / "make_student.py", LAB / "notebooks", staging / COPY])
        for folder, _, files in os.walk(staging):
            for path in [folder, *(os.path.join(folder, name) for name in files)]:
                os.chown(path, account.pw_uid, account.pw_gid, follow_symlinks=False)
        await run(["cp", "-R", "--no-preserve=ownership", staging / COPY, home / COPY], account)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    spawner.log.info("made %s's copy of the lessons in %s", spawner.user.name, home / COPY)


def student_path():
    """The students' PATH: their Python's folder first (the kernel spec names `python`), then the system's, sbin
    included (nginx lives there)."""
    return ":".join([str(Path(PYTHON).parent), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
                     "/sbin", "/bin"])


c = get_config()  # noqa: F821 (JupyterHub's config loader provides get_config)

# Loopback only: the public port the instructor chose, the internal ones free ports.
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(setting("PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = free_loopback_port()
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{free_loopback_port()}"
c.ConfigurableHTTPProxy.command = [setting("PROXY")]
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
# Stopping the hub stops every student's server, and with it their kernels and what the lessons started.
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

# Who may log in: the class list. With a class password, every student uses it (SharedPasswordAuthenticator: any
# student could log in as another, so it suits a room, not an exam); without, each their own Unix password (PAM).
if STUDENTS:
    c.Authenticator.allowed_users = set(STUDENTS)
if PASSWORD:
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = PASSWORD
else:
    c.JupyterHub.authenticator_class = "pam"

# Each student's server runs as their own Unix user (LocalProcessSpawner setuid()s to them), in their home.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [PYTHON, "-m", "jupyterhub.singleuser"]
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = f"/lab/tree/{COPY}/{FIRST_LESSON}"
c.Spawner.pre_spawn_hook = make_student_copy
c.Spawner.start_timeout = START_TIMEOUT_S
c.Spawner.http_timeout = START_TIMEOUT_S
c.Spawner.environment = {
    "IOLAB_SOLUTIONS_DISABLED": "1",  # solution() answers nothing, in any copy the student opens
    "PATH": student_path(),
    **({"IOLAB_QUICK": "1"} if setting("QUICK", "0") == "1" else {}),
}
# Declared, as JupyterHub declares them (MEM_LIMIT and CPU_LIMIT in the student's environment): the local spawner
# enforces neither. Lesson 00 says so, and the lab plans with what a cgroup enforces (README: For instructors).
if setting("MEM_LIMIT", ""):
    c.Spawner.mem_limit = setting("MEM_LIMIT")
if setting("CPU_LIMIT", ""):
    c.Spawner.cpu_limit = float(setting("CPU_LIMIT"))
