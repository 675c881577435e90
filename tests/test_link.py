"""The lab's link: its range refused outside, a server and load across it, its loss, nothing left after SIGKILL."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import kill_the_parent, wait_until
from iolab import children, contract, link, load, servers
from iolab.params import ParameterError

REPO = Path(__file__).resolve().parents[1]
REASON = link.why_not()
needs_link = pytest.mark.skipif(REASON is not None, reason=f"the lab cannot build a link here: {REASON}")
as_root_only = pytest.mark.skipif(os.geteuid() != 0, reason="run as root, this test starts the parent as `nobody`")


@pytest.mark.parametrize("field, value", [("rtt_ms", -1), ("loss_percent", 80), ("rate_mbit", 0), ("rtt_ms", "40")])
def test_a_spec_names_the_field_it_refuses(field, value):
    with pytest.raises(ParameterError, match=field):
        link.LinkSpec(**{field: value})


def test_the_benchmarking_range_is_refused_outside_the_labs_namespaces(monkeypatch):
    with pytest.raises(ValueError, match=r"198\.18\.0\.0/15.*iolab\.link"):
        contract.check_loopback("198.18.0.2")
    # Named as our own namespace, it is still refused here: this namespace routes to other networks.
    monkeypatch.setenv(contract.LAB_NETNS_VARIABLE, os.readlink("/proc/self/ns/net"))
    with pytest.raises(ValueError, match=r"198\.18\.0\.0/15"):
        contract.check_loopback("198.18.0.2")
    with pytest.raises(ValueError, match=r"198\.18\.0\.0/15"):
        servers.start("tornado_app", host="198.18.0.2")
    with pytest.raises(load.LoadParameterError, match=r"198\.18\.0\.0/15"):
        load.run_load("http://198.18.0.2:8000/", requests=1, concurrency=1)
    assert contract.check_loopback("127.0.0.1") == "127.0.0.1"
    with pytest.raises(ValueError, match="loopback"):
        contract.check_loopback("192.0.2.1")


def test_a_server_run_by_hand_refuses_the_range_outside_a_lab_namespace():
    server = children.python(REPO / "servers" / "tornado_app.py", "--host", "198.18.0.2", "--port", "0")
    done = children.run(server, timeout_s=20)
    assert done.returncode != 0 and "198.18.0.0/15" in done.stderr, done.stderr
    assert "LISTENING" not in done.stdout
    # Told it is in the lab's namespace while it is in ours, whose routes lead to other networks: refused too.
    with children.environment(**{contract.LAB_NETNS_VARIABLE: os.readlink("/proc/self/ns/net")}):
        done = children.run(server, timeout_s=20)
    assert done.returncode != 0 and "198.18.0.0/15" in done.stderr, done.stderr


def test_why_not_names_a_missing_tool():
    code = "from iolab import link; print(link.why_not())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          env={**os.environ, contract.TOOLS_OFF_VARIABLE: "ethtool"})
    assert "ethtool" in done.stdout, done.stdout + done.stderr


@needs_link
def test_a_server_and_its_load_cross_the_link_in_a_round_trip():
    with link.build(link.LinkSpec(rtt_ms=30)) as path, servers.serve("tornado_app", link=path) as server:
        assert server.host == path.server_host
        result = load.run_load(server.url + "/", requests=10, concurrency=1, timeout_s=5, link=path, server=server)
        latencies = sorted(sample.latency for sample in result.samples)
        assert [sample.status for sample in result.samples] == [200] * 10, result.client_stderr
        # A request and its answer each cross the delay line once: no answer comes sooner than the round trip.
        assert latencies[0] >= 0.030, latencies
        usage = path.delay_line_usage()
        assert usage.packets >= 2 * 10 and usage.dropped == 0, usage  # each request and each answer
        with pytest.raises(ParameterError, match="loss_percent"):
            path.set(loss_percent=99)
        assert path.spec.loss_percent == 0
    with pytest.raises(link.LinkError, match="closed"):
        servers.start("tornado_app", link=path)


COUNT_DATAGRAMS = """
import socket, sys
listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
listener.bind((sys.argv[1], 0))
listener.settimeout(1.0)
print(listener.getsockname()[1], flush=True)
got = 0
try:
    while listener.recv(100) != b"end":
        got += 1
except TimeoutError:
    pass
print(got, flush=True)
"""
SEND_DATAGRAMS = """
import socket, sys, time
sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[3])):
    sender.sendto(b"x", (sys.argv[1], int(sys.argv[2])))
    time.sleep(0.0005)
"""


@needs_link
def test_the_delay_line_drops_the_share_of_frames_it_is_told():
    sent, loss = 400, 0.25
    with link.build(link.LinkSpec(rtt_ms=2, loss_percent=loss * 100)) as path:
        counter = path.spawn("server", [sys.executable, "-c", COUNT_DATAGRAMS, path.server_host])
        try:
            port = int(children.read_until(counter.stdout, b"\n", 10))
            done = children.run(path.argv("client", [sys.executable, "-c", SEND_DATAGRAMS, path.server_host, port,
                                                     sent]), timeout_s=30)
            assert done.returncode == 0, done.stderr
            received = int(counter.communicate(timeout=10)[0])
        finally:
            counter.kill()
            counter.wait()
        usage = path.delay_line_usage()
    # Each datagram is lost with chance `loss`, on its own: binomial, so 5 standard deviations either side.
    width = 5 * (sent * loss * (1 - loss)) ** 0.5
    assert abs(sent - received - sent * loss) <= width, (sent, received)
    assert usage.dropped >= sent - received and usage.packets >= sent, usage


KILLED_PARENT = """
import json
from iolab import link, load, servers
path = link.start(link.LinkSpec(rtt_ms=10))
server = servers.start("tornado_app", link=path)
result = load.run_load(server.url + "/", requests=3, concurrency=1, timeout_s=5, link=path)
holders = [path.middle, *path.holders.values()]
print(json.dumps({"pids": [holder.pid for holder in holders] + [server.pid], "mode": path.mode,
                  "netns": [holder.netns for holder in holders], "answered": len(result.samples)}), flush=True)
"""


def assert_nothing_outlives(report, survivors):
    assert report["answered"] == 3, report
    assert len(set(report["netns"])) == 3 and held([os.readlink("/proc/self/ns/net")])  # the scan finds a live one
    assert not survivors, f"still running after their parent was SIGKILLed: {survivors}"
    assert wait_until(lambda: not held(report["netns"]), 2.0), f"a namespace of the link is still held: {held(report['netns'])}"


def held(namespaces):
    """The processes on this machine inside, or holding a descriptor of, any of `namespaces`."""
    holders = []
    for entry in glob.glob("/proc/[0-9]*/ns/net") + glob.glob("/proc/[0-9]*/fd/*"):
        try:
            if os.readlink(entry) in namespaces:
                holders.append(entry)
        except OSError:  # the process, or the descriptor, went meanwhile
            pass
    return holders


@needs_link
def test_a_sigkilled_kernel_leaves_no_namespace_delay_line_or_server():
    report, survivors = kill_the_parent(KILLED_PARENT)
    assert_nothing_outlives(report, survivors)


@as_root_only
def test_an_ordinary_user_builds_a_link_and_a_sigkill_leaves_nothing():
    from browser_lab import ordinary_user

    folder = tempfile.mkdtemp(prefix="iolab-test-link-")
    try:
        python, env, home, as_nobody = ordinary_user(folder, REPO)
        said = subprocess.run([str(python), "-c", "from iolab import link; print(link.why_not())"], env=env,
                              cwd=home, **as_nobody, capture_output=True, text=True, timeout=30).stdout.strip()
        if said != "None":
            pytest.skip(f"an ordinary user cannot build a link here: {said}")
        report, survivors = kill_the_parent(KILLED_PARENT, python=python, env=env, cwd=home, **as_nobody)
        assert report["mode"] == "user", report
        assert_nothing_outlives(report, survivors)
    finally:
        shutil.rmtree(folder, ignore_errors=True)



SEND_BYTES = """
import socket, sys
listener = socket.create_server((sys.argv[1], 0))
print(listener.getsockname()[1], flush=True)
connection, _ = listener.accept()
connection.sendall(bytes(int(sys.argv[2])))
connection.close()
"""
TIME_BYTES = """
import socket, sys, time
began = time.perf_counter()
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20) as connection:
    while connection.recv(1 << 16):
        pass
print(time.perf_counter() - began)
"""


def transfer_s(path, size):
    """Seconds for `size` bytes from the server's side to the client's, from the connect to the last byte."""
    sender = path.spawn("server", [sys.executable, "-c", SEND_BYTES, path.server_host, size])
    try:
        port = int(children.read_until(sender.stdout, b"\n", 10))
        done = children.run(path.argv("client", [sys.executable, "-c", TIME_BYTES, path.server_host, port]), 30)
        assert done.returncode == 0, done.stderr
        return float(done.stdout)
    finally:
        sender.kill()
        sender.wait()


@needs_link
def test_set_changes_the_round_trip_and_the_rate_between_runs():
    with link.build(link.LinkSpec(rtt_ms=5)) as path, servers.serve("tornado_app", link=path) as server:
        path.set(rtt_ms=60)
        result = load.run_load(server.url + "/", requests=3, concurrency=1, timeout_s=5, link=path)
        assert min(sample.latency for sample in result.samples) >= 0.060
        # 2 Mbit/s each way: 200 kB cannot arrive in less than 0.79 s, whatever else the machine does (only tbf's
        # burst, two frames, may leave at once).
        path.set(rtt_ms=5, rate_mbit=2)
        assert transfer_s(path, 200_000) >= (200_000 - 2 * 1514) * 8 / 2e6
        path.set(rate_mbit=None)
        shown = children.run(path.argv("server", [link.tool("tc"), "qdisc", "show", "dev", "eth0"]), 10).stdout
        assert "tbf" not in shown, shown
        assert path.spec == link.LinkSpec(rtt_ms=5)


@needs_link
def test_why_not_says_why_where_no_namespace_may_be_made():
    # A user namespace of our own whose limits allow no further network or user namespace: as a container's
    # seccomp profile, or a distribution's sysctl, refuses them elsewhere.
    limits = "echo 0 > /proc/sys/user/max_net_namespaces && echo 0 > /proc/sys/user/max_user_namespaces"
    code = "from iolab import link; print(link.why_not())"
    done = children.run([link.tool("unshare"), "--user", "--map-root-user", "sh", "-c",
                         f"{limits} && exec {sys.executable} -c '{code}'"], 30)
    if not done.stdout:
        pytest.skip(f"no user namespace whose limits we may lower here: {done.stderr.strip()}")
    assert done.stdout.startswith("this machine lets this user make no network namespace"), done.stdout + done.stderr
    assert "unshare said" in done.stdout


@needs_link
def test_a_server_takes_the_range_only_where_the_link_says_it_is():
    server = [*children.python(REPO / "servers" / "tornado_app.py"), "--host", "198.18.0.2", "--port", "0"]
    with link.build(link.LinkSpec(rtt_ms=1)) as path:
        # In the server's namespace, but not told so: refused, as anywhere else.
        done = children.run(path.argv("server", ["env", "-u", contract.LAB_NETNS_VARIABLE, *server]), 20)
        assert done.returncode != 0 and "198.18.0.0/15" in done.stderr, done.stderr
