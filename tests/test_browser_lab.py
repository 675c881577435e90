"""The browser tests' JupyterLab harness (browser_lab.Lab): when it calls a lab ready.

A stand-in for `jupyter lab` that, as jupyter_server does, writes its jpserver-<pid>.json before it listens.
"""

import subprocess
import sys
import time

from browser_lab import Lab, accepts

# jupyter_server's order: pick a free port, write the info file, and bind the port only once its event loop runs.
WRITES_BEFORE_IT_LISTENS = """
import json, os, socket, sys, time
runtime, gap_s = sys.argv[1], float(sys.argv[2])
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
info = {"hostname": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}/", "pid": os.getpid()}
os.makedirs(runtime, exist_ok=True)
with open(os.path.join(runtime, f"jpserver-{os.getpid()}.json.tmp"), "w") as out:
    json.dump(info, out)
os.rename(os.path.join(runtime, f"jpserver-{os.getpid()}.json.tmp"), os.path.join(runtime, f"jpserver-{os.getpid()}.json"))
time.sleep(gap_s)
listening = socket.create_server(("127.0.0.1", port))
time.sleep(60)
"""


def test_a_lab_is_ready_only_once_its_port_accepts_a_connection(tmp_path):
    lab = Lab(home=tmp_path)
    lab.env = {"JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    lab.process = subprocess.Popen([sys.executable, "-c", WRITES_BEFORE_IT_LISTENS, lab.env["JUPYTER_RUNTIME_DIR"], "0.5"])
    lab.started_at = time.monotonic()
    try:
        lab.wait_ready()
        port = int(lab.url.rsplit(":", 1)[1])
        # A request sent the moment wait_ready returns must reach the server (the proxy probe's once did not).
        assert accepts("127.0.0.1", port), "wait_ready returned before the lab's port accepted a connection"
        assert (tmp_path / "runtime" / f"jpserver-{lab.process.pid}.json").exists()
    finally:
        lab.stop()
