"""A JupyterLab started the way `make lab` starts it, in throwaway settings, and headless Chromium to look at it.

Run as root (as CI runs `make test`), the lab runs as an unprivileged user with a laptop's soft open-files limit.
"""

import functools
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

from helpers import link_all_but_optional_tools

REPO = Path(__file__).resolve().parents[1]
# The lab's own JupyterLab settings (the news prompt off); `make lab` and binder/postBuild use the same file.
LAB_SETTINGS = REPO / "jupyter" / "lab-settings"
JUPYTER = Path(sys.executable).parent / "jupyter"
# Debian's chromium, driven through playwright's executable_path: playwright never downloads a browser here.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
# Every process the lab starts (kernels, and the servers lessons start) inherits this variable,
# which is how the test finds them again after they have been orphaned.
MARKER = "IOLAB_BROWSER_TEST_LAB"
START_TIMEOUT_S = 60
# A kernel of the lab's own that runs without the optional programs (wrk, ab, nginx, strace, ss, ...), as a machine
# that never installed them: the lessons tool_paths.py names run on it.
TOOLS_OFF_KERNEL = "python3-without-optional-tools"
STOP_TIMEOUT_S = 15
# Run as root, the test starts JupyterLab (so its kernels, and the servers lessons start) as this user instead, with a
# laptop's soft RLIMIT_NOFILE under the machine's hard limit: as Binder's jovyan and a student's laptop run them, where
# the root-only parts of a lesson take their fallback path (test_notebooks.py runs them as root under papermill).
# `nobody` is on every Linux and owns nothing; IOLAB_BROWSER_USER names another account (root: as root, as before).
LAB_USER_VARIABLE = "IOLAB_BROWSER_USER"
LAB_USER = "nobody"
STUDENT_SOFT_FILES = 1024  # the common soft limit a login gets (hard limit: tens of thousands)
# Lowers the soft limit in the process that then becomes `jupyter lab`: every kernel and server inherits it.
LOWER_FILES_AND_EXEC = (
    "import os, resource, sys; _, hard = resource.getrlimit(resource.RLIMIT_NOFILE);"
    " resource.setrlimit(resource.RLIMIT_NOFILE, (min(int(sys.argv[1]), hard), hard)); os.execv(sys.argv[2], sys.argv[2:])"
)
# What the lab's user must be able to read: the lab's Python and packages, the lessons, the servers and the settings.
READ_PROBE = (
    "import pathlib, sys, iolab, ipykernel, jupyterlab; [pathlib.Path(p).read_bytes() for p in sys.argv[1:]];"
    " print(iolab.__file__)"
)


def lab_account():
    """The account the lab runs as: None to run it as this test runs (not root, or IOLAB_BROWSER_USER=root).

    Raises LookupError, naming the account, when it does not exist.
    """
    if os.geteuid() != 0:
        return None
    name = os.environ.get(LAB_USER_VARIABLE) or LAB_USER
    try:
        account = pwd.getpwnam(name)
    except KeyError:
        raise LookupError(f"there is no user {name!r} to run the lab as ({LAB_USER_VARIABLE} names the account)") from None
    return None if account.pw_uid == 0 else account


@functools.cache
def why_the_lab_cannot_run():
    """Why the browser test cannot run here, or None: a tool missing, or (run as root) a lab user who cannot read the lab.

    Asked once a session: conftest asks at collection and the browser test's lab asks again, and a lab user's answer
    takes a copy of the interpreter and a Python that imports JupyterLab as that user (about 7 s here).
    """
    missing = missing_browser_tools()
    if missing:
        return missing
    try:
        account = lab_account()
    except LookupError as no_user:
        return str(no_user)
    if account is None:
        return None
    lab = Lab(account=account)
    try:
        return lab.unreadable()
    finally:
        lab.stop()


def ordinary_user(folder, repo):
    """What it takes to run this lab's Python as `nobody` from a folder of ours: (the Python, its environment, a
    home `nobody` owns, and the keywords of subprocess.run that switch to that user). The caller removes `folder`."""
    account = pwd.getpwnam("nobody")
    os.chmod(folder, 0o755)
    python, variables = reachable_python(folder, account)
    home = os.path.join(folder, "home")
    os.mkdir(home)
    os.chown(home, account.pw_uid, account.pw_gid)
    env = {**os.environ, **variables, "HOME": home, "USER": "nobody", "PYTHONPATH": str(Path(repo) / "lib")}
    return python, env, home, {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def reachable_python(folder, account):
    """A Python the lab's user can run with this lab's packages: ours, or a copy of its interpreter in `folder`.

    CI builds .venv from a Python under /root (pyenv), a folder only root may enter, so the lab's user could
    not start it. The copy is that interpreter and its standard library (about 70 MB, under a second), made a
    venv over our own site-packages, so the lab runs the very packages the tests run. Returns (the Python, the
    variables it needs: the folder of its libpython, since the interpreter names its own by an absolute path).
    """
    ours = Path(sys.executable)
    if _runs_as(account, ours):
        return ours, {}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base, prefix = Path(sys.base_prefix), Path(sys.prefix)
    copy, view = Path(folder) / "base", Path(folder) / "venv"
    (copy / "bin").mkdir(parents=True)
    (copy / "lib").mkdir()
    shutil.copy2(ours.resolve(), copy / "bin" / version)
    for library in (base / "lib").glob("libpython*"):
        shutil.copy2(library, copy / "lib" / library.name, follow_symlinks=False)
    # Left out: what no lesson imports (tests, GUI, pip's bootstrap) and the base's own packages (ours are the venv's).
    shutil.copytree(base / "lib" / version, copy / "lib" / version, symlinks=True, ignore=shutil.ignore_patterns(
        "test", "site-packages", "config-*", "idlelib", "tkinter", "turtledemo", "ensurepip"))
    (view / "bin").mkdir(parents=True)
    (view / "bin" / "python").symlink_to(copy / "bin" / version)
    (view / "lib" / version).mkdir(parents=True)
    (view / "lib" / version / "site-packages").symlink_to(prefix / "lib" / version / "site-packages")
    (view / "share").symlink_to(prefix / "share")  # the kernel specs and JupyterLab's own files
    (view / "pyvenv.cfg").write_text(f"home = {copy / 'bin'}\ninclude-system-site-packages = false\n"
                                     f"version = {'.'.join(map(str, sys.version_info[:3]))}\n")
    return view / "bin" / "python", {"LD_LIBRARY_PATH": str(copy / "lib")}


def _runs_as(account, python):
    try:
        return subprocess.run([str(python), "-c", "import iolab"], capture_output=True, timeout=START_TIMEOUT_S,
                              user=account.pw_uid, group=account.pw_gid, extra_groups=[]).returncode == 0
    except OSError:  # under a folder the account may not enter
        return False


def chromium_path():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def missing_browser_tools():
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -r requirements-dev.txt)"
    if not chromium_path():
        return "chromium is not installed (Debian/Ubuntu: apt-get install chromium)"
    return None


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)


class Lab:
    """`jupyter lab` on 127.0.0.1, a port the server picks, a random token, no browser, IOLAB_QUICK=1.

    Config, data, runtime, user settings and workspaces live under `home`, so
    the user's own Jupyter set-up is neither read nor written. Autosave is off
    there: the test runs the committed notebooks and must never save outputs
    into them.
    """

    def __init__(self, home=None, account=None):
        self.account = account  # a pwd entry: the lab runs as that user, with STUDENT_SOFT_FILES; None: as we run
        # Run as another user, a folder of that user's own where it can reach it (root's pytest folders are private).
        self.made_home = bool(account) or home is None
        if self.made_home:
            home = tempfile.mkdtemp(prefix="iolab-browser-lab-")
            if account:
                os.chown(home, account.pw_uid, account.pw_gid)
        self.home = Path(home)
        self.python, self.python_env = Path(sys.executable), {}
        if account:
            self.python, self.python_env = reachable_python(self.home / "python", account)
        self.token = secrets.token_hex(16)
        self.marker = secrets.token_hex(8)
        self.process = None
        self.url = None
        self.env = None
        self.started_at = None
        self.log_path = self.home / "jupyter-lab.log"

    def environment(self):
        env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND" and not k.startswith("PYTEST_")}
        for variable, folder in (
            ("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"), ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("JUPYTERLAB_SETTINGS_DIR", "user-settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
            ("IPYTHONDIR", "ipython"),
        ):
            env[variable] = str(self.home / folder)
        env["IOLAB_QUICK"] = "1"
        env[MARKER] = self.marker
        if self.account:  # the lab user's own home, not root's (nobody's is /nonexistent)
            env = {k: v for k, v in env.items() if not k.startswith("XDG_")}
            env.update(HOME=str(self.home), USER=self.account.pw_name, LOGNAME=self.account.pw_name)
            env.update(self.python_env)
        return env

    def as_account(self):
        """Popen's arguments that run a process as the lab's user, or none when the lab runs as we do."""
        if not self.account:
            return {}
        return {"user": self.account.pw_uid, "group": self.account.pw_gid, "extra_groups": []}

    def unreadable(self):
        """Why the lab's user cannot run the lab from this checkout (a folder it cannot read), or None."""
        if not self.account:
            return None
        notebook = next((REPO / "notebooks").glob("*.ipynb"))
        needed = [notebook, REPO / "servers" / "_wrapper.py", *LAB_SETTINGS.rglob("*.json")]
        try:
            probe = subprocess.run(
                [str(self.python), "-c", READ_PROBE, *map(str, needed)], env=self.environment(), cwd=self.home,
                capture_output=True, text=True, timeout=START_TIMEOUT_S, **self.as_account(),
            )
        except OSError as refused:  # its Python itself: under a folder only root may enter
            error = str(refused)
        else:
            if probe.returncode == 0:
                return None
            error = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        return (f"run as root, this test runs JupyterLab as the unprivileged user {self.account.pw_name!r}, who cannot"
                f" read this checkout or its Python ({error}); clone the lab, and build its .venv from a Python, where"
                f" that user can read them (a folder every user may enter, such as /tmp), or name another user in"
                f" {LAB_USER_VARIABLE} ({LAB_USER_VARIABLE}=root runs the lab as root)")

    def results_dir(self):
        """A folder the lab's kernels may write to."""
        folder = self.home / "results"
        folder.mkdir(exist_ok=True)
        if self.account:
            os.chown(folder, self.account.pw_uid, self.account.pw_gid)
        return folder

    def command(self):
        # make lab's arguments first, then what a test needs: its own port, token and no browser window.
        allow_root = ["--allow-root"] if os.geteuid() == 0 and not self.account else []
        # Another user's lab runs JupyterLab as a module of its Python: the `jupyter` script names ours in its #! line.
        jupyter_lab = [str(self.python), "-m", "jupyterlab"] if self.account else [str(JUPYTER), "lab"]
        return [
            *jupyter_lab, "--ip=127.0.0.1", *allow_root, f"--LabApp.app_settings_dir={LAB_SETTINGS}",
            "--port=0", "--ServerApp.port_retries=0", "--no-browser", f"--IdentityProvider.token={self.token}",
            # window.jupyterapp lets the test read the notebook's model; the page is otherwise the same.
            "--expose-app-in-browser",
        ]

    def start(self):
        return self.spawn().wait_ready()

    def spawn(self):
        """Starts `jupyter lab` without waiting for it (wait_ready does), so a browser can start meanwhile."""
        autosave = self.home / "user-settings" / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings"
        autosave.parent.mkdir(parents=True)
        autosave.write_text(json.dumps({"autosave": False}))
        self.env = self.environment()
        self.add_tools_off_kernel()
        command = self.command()
        if self.account:
            # jupyter_server raises its own soft limit to 4096 by default (min_open_files_limit), and its kernels
            # inherit that; papermill, a terminal's Python or another front end leaves them the login's 1024. The
            # lab keeps 1024 here, the tighter of the two, so a lesson that needs more must raise it itself.
            command = [str(self.python), "-c", LOWER_FILES_AND_EXEC, str(STUDENT_SOFT_FILES), *command,
                       f"--ServerApp.min_open_files_limit={STUDENT_SOFT_FILES}"]
            for folder, _, files in os.walk(self.home):  # root wrote the settings: the lab's user may change them
                for path in [folder, *(os.path.join(folder, name) for name in files)]:
                    os.chown(path, self.account.pw_uid, self.account.pw_gid, follow_symlinks=False)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=REPO, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, **self.as_account(),
            )
        self.started_at = time.monotonic()
        return self

    def add_tools_off_kernel(self):
        """TOOLS_OFF_KERNEL: python3 with a PATH that has every program but the optional ones, and the lab told they are
        off (find_program also looks in sbin, where nginx lives)."""
        from iolab import contract

        farm = self.home / "path-without-optional-tools"
        farm.mkdir()
        hidden = link_all_but_optional_tools(farm, self.env.get("PATH"))
        spec = self.home / "data" / "kernels" / TOOLS_OFF_KERNEL / "kernel.json"
        spec.parent.mkdir(parents=True)
        spec.write_text(json.dumps({
            "argv": [str(self.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (without wrk, ab, nginx, strace, ss, redis-server)", "language": "python",
            "env": {"PATH": str(farm), contract.TOOLS_OFF_VARIABLE: ",".join(hidden)},
        }))

    def wait_ready(self):
        """Waits until the server listens; returns the lab. Quick once it has."""
        if self.url:
            return self
        runtime = Path(self.env["JUPYTER_RUNTIME_DIR"])
        deadline = self.started_at + START_TIMEOUT_S
        # The server writes jpserver-<pid>.json, naming its port, BEFORE it listens: jupyter_server binds its port
        # in a callback of the event loop it starts after writing the file. A request sent between the two is refused
        # (the page test's proxy probe once was), so the lab is ready only once its port accepts a connection.
        info_path = runtime / f"jpserver-{self.process.pid}.json"
        info = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.process.returncode}:\n{self.log_tail()}")
            if info is None and info_path.exists():
                try:
                    info = json.loads(info_path.read_text()) or None
                except ValueError:  # caught half-written
                    info = None
            if info:
                assert info["hostname"] == "127.0.0.1", info
                if accepts(info["hostname"], info["port"]):
                    self.url = info["url"].rstrip("/")
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"jupyter lab did not start within {START_TIMEOUT_S} s:\n{self.log_tail()}")

    def start_kernel_for(self, notebook_path, kernel_name="python3"):
        """Starts the notebook's kernel through the server's REST API, as JupyterLab does when it opens a notebook.

        JupyterLab then joins this session rather than starting its own, so the
        kernel boots while the page loads, not after it. `kernel_name`
        TOOLS_OFF_KERNEL runs it without the optional programs.
        """
        request = urllib.request.Request(
            f"{self.url}/api/sessions",
            data=json.dumps({"path": notebook_path, "name": Path(notebook_path).name, "type": "notebook",
                             "kernel": {"name": kernel_name}}).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=START_TIMEOUT_S) as response:
            return json.loads(response.read())

    def stop(self):
        try:
            if self.process is None or self.process.poll() is not None:
                return
            self.process.send_signal(signal.SIGTERM)  # the server shuts its kernels down on SIGTERM
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(STOP_TIMEOUT_S)
        finally:
            if self.made_home:  # the folder this Lab made; pytest's own folders it leaves to pytest
                shutil.rmtree(self.home, ignore_errors=True)

    def log_tail(self, lines=40):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def lab_url(self, workspace):
        """JupyterLab in a workspace of its own (a fresh one: the workspaces folder starts empty)."""
        return f"{self.url}/lab/workspaces/{workspace}?token={self.token}"

    def started_processes(self):
        """Every live process the lab started (kernels, servers, their children), found by the marker, but the lab itself."""
        found = []
        for process in psutil.process_iter(["pid", "cmdline"]):
            if process.pid == self.process.pid:
                continue
            try:
                if process.environ().get(MARKER) == self.marker and process.status() != psutil.STATUS_ZOMBIE:
                    found.append(process)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def kernels(self):
        """The kernels the lab is running: its own children (a kernel the lab let go of counts as left behind)."""
        found = []
        try:
            children = psutil.Process(self.process.pid).children()
        except psutil.Error:
            return found
        for child in children:
            try:
                if "ipykernel" in " ".join(child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE:
                    found.append(child)
            except psutil.Error:
                continue
        return found


def accepts(host, port):
    """Whether something listens on host:port (a connection opens), without sending it anything."""
    try:
        socket.create_connection((host, port), timeout=1.0).close()
    except OSError:
        return False
    return True


def describe(process):
    """pid, command line and listening sockets, for a failure message."""
    try:
        listening = [f"{c.laddr.ip}:{c.laddr.port}" for c in process.net_connections("inet") if c.status == psutil.CONN_LISTEN]
        return f"pid {process.pid} {' '.join(process.cmdline()[:4])} listening on {listening or 'nothing'}"
    except psutil.Error:
        return f"pid {process.pid} (gone)"


def runs_from_servers(cmdline):
    """Whether a command line runs one of the lab's servers (a file under servers/)."""
    return any("servers/" in part for part in cmdline or [])
