"""Helpers the tests share.

A GET on a kept-alive connection, a server started by hand or from a test's own script, waiting, a parent killed, a PATH
without tools.
"""

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

import psutil

from iolab import children, contract, environment, registry, servers

GONE_WITHIN_S = 2.0  # how long a process may take to exit after its parent dies (the lab's promise)
POLL_S = 0.02


# A missing optional tool must never stop a lesson: the papermill runs of the lessons (test_notebooks.py,
# test_make_student.py) run without them, and so do some lessons in the browser (tool_paths.py says which and why), so
# one CI run takes both paths of every lesson. IOLAB_WITH_TOOLS=1 keeps them for the papermill runs.
TOOLS_OFF = os.environ.get("IOLAB_WITH_TOOLS") != "1"


def link_all_but_optional_tools(farm, path=None):
    """Fill the folder `farm` with a link to every program on `path` (default $PATH) but the optional ones lessons call
    (wrk, ab, nginx, strace, ss, ...); returns their names. The farm alone, as PATH, leaves every other program reachable
    by name, the first on the PATH first."""
    hidden = sorted(environment.DEBIAN_PACKAGES)
    for folder in (path or os.environ.get("PATH") or os.defpath).split(os.pathsep):
        with contextlib.suppress(OSError):
            for name in os.listdir(folder):
                link = os.path.join(farm, name)
                if name not in hidden and not os.path.lexists(link):
                    os.symlink(os.path.join(folder, name), link)
    return hidden


@contextlib.contextmanager
def without_optional_tools():
    """Run what is inside on a PATH without the optional programs lessons call (wrk, ab, nginx, strace, ss, ...), and
    with the lab told they are off (nginx lives in sbin, where find_program looks too). Yields their names."""
    with tempfile.TemporaryDirectory(prefix="iolab-path-") as farm:
        hidden = link_all_but_optional_tools(farm, os.environ.get("PATH"))
        with children.environment(PATH=farm, **{contract.TOOLS_OFF_VARIABLE: ",".join(hidden)}):
            yield hidden


def get(connection, path):
    """(status, Content-Length header, body) of a GET on an http.client connection, which stays open for the next."""
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, response.getheader("Content-Length"), response.read().decode()


def start_by_hand(name, *args):
    """Start a server the way a student would from a terminal, without the launcher: (process, its first line)."""
    process = subprocess.Popen(
        [sys.executable, str(servers.SERVERS_DIR / registry.get(name).script), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline().strip()
    return process, line


@contextlib.contextmanager
def script_server(tmp_path, source, *args):
    """Run a test's own small server (Python `source` that announces its port as the contract says): yields its URL."""
    script = tmp_path / "script_server.py"
    script.write_text(source)
    process = children.spawn(children.python(script, *args), stdout=subprocess.PIPE)
    try:
        host, port = contract.parse_listening(process.stdout.readline().decode())
        yield f"http://{host}:{port}"
    finally:
        process.kill()
        process.wait()


def left_listening(port):
    """Whether something still listens on loopback `port` after its server stopped, and is not another lane's.

    Under make test's lanes (tests/lanes.py) another worker's server may be given the freed port at once, and a probe
    may even connect to itself on a port nothing holds: neither is a leak. A listener whose owner this user may not
    see counts as one."""
    with socket.socket() as probe:
        if probe.connect_ex((contract.LOOPBACK, port)) != 0:
            return False
    owners = [each.pid for each in psutil.net_connections("tcp")
              if each.status == psutil.CONN_LISTEN and each.laddr.port == port]
    return any(pid is None or not in_another_lane(pid) for pid in owners)


def in_another_lane(pid):
    """Whether process `pid` descends from another pytest-xdist worker of this run (whose parent is ours)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return False
    try:
        process = psutil.Process(pid)
        line = [process, *process.parents()]
        return any(each.ppid() == os.getppid() and each.pid != os.getpid() for each in line)
    except psutil.NoSuchProcess:  # gone since: it listens no more
        return True


def wait_until(condition, within_s, poll_s=POLL_S):
    """Poll `condition()` until it is true or `within_s` has passed; returns its last value."""
    deadline = time.monotonic() + within_s
    while not (met := condition()) and time.monotonic() < deadline:
        time.sleep(poll_s)
    return met


def gone(pid):
    """True once `pid` has exited (a zombie nobody has reaped yet counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until_gone(pids, within_s=GONE_WITHIN_S):
    """Wait for every pid to exit; returns the ones still running after `within_s`."""
    wait_until(lambda: all(gone(pid) for pid in pids), within_s)
    return [pid for pid in pids if not gone(pid)]


def kill_the_parent(program, within_s=GONE_WITHIN_S, python=sys.executable, **popen):
    """Run `program` (Python source) as a parent, SIGKILL it once it has printed, then see what of its children survives.

    The program starts its children, prints one JSON object with their "pids"
    (and anything else the test wants) and sleeps. Returns (that object, the pids
    still running `within_s` after the kill). `python` and `popen` (user=, env=) run it as another user.
    """
    source = textwrap.dedent(program) + "\nimport time\ntime.sleep(60)\n"
    parent = subprocess.Popen([str(python), "-c", source], stdout=subprocess.PIPE, text=True, **popen)
    try:
        line = parent.stdout.readline()
        assert line, "the parent printed nothing"
        report = json.loads(line)
        assert report["pids"] and not any(gone(pid) for pid in report["pids"]), report
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    return report, wait_until_gone(report["pids"], within_s)


def trace_iteration(t, select_ms, callbacks_ms, events=1, ready=0):
    """One iteration of the hand-built loop's trace, as iolab.contract.trace_record writes it."""
    return {"t": t, "select_ms": select_ms, "callbacks_ms": callbacks_ms, "events": events, "ready": ready, "timers": 0}


def run_with_file_limits(soft, hard, code):
    """Runs `code` in a fresh Python whose RLIMIT_NOFILE is (soft, hard), as a laptop's login gives; returns its output, split."""
    hard = min(hard, resource.getrlimit(resource.RLIMIT_NOFILE)[1])  # no privilege needed to lower either

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, hard), hard))

    done = subprocess.run([sys.executable, "-c", code], preexec_fn=lower, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def table_rows(text, where, columns):
    """{first cell, unquoted: its cells} of a markdown table whose rows start with a backquoted name.

    Each row must have the named `columns`, and no name may come twice; `where` names the file in the failure.
    """
    rows = {}
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == len(columns), f"{where}: a row needs {', '.join(columns)}: {line}"
        name = cells[0].strip("`")
        assert name not in rows, f"{where} names {name} twice"
        rows[name] = cells
    return rows
