"""A student at a hub, driven over HTTP: log in, start their server, run a lesson in a kernel of it, stop.

The lesson runs the way a student runs it: in their own server, cell after cell, through the kernel's WebSocket
(Jupyter's messaging protocol), with the parameters cell followed by one cell that sets the run's own values.
tests/test_hub.py and benchmarks/class_on_one_host.py use it; it needs requests and websockets.
"""

import json
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import quote

import requests
from websockets.sync.client import connect

HTTP_TIMEOUT_S = 30
CLAIM_MARKS = ("✓", "✗", "⚠", "–")  # iolab.claims: holds, fails, excused (others held the CPUs), skipped


@dataclass
class LessonRun:
    """What one lesson's run in a student's server gave: whether every cell ran, its printed text, its claims."""

    notebook: str
    seconds: float
    error: str | None  # the first cell's error (its name and message), None when every cell ran
    text: str = ""
    claims: dict[str, int] = field(default_factory=dict)  # mark -> how many lines carried it

    @property
    def passed(self):
        return self.error is None


class Student:
    """One student at the hub at `base_url` (http://127.0.0.1:PORT), logged in with their name and password."""

    def __init__(self, base_url, name, password):
        self.base_url, self.name = base_url.rstrip("/"), name
        self.http = requests.Session()
        # The hub's API hands a token to whoever shows the name and password, as its login page does.
        reply = self.http.post(f"{self.base_url}/hub/api/users/{name}/tokens", timeout=HTTP_TIMEOUT_S,
                               json={"auth": {"username": name, "password": password}, "expires_in": 3600,
                                     "note": "iolab class_client"})
        reply.raise_for_status()
        self.token = reply.json()["token"]
        self.http.headers["Authorization"] = f"token {self.token}"

    @property
    def server_url(self):
        return f"{self.base_url}/user/{quote(self.name)}"

    def start_server(self, timeout_s=90):
        """Ask the hub for this student's server and wait until it answers; returns the seconds it took."""
        started = time.monotonic()
        reply = self.http.post(f"{self.base_url}/hub/api/users/{self.name}/server", timeout=HTTP_TIMEOUT_S)
        if reply.status_code not in (201, 202, 400):  # 400: already running
            reply.raise_for_status()
        while time.monotonic() - started < timeout_s:
            state = self.http.get(f"{self.base_url}/hub/api/users/{self.name}", timeout=HTTP_TIMEOUT_S).json()
            server = state.get("servers", {}).get("")
            if server and server.get("ready"):
                return time.monotonic() - started
            time.sleep(0.25)
        raise TimeoutError(f"{self.name}'s server was not ready within {timeout_s} s")

    def stop_server(self):
        self.http.delete(f"{self.base_url}/hub/api/users/{self.name}/server", timeout=HTTP_TIMEOUT_S)

    def notebook(self, path):
        """A notebook of the student's, as their server reads it (path relative to their home)."""
        reply = self.http.get(f"{self.server_url}/api/contents/{quote(path)}", timeout=HTTP_TIMEOUT_S)
        reply.raise_for_status()
        return reply.json()["content"]

    def run_lesson(self, path, parameters, cell_timeout_s=120):
        """Run the notebook at `path` (relative to the home) in a new kernel of the student's server, in its folder,
        with `parameters` set after its parameters cell; the kernel is shut down afterwards."""
        started = time.monotonic()
        cells = [cell for cell in self.notebook(path)["cells"] if cell["cell_type"] == "code"]
        folder = path.rpartition("/")[0]
        reply = self.http.post(f"{self.server_url}/api/kernels", timeout=HTTP_TIMEOUT_S,
                               json={"name": "python3", "path": folder})
        reply.raise_for_status()
        kernel = reply.json()["id"]
        printed, error = [], None
        try:
            with Kernel(self, kernel) as running:
                for cell in cells:
                    sources = [cell["source"]]
                    if "parameters" in cell.get("metadata", {}).get("tags", []):
                        sources.append("\n".join(f"{name} = {value!r}" for name, value in parameters.items()))
                    for source in sources:
                        text, error = running.execute(source, cell_timeout_s)
                        printed.append(text)
                        if error:
                            break
                    if error:
                        break
        finally:
            self.http.delete(f"{self.server_url}/api/kernels/{kernel}", timeout=HTTP_TIMEOUT_S)
        text = "".join(printed)
        claims = {mark: sum(line.startswith(mark + " ") for line in text.splitlines()) for mark in CLAIM_MARKS}
        return LessonRun(path, time.monotonic() - started, error, text, claims)


class Kernel:
    """The WebSocket of one kernel in a student's server: execute code, collect what it printed."""

    def __init__(self, student, kernel_id):
        url = student.server_url.replace("http://", "ws://", 1) + f"/api/kernels/{kernel_id}/channels"
        self.connection = connect(url, additional_headers={"Authorization": f"token {student.token}"},
                                  open_timeout=HTTP_TIMEOUT_S, max_size=None)
        self.socket = None
        self.session = uuid.uuid4().hex
        self.user = student.name

    def __enter__(self):
        self.socket = self.connection.__enter__()
        return self

    def __exit__(self, *exc):
        self.connection.__exit__(*exc)

    def execute(self, code, timeout_s):
        """(what the code printed, its error as 'Name: message' or None), once the kernel is idle again."""
        msg_id = uuid.uuid4().hex
        self.socket.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": self.user,
                       "session": self.session, "date": "", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True},
        }))
        printed, error, replied, idle = [], None, False, False
        deadline = time.monotonic() + timeout_s
        while not (replied and idle):
            left = deadline - time.monotonic()
            if left <= 0:
                return "".join(printed), f"TimeoutError: the cell ran past {timeout_s} s"
            frame = self.socket.recv(timeout=left)
            if isinstance(frame, bytes):
                continue  # a message with binary buffers (a widget's): never a stream, an error or a status
            message = json.loads(frame)
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                printed.append(content["text"])
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "execute_reply":
                replied = True
                if content.get("status") == "error" and error is None:
                    error = f"{content.get('ename')}: {content.get('evalue')}"
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
        return "".join(printed), error
