"""Lesson 12's push servers against the subscribers client.

Every transport, thousands held, slow consumers cut off.
"""

import json
import os
import signal
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import GONE_WITHIN_S, kill_the_parent
from iolab import load, registry, servers
from iolab.clients import push_routes

SUBSCRIBERS, MESSAGES = 20, 3
# Every server, transport and broadcaster (`how`), and permessage-deflate once per server that has /ws.
CASES = [
    ("tornado_push", "ws", "loop", "off"), ("tornado_push", "ws", "await", "off"), ("tornado_push", "ws", "frame", "off"),
    ("tornado_push", "sse", "loop", "off"), ("tornado_push", "sse", "await", "off"), ("tornado_push", "sse", "frame", "off"),
    ("tornado_push", "poll", "loop", "off"), ("tornado_push", "ws", "loop", "on"), ("tornado_push", "ws", "frame", "on"),
    ("tornado_push", "ws", "floor", "off"), ("tornado_push", "sse", "floor", "off"),
    ("aiohttp_push", "ws", "await", "off"), ("aiohttp_push", "ws", "tasks", "off"), ("aiohttp_push", "sse", "await", "off"),
    ("aiohttp_push", "sse", "tasks", "off"), ("aiohttp_push", "ws", "tasks", "on"),
    ("websockets_push", "ws", "broadcast", "off"), ("websockets_push", "ws", "await", "off"),
    ("websockets_push", "ws", "broadcast", "on"),
]
PUSH_SERVERS = sorted({case[0] for case in CASES})
HOWS = {"tornado_push": ("loop", "await", "frame", "floor"), "aiohttp_push": ("await", "tasks"),
        "websockets_push": ("broadcast", "await")}


def needs(name):
    reason = registry.get(name).missing()
    if reason:
        pytest.skip(reason)


def get_json(server, path):
    with urllib.request.urlopen(server.url + path, timeout=10) as answer:
        return json.loads(answer.read())


SEND_TIMEOUT_S = 0.5  # how=await drops a subscriber whose send takes longer (the servers' --send-timeout-s)
# Every server this module needs, started together before its first test: (name, compression, a fresh one?).
WANTED = [(name, compression, False) for name in PUSH_SERVERS for compression in ("off", "on")] + [
    ("tornado_push", "off", True)]  # a tornado_push no test has used: its RSS is measured


@pytest.fixture(scope="module")
def started():
    """(name, compression, fresh) -> its running server; a server this machine cannot start is left out."""
    wanted = [key for key in WANTED if registry.get(key[0]).missing() is None]
    with ThreadPoolExecutor(len(wanted)) as pool:
        running = dict(zip(wanted, pool.map(lambda key: servers.start(
            key[0], compression=key[1], max_buffer_kib=1024, send_timeout_s=SEND_TIMEOUT_S), wanted)))
    try:
        def server(name, compression="off", fresh=False):
            needs(name)
            return running[(name, compression, fresh)]

        yield server
    finally:
        for server in running.values():
            server.stop()


@pytest.mark.parametrize(("name", "transport", "how", "compression"), CASES)
def test_every_subscriber_gets_every_message_in_order(started, name, transport, how, compression):
    server = started(name, compression)
    result = load.run_load(server.url + "/", kind="subscribers", transport=transport, how=how,
                           compression=compression == "on", publish=True, interval_s=0.01,
                           requests=SUBSCRIBERS * MESSAGES, concurrency=SUBSCRIBERS, timeout_s=5, max_duration_s=10)
    assert result.stop_reason == "completed" and result.errors == 0, result.client_stderr
    assert len(result.samples) == SUBSCRIBERS * MESSAGES
    for user in range(SUBSCRIBERS):
        mine = sorted((sample for sample in result.samples if sample.user == user), key=lambda sample: sample.end)
        # One row per message, in the order published (each message's publish time is its own), none before it.
        assert [sample.start for sample in mine] == sorted({sample.start for sample in result.samples})
        assert all(sample.latency >= 0 and sample.bytes == 64 for sample in mine)
    (report,) = result.reports
    assert [answer["how"] for answer in report["published"]] == [how] * MESSAGES
    if transport != "poll":  # a long poll is counted while it is parked, and between messages it may not be
        assert all(answer["subscribers"] >= SUBSCRIBERS for answer in report["published"])


@pytest.mark.parametrize("name", PUSH_SERVERS)
def test_publish_refuses_bad_values_by_name(started, name):
    server = started(name)
    for query, words in (("how=nope", ["how", "'nope'", ", ".join(HOWS[name])]), ("size=10", ["size", "10"]),
                         ("size=big", ["size", "'big'"])):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{server.url}/publish?{query}", timeout=10)
        text = refused.value.read().decode()
        assert refused.value.code == 400 and all(word in text for word in words), text
    stats = get_json(server, "/stats")
    # tornado_push also says when it last answered a long poll (lesson 12's delivery path ends there).
    extra = {"poll_answered_cpu_s"} if name == "tornado_push" else set()
    assert set(stats) == {"subscribers", "rss_bytes", "cpu_s", "published", "dropped", "buffered_bytes"} | extra
    assert set(stats["subscribers"]) == {"ws", "sse", "poll"}


def hold(server, subscribers, transport="ws"):
    """Start a run of idle subscribers that waits for one message; returns the run once the server counts them."""
    before = push_routes.counted(server.url)
    run = load.start_load(server.url + "/", kind="subscribers", transport=transport, requests=subscribers,
                          concurrency=subscribers, timeout_s=10, max_duration_s=20)
    push_routes.wait_until_held(run, server.url, before + subscribers, timeout_s=15)
    return run


def test_one_tornado_process_holds_thousands_and_each_costs_the_same(started):
    # RSS grows by the same amount for each thousand idle WebSockets: memory per connection is a slope.
    server = started("tornado_push", fresh=True)
    step = 1000
    rss = [get_json(server, "/stats")["rss_bytes"]]
    runs = []
    try:
        for _ in range(2):
            runs.append(hold(server, step))
            rss.append(get_json(server, "/stats")["rss_bytes"])
        answer = get_json(server, "/publish?size=64")
        assert answer["subscribers"] >= 2 * step
        results = [run.wait(timeout=20) for run in runs]
    finally:
        for run in runs:
            run.stop()
    assert all(result.stop_reason == "completed" and result.errors == 0 for result in results)
    assert sum(len(result.samples) for result in results) == 2 * step
    first, second = rss[1] - rss[0], rss[2] - rss[1]
    assert first > 0 and second > 0, rss
    # The slope from the first thousand predicts the second within a factor of two (its allocator's steps aside).
    assert 0.5 * first <= second <= 2 * first, f"RSS {rss}: {first / step:.0f} then {second / step:.0f} B each"


SLOW = {"tornado_push": ("loop", "frame"), "aiohttp_push": ("tasks",), "websockets_push": ("broadcast",)}
BLOCKING = {"tornado_push": "await", "aiohttp_push": "await", "websockets_push": "await"}
BIG = 256 * 1024  # bytes a message: 30 of them are 7.5 MiB, past what the kernel's buffers hold for one socket


def slow_run(server, how, transport="ws"):
    return load.run_load(server.url + "/", kind="subscribers", transport=transport, how=how, size=BIG, slow=0,
                         publish=True, requests=8 * 30, concurrency=8, timeout_s=5, max_duration_s=10)


@pytest.mark.parametrize(("name", "how"), [(name, how) for name, hows in SLOW.items() for how in hows])
def test_a_stopped_subscriber_does_not_stall_the_others_and_is_dropped_at_its_cap(started, name, how):
    server = started(name)
    dropped = get_json(server, "/stats")["dropped"]
    result = slow_run(server, how)
    others = [sample for sample in result.samples if sample.user != 0]
    stopped = [sample for sample in result.samples if sample.user == 0]
    assert len(others) == 7 * 30 and not any(sample.error for sample in others)
    # Subscriber 0 is first in the send order; not one message waited for it as long as an await would.
    assert max(sample.latency for sample in others) < SEND_TIMEOUT_S
    assert get_json(server, "/stats")["dropped"] == dropped + 1
    assert stopped and stopped[-1].error == "closed" and len(stopped) < 30, "the stopped one was not cut off"


@pytest.mark.parametrize("name", PUSH_SERVERS)
def test_a_broadcaster_that_awaits_each_send_stalls_everyone_behind_a_stopped_one(started, name):
    server = started(name)
    result = slow_run(server, BLOCKING[name])
    others = [sample for sample in result.samples if sample.user != 0]
    assert len(others) == 7 * 30 and not any(sample.error for sample in others)
    # The message it stopped on reached the rest only once the send timeout had dropped it.
    assert max(sample.latency for sample in others) >= SEND_TIMEOUT_S


def test_aiohttp_sse_subscribers_are_dropped_too(started):
    server = started("aiohttp_push")
    result = slow_run(server, "tasks", transport="sse")
    assert [sample.error for sample in result.samples if sample.user == 0][-1:] == ["closed"]


def test_a_subscriber_process_stopped_with_sigstop_is_dropped_and_learns_it_when_continued(started):
    # Lesson 09's way: the slow consumer is a client process of its own, stopped; it subscribed first.
    server = started("tornado_push")
    dropped = get_json(server, "/stats")["dropped"]
    stopped = load.start_load(server.url + "/", kind="subscribers", requests=30, concurrency=1, timeout_s=5,
                              max_duration_s=20)
    others = None
    try:
        push_routes.wait_until_held(stopped, server.url, 1, timeout_s=15)
        others = load.start_load(server.url + "/", kind="subscribers", requests=7 * 30, concurrency=7, timeout_s=5,
                                 max_duration_s=20)
        push_routes.wait_until_held(others, server.url, 8, timeout_s=15)
        os.kill(stopped.processes[0].pid, signal.SIGSTOP)
        try:
            for _ in range(30):
                push_routes.publish(server.url, size=BIG, how="loop")
            result = others.wait(timeout=20)
            assert get_json(server, "/stats")["dropped"] == dropped + 1
        finally:
            os.kill(stopped.processes[0].pid, signal.SIGCONT)
        late = stopped.wait(timeout=20)
    finally:
        for run in (stopped, others):
            if run is not None:
                run.stop()
    assert result.stop_reason == "completed" and result.errors == 0
    assert max(sample.latency for sample in result.samples) < SEND_TIMEOUT_S
    assert late.samples[-1].error == "closed" and len(late.samples) < 30, [sample.error for sample in late.samples]


PARENT = """
import json, os
from iolab import load, servers
pids, ports = [], []
for name in {names!r}:
    server = servers.start(name)
    run = load.start_load(server.url + "/", kind="subscribers", requests=10, concurrency=10, max_duration_s=60)
    pids += [server.pid] + [process.pid for process in run.processes]
    ports.append(server.port)
import time
time.sleep(0.5)  # the clients start connecting: their processes and the servers all exist by now
print(json.dumps({{"pids": pids, "ports": ports}}), flush=True)
"""


def test_nothing_outlives_its_parent():
    names = [name for name in PUSH_SERVERS if registry.get(name).missing() is None]
    report, survivors = kill_the_parent(PARENT.format(names=names))
    assert len(report["pids"]) == 2 * len(names)
    assert not survivors, f"still running {GONE_WITHIN_S} s after their parent was SIGKILLed: {survivors}"


def test_tornado_push_serves_the_page_and_keeps_the_echoes(started):
    server = started("tornado_push")
    try:
        with urllib.request.urlopen(server.url + "/page", timeout=10) as answer:
            assert answer.headers["Content-Type"].startswith("text/html")
    except urllib.error.HTTPError as missing:  # the page is another file's; without it, a sentence says so
        assert missing.code == 404 and "push_page.html" in missing.read().decode()
    before = time.monotonic()
    request = urllib.request.Request(server.url + "/echo", data=b'{"seq": 7}', method="POST")
    urllib.request.urlopen(request, timeout=10).read()
    echoes = get_json(server, "/echoes")
    assert echoes[-1]["seq"] == 7 and before <= echoes[-1]["received"] <= time.monotonic()
    bad = urllib.request.Request(server.url + "/echo", data=b'{"seq": "seven"}', method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(bad, timeout=10)
    assert refused.value.code == 400 and "seq" in refused.value.read().decode()
