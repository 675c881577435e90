"""`make hub`'s JupyterHub on loopback: three students run a lesson at once, and nothing of theirs outlives the hub.

Root only: the hub starts each student's server as that student.
"""

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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import requests
from browser_lab import reachable_python

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "hub"))
from class_client import Kernel, Student  # noqa: E402 (hub/ is a folder of scripts, as tools/ is)

LESSON = "iolab/00-start-here.ipynb"  # among the quickest lessons (about 13 s quick), and it runs no tool but Python
PASSWORD = secrets.token_hex(8)
START_TIMEOUT_S = 45
STOP_TIMEOUT_S = 30
# What a student copy carries (tools/make_student.py) and what it must not.
DISABLE_LINE = "iolab.checks.disable_solutions()"
SOLUTION_MARKER = "### BEGIN SOLUTION"
IDENTITY = "import os, iolab.checks; print(os.getuid(), iolab.checks.solutions_disabled())"


def why_not_here():
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "the hub starts each student's server as that student's user: run as root on Linux (CI does)"
    missing = [tool for tool in ("node", "npm", "useradd", "userdel") if not shutil.which(tool)]
    if missing:
        return f"{', '.join(missing)} missing (the hub's proxy needs Node.js 20 or newer and npm; accounts need passwd)"
    return None


pytestmark = pytest.mark.skipif(bool(why_not_here()), reason=why_not_here() or "")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    """configurable-http-proxy as hub/package-lock.json pins it, by `npm ci` (about 5 s; npm's cache keeps it)."""
    folder = tmp_path_factory.mktemp("proxy")
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(REPO / "hub" / name, folder / name)
    done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline"],
                          cwd=folder, capture_output=True, text=True, timeout=180)
    if done.returncode:
        pytest.skip(f"npm ci could not install configurable-http-proxy: {done.stderr.strip()[-300:]}")
    return folder / "node_modules" / ".bin" / "configurable-http-proxy"


@pytest.fixture
def folder():
    """A folder every user may enter (pytest's own are root's alone): the students' Python lives in it."""
    made = Path(tempfile.mkdtemp(prefix="iolab-hub-test-"))
    made.chmod(0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def students():
    """Three accounts the hub makes (serve.py --students), removed with their homes afterwards."""
    stem = f"iolab{secrets.token_hex(3)}"
    names = [f"{stem}{letter}" for letter in "abc"]
    yield names
    for name in names:
        subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=30)


def student_processes(uids):
    found = []
    for process in psutil.process_iter(["uids", "cmdline"]):
        try:
            if process.info["uids"] and process.info["uids"].real in uids:
                found.append(process)
        except psutil.Error:
            continue
    return found


def start_hub(folder, proxy, names, port):
    """hub/serve.py with the parts ready (our Python, made reachable for the students, this checkout, the proxy)."""
    account = pwd.getpwnam("nobody")
    python, python_env = reachable_python(folder / "python", account)
    probe = subprocess.run([str(python), "-c", "import iolab"], capture_output=True, text=True,
                           env={**os.environ, **python_env}, cwd="/", timeout=120,
                           user=account.pw_uid, group=account.pw_gid, extra_groups=[])
    if probe.returncode:
        pytest.skip(f"an unprivileged user cannot run this checkout's Python ({probe.stderr.strip()[-200:]});"
                    " clone the lab and build its .venv where every user can read them")
    env = {**os.environ, **python_env, "IOLAB_HUB_PASSWORD": PASSWORD}
    with open(folder / "hub.log", "wb") as log:  # the hub keeps its own copy of the descriptor
        hub = subprocess.Popen(
            [sys.executable, str(REPO / "hub" / "serve.py"), "--python", str(python), "--lab", str(REPO),
             "--proxy", str(proxy), "--port", str(port), "--state", str(folder / "state"), "--students", " ".join(names),
             "--quick", "--cpu-limit", "0.5", "--mem-limit", "1G"],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/hub/api", timeout=2).ok:
                return hub
        except requests.ConnectionError:
            pass
        assert hub.poll() is None, f"the hub exited: {(folder / 'hub.log').read_text()[-2000:]}"
        time.sleep(0.3)
    raise AssertionError(f"the hub did not answer in {START_TIMEOUT_S} s: {(folder / 'hub.log').read_text()[-2000:]}")


def one_student(base_url, name):
    """Log in, start the server, check who it runs as, run the lesson; (the student's uid, identity line, run)."""
    student = Student(base_url, name, PASSWORD)
    student.start_server()
    uid = pwd.getpwnam(name).pw_uid
    run = student.run_lesson(LESSON, {"quick": True, "solutions": False, "results_path": None})
    reply = student.http.post(f"{student.server_url}/api/kernels", json={"name": "python3"}, timeout=30)
    kernel = reply.json()["id"]
    with Kernel(student, kernel) as running:
        identity, error = running.execute(IDENTITY, 60)
    student.http.delete(f"{student.server_url}/api/kernels/{kernel}", timeout=30)
    assert error is None, error
    return uid, identity.split(), run


def test_three_students_run_a_lesson_at_once_and_nothing_of_theirs_outlives_the_hub(folder, proxy, students):
    port = free_port()
    hub = start_hub(folder, proxy, students, port)
    uids = set()
    try:
        uids = {pwd.getpwnam(name).pw_uid for name in students}  # serve.py made the accounts
        with ThreadPoolExecutor(len(students)) as pool:
            results = list(pool.map(lambda name: one_student(f"http://127.0.0.1:{port}", name), students))
        for name, (uid, identity, run) in zip(students, results):
            # The kernel ran as the student, with solutions off, and the lesson ran to its end, its claims held.
            assert identity == [str(uid), "True"], f"{name}'s kernel: {identity}"
            assert run.passed, f"{name}'s lesson failed: {run.error}\n{run.text[-1500:]}"
            assert run.claims["✓"] >= 3 and run.claims["✗"] == 0, f"{name}: {run.claims}"
            # The hub declared limits its local spawner does not enforce: lesson 00 says so.
            assert "asked for 0.5 CPU per student (CPU_LIMIT) but nothing enforces it" in run.text, run.text[:3000]
            assert "asked for at most 1.00 GiB per student (MEM_LIMIT) but nothing enforces it" in run.text
            copy = Path(pwd.getpwnam(name).pw_dir) / "iolab"
            assert copy.stat().st_uid == uid, f"{name}'s copy is not theirs"
            first = (copy / Path(LESSON).name).read_text()
            assert DISABLE_LINE in first and SOLUTION_MARKER not in first, f"{name}'s copy is not a student copy"
            assert json.loads(first)["cells"], f"{name}'s copy is empty"
        assert student_processes(uids), "no student's server was running as its student"
    finally:
        hub.terminate()  # as Ctrl-C would: JupyterHub stops the servers, then the proxy, then itself
        try:
            hub.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(hub.pid, signal.SIGKILL)
            hub.wait()
        # The hub stops every student's server; each server its kernels; each kernel what its lesson started.
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while (left := student_processes(uids)) and time.monotonic() < deadline:
            time.sleep(0.2)
        for process in left:
            try:
                process.kill()
            except psutil.Error:
                pass
    assert not left, f"students' processes outlived the hub: {[(p.pid, p.info['cmdline']) for p in left]}"
    listening = [c for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN and c.laddr.port == port]
    assert not listening, f"the hub's port {port} is still open after the hub stopped"
