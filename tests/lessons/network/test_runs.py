"""Lesson 14's client against real servers in real subprocesses (under the shared lock: it times)."""

import os
import subprocess
import sys

import psutil
import pytest

from iolab import children, link, neighbours, servers, usage
from iolab.claims import Claims
from iolab.lessons.network import claims, runs


def test_nagle_on_loopback_stalls_for_the_delayed_ack_and_keeps_its_claims():
    found = runs.nagle(None, 12)
    assert len(found["nagle_s"]) == len(found["nodelay_s"]) == 12
    judged = Claims("test")
    claims.nagle_claims(judged, found, "on loopback")
    assert not judged.failed(), judged.lines()


def test_each_exchange_returns_its_figures_on_loopback():
    with servers.serve(runs.SERVER) as server:
        found = runs.exchanges("round_trips", server, repeats=3, n=4)
    assert found["n"] == 4 and all(len(found[key]) == 3 for key in ("connect_s", "sequence_s", "connections_s"))
    assert min(found["sequence_s"]) > 0 and min(found["pipelined_s"]) > 0
    with servers.serve(runs.SENDER) as server:
        sizes = runs.exchanges("transfers", server, sizes="20000,300000", repeats=2, cc="reno")
        connects = runs.exchanges("connects", server, repeats=12, at_once=4)
    assert sorted(sizes) == ["20000", "300000"] and all(len(times) == 2 for times in sizes.values())
    assert len(connects) == 12 and max(connects) < 1.0  # loopback loses no SYN


def test_a_congestion_control_this_kernel_lacks_is_refused_by_the_sender():
    with servers.serve(runs.SENDER) as server:
        try:
            runs.exchanges("transfers", server, sizes="1000", repeats=1, cc="vegas")
        except RuntimeError as error:
            assert "vegas" in str(error)
        else:
            raise AssertionError("the client took an answer for cc=vegas")


@pytest.mark.skipif(link.why_not() is not None, reason=f"no link here: {link.why_not()}")
def test_section_1_on_a_real_link_costs_its_loopback_time_and_its_round_trips():
    with runs.built(20, 0.0, None) as path:
        found = runs.round_trips(path, 3, 4)
        usage = path.delay_line_usage()
    judged = Claims("test")
    claims.round_trip_claims(judged, found, 20)
    assert not judged.failed(), judged.lines()
    assert usage.packets > 0 and usage.dropped == 0
    assert min(found["link"]["connect_s"]) >= 0.020 > max(found["loopback"]["connect_s"])  # the delay line's floor
    assert all(0 <= found[where]["neighbours"]["others_share"] <= 1 for where in ("link", "loopback"))


SPIN = "import time\nbegan = time.process_time()\nwhile time.process_time() - began < 0.3:\n    pass\n"


@pytest.mark.skipif(link.why_not() is not None, reason=f"no link here: {link.why_not()}")
def test_the_delay_line_and_a_process_in_the_link_s_namespaces_count_as_ours():
    """iolab.neighbours counts our own tree's CPU as ours: the delay line and what runs inside the namespaces are
    this process's children, so their CPU is never read as a neighbour's."""
    with runs.built(20, 0.0, None) as path:
        before = neighbours.read()
        children.run(path.argv("server", children.python("-c", SPIN)), 30)
        after = neighbours.read()
        delay_line = psutil.Process(path.middle.pid)
        assert delay_line in psutil.Process().children(recursive=True)
        assert usage.process_cpu_s(delay_line) >= path.delay_line_usage().cpu_s * 0.9  # read through its pid
    assert after.own_cpu_s - before.own_cpu_s >= 0.3  # the spin, reaped: ours


@pytest.mark.skipif(link.why_not() is not None, reason=f"no link here: {link.why_not()}")
def test_section_2_slow_clients_hold_sync_workers_alone_and_not_behind_nginx_or_at_tornado():
    with runs.built(20, 0.0, None) as path:
        found = runs.slow_clients(path, 16, 150_000, 1, 3)
        assert path.spec.rate_mbit is None  # the rate is gone for the sections after it
    judged = Claims("test")
    claims.slow_client_claims(judged, found, 20)
    assert not judged.failed(), judged.lines()
    assert list(found["servers"]) == ["gunicorn alone", "nginx in front", "Tornado"] and len(found["alone_s"]) == 3
    # Each server really served the slow clients: two of them, each at least one whole answer.
    assert all(run["clients"] == 2 and len(run["transfer_s"]) >= 2 for run in found["servers"].values())


def test_nginx_keeps_its_workers_as_the_one_user_a_user_namespace_maps(tmp_path):
    """As root of `unshare --user --map-root-user`, nobody is not mapped: nginx must not try to become it."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import _nginx; "
            "print(repr(_nginx.user_line(sys.argv[2])), repr(_nginx.user_line(sys.argv[3])))")
    only_me, everyone = tmp_path / "only_me", tmp_path / "everyone"
    only_me.write_text("         0       1000          1\n")
    everyone.write_text("         0          0 4294967295\n")
    said = subprocess.run([sys.executable, "-c", code, str(servers.SERVERS_DIR), str(only_me), str(everyone)],
                          capture_output=True, text=True, check=True).stdout
    if os.geteuid() == 0:
        assert said.startswith("'user root;") and said.endswith(" ''\n")
    else:
        assert said == "'' ''\n"
