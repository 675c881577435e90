"""Lesson 12's section 2: sync workers hold one long poll each.

And gunicorn's --timeout kills a parked one.
"""

import socket
import time

import pytest

from helpers import kill_the_parent
from iolab import registry, servers
from iolab.claims import Claims, ClaimsFailed
from iolab.lessons.long_lived import workers


@pytest.fixture(scope="module")
def result():
    if workers.missing(workers.GUNICORN):
        pytest.skip(workers.missing(workers.GUNICORN))
    return workers.run(workers=2, hold_s=0.3, timeout_s=1)


def test_two_sync_workers_hold_two_polls_and_the_rest_wait_for_the_publish(result):
    g = result["gunicorn"]
    assert g["answered_before_publish"] == []
    assert [row["status"] for row in g["requests"]] == [200] * 4
    assert len({row["pid"] for row in g["requests"][:2]}) == 2
    assert g["requests"][-1]["r_s"] >= g["hold_s"], "GET / came back before a worker was free"


def test_the_timeout_kills_the_parked_worker_and_the_log_says_so(result):
    t = result["gunicorn"]["timeout"]
    assert t["cut_s"] is not None and t["cut_s"] >= t["timeout_s"]
    assert t["status"] in (500, None) and "WORKER TIMEOUT" in t["log"]


def test_the_run_keeps_its_claims(result, capsys):
    claims = Claims("12-long-lived-connections")
    workers.add_claims(claims, result)
    claims.report()
    assert "✗" not in capsys.readouterr().out


def test_a_get_answered_before_a_worker_was_free_is_named(result):
    broken = {**result, "gunicorn": {**result["gunicorn"], "answered_before_publish": ["GET /"]}}
    claims = Claims("12-long-lived-connections")
    workers.add_claims(claims, broken)
    with pytest.raises(ClaimsFailed, match=r"\['GET /'\]"):
        claims.report()


def test_a_hold_as_long_as_the_timeout_is_refused():
    with pytest.raises(ValueError, match="hold_s=1.*timeout_s=1"):
        workers.run(workers=1, hold_s=1, timeout_s=1)


PARENT = """
    import json, socket, psutil
    from iolab import servers
    started = [servers.start("gunicorn_longpoll", workers=2)]
    if {with_proxy}:
        started.append(servers.start("nginx_ws_proxy"))
    # A worker parked on a long poll when its parent dies: it must go too.
    parked = socket.create_connection(("127.0.0.1", started[0].port))
    parked.sendall(b"GET /poll HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    pids = [p.pid for s in started for p in [psutil.Process(s.pid), *psutil.Process(s.pid).children(recursive=True)]]
    print(json.dumps({{"pids": pids, "ports": [s.port for s in started]}}), flush=True)
"""


def test_a_parent_killed_with_sigkill_takes_gunicorn_nginx_and_the_upstream_along():
    if workers.missing(workers.GUNICORN):
        pytest.skip(workers.missing(workers.GUNICORN))
    with_proxy = registry.get("nginx_ws_proxy").missing() is None and workers.missing(workers.TORNADO) is None
    report, survivors = kill_the_parent(PARENT.format(with_proxy=with_proxy))
    # The wrapper, gunicorn's arbiter and 2 workers; nginx's wrapper, master, worker and tornado_push.
    assert len(report["pids"]) >= 4 + 4 * with_proxy, report
    assert not survivors, f"still running after their parent was SIGKILLed: {survivors}"
    for port in report["ports"]:
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still listening"


def test_a_free_worker_publishes_over_http_and_a_bad_cursor_is_refused_by_name():
    if workers.missing(workers.GUNICORN):
        pytest.skip(workers.missing(workers.GUNICORN))
    with servers.serve(workers.GUNICORN, workers=1) as server:
        assert workers.get_json(server, "/publish")["seq"] == 1
        assert workers.get_json(server, "/poll?cursor=0") == {**workers.get_json(server, "/poll?cursor=0"),
                                                               "seq": 1, "messages": 1}
        assert workers.get_json(server, "/stats") == {"published": 1}
        bad = workers.Request(server.port, "/poll?cursor=banana", "bad")
        workers.read_until([bad], time.monotonic() + 10)
    assert bad.status() == 400 and b"cursor" in bad.body() and b"'banana'" in bad.body()
