"""iolab.lessons.event_loop.probes against real servers.

Half-sent requests, blocked loops, pipelining, CPU demand, traces, the alternating race.
"""

import json
import subprocess
import sys
import time

import pytest

from helpers import trace_iteration
from iolab import load, servers
from iolab.lessons.event_loop import probes as loop_probes

# Margins on the probes' waits, in seconds. A request that nothing held up answers within
# a loaded machine's scheduling, half the 0.3 s it would otherwise have waited.
NOT_HELD_UP_S = 0.15
# Held up by a half-sent request finished 0.3 s after it began (sent a moment later), or by a
# 300 ms sleep that began 50 ms before (0.25 s), or behind a 300 ms answer on its connection:
# timer jitter below, a loaded machine above.
HELD_BY_HALF_SENT_AT_LEAST_S, HELD_BY_HALF_SENT_AT_MOST_S = 0.25, 1.0
HELD_BY_SYNC_SLEEP_AT_LEAST_S, HELD_BY_SYNC_SLEEP_AT_MOST_S = 0.2, 0.6
HELD_BY_PIPELINE_AT_LEAST_S, HELD_BY_PIPELINE_AT_MOST_S = 0.28, 0.6
# CPU shares in percent of one core: a spinning process is on a CPU, or queued for one, most of
# the time even beside a CPU hog; a sleeping one barely at all.
SPINNING_USES_OVER, SPINNING_USES_OR_QUEUES_OVER = 20, 70
SLEEPING_USES_UNDER = 5
# step_profile of step 3: 200 ms waits overlap (timer jitter below, a loaded machine above),
# and an idle selector server uses next to no CPU.
STEP_WAITS_AT_LEAST_MS, STEP_WAITS_AT_MOST_MS = 190, 500
IDLE_CPU_UNDER = 10


def test_a_half_sent_request_costs_others_nothing_on_a_loop_and_everything_on_a_blocking_server(step4):
    assert loop_probes.half_sent_wait_s(step4.url, finish_after_s=0.3) < NOT_HELD_UP_S
    with servers.serve("step1_blocking") as blocking:
        waited = loop_probes.half_sent_wait_s(blocking.url, finish_after_s=0.3)
        assert HELD_BY_HALF_SENT_AT_LEAST_S <= waited < HELD_BY_HALF_SENT_AT_MOST_S


def test_sync_sleep_blocks_the_next_request_and_async_sleep_does_not(step4):
    waited = loop_probes.blocked_wait_s(step4.url, "/sync-sleep?ms=300", gap_s=0.05)
    assert HELD_BY_SYNC_SLEEP_AT_LEAST_S <= waited < HELD_BY_SYNC_SLEEP_AT_MOST_S
    assert loop_probes.blocked_wait_s(step4.url, "/async-sleep?ms=300", gap_s=0.05) < NOT_HELD_UP_S


def test_pipelined_answers_wait_their_turn(step4):
    waited = loop_probes.pipelined_wait_s(step4.url, "/async-sleep?ms=300")
    assert HELD_BY_PIPELINE_AT_LEAST_S <= waited < HELD_BY_PIPELINE_AT_MOST_S


def test_hello_burst_counts_every_answer(step4):
    began, ended, rps = loop_probes.hello_burst(step4.url, requests=500, connections=7)
    assert began < ended and rps == pytest.approx(500 / (ended - began))


def test_probes_refuse_other_hosts():
    with pytest.raises(ValueError, match="loopback"):
        loop_probes.half_sent_wait_s("http://192.0.2.1:80/")


@pytest.mark.parametrize("program, busy", [("while True: pass", True), ("import time; time.sleep(30)", False)])
def test_cpu_demand_tells_a_spinning_process_from_a_sleeping_one(program, busy):
    process = subprocess.Popen([sys.executable, "-c", program])
    try:
        time.sleep(0.2)
        used, queued = loop_probes.cpu_demand_percent(process.pid, 0.5)
    finally:
        process.kill()
        process.wait()
    if busy:
        assert used > SPINNING_USES_OVER and used + (queued or 0) > SPINNING_USES_OR_QUEUES_OVER, (used, queued)
    else:
        assert used < SLEEPING_USES_UNDER and (queued or 0) < SLEEPING_USES_UNDER, (used, queued)


def test_slow_callback_warnings_are_parsed():
    text = (
        "something else\n"
        "callback BufferedStream._on_events of <BufferedStream fd=7 GET /sync-sleep?ms=300> took 301 ms, blocking the loop\n"
        "callback Timer.fire took 120 ms, blocking the loop\n"
    )
    assert loop_probes.slow_callback_warnings(text) == [
        ("BufferedStream._on_events of <BufferedStream fd=7 GET /sync-sleep?ms=300>", 301),
        ("Timer.fire", 120),
    ]
    assert loop_probes.slow_callback_warnings("all quiet\n") == []


def test_read_trace_skips_a_line_cut_short(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps(trace_iteration(1.0, 2, 3)) + "\n" + '{"t": 1.1, "sel')
    assert loop_probes.read_trace(path) == [trace_iteration(1.0, 2, 3)]


def test_trace_summary_clips_iterations_to_the_window():
    iterations = [
        trace_iteration(10.0, 900, 0.5, events=1),  # a long idle select that ends inside the window
        trace_iteration(10.9005, 0.0, 2.0, events=4),
        trace_iteration(10.9025, 50.0, 1.0, events=2),
    ]
    whole = loop_probes.trace_summary(iterations)
    assert whole["iterations"] == 3 and whole["events"] == 7 and whole["max_events"] == 4
    window = loop_probes.trace_summary(iterations, 10.8, 11.0)
    assert window["select_ms"] == pytest.approx(100 + 50, abs=0.01)  # only the last 100 ms of the idle wait
    assert window["callbacks_ms"] == pytest.approx(3.5, abs=0.01)
    assert window["mean_events_when_woken"] == pytest.approx(7 / 3)


def test_the_race_alternates_servers_and_who_goes_first(monkeypatch):
    order = []

    class FakeSummary:
        errors = 0
        error_kinds = {}

        def __init__(self, rps):
            self.rps = rps

    monkeypatch.setattr(load, "run_load", lambda url, **spec: order.append(url) or url)
    monkeypatch.setattr(loop_probes.metrics, "summarize", lambda url: FakeSummary(len(url)))
    rps = loop_probes.alternating_rps({"a": "http://127.0.0.1:1/", "bb": "http://127.0.0.1:22/"}, 100, 10, 3)
    assert order == ["http://127.0.0.1:1/", "http://127.0.0.1:22/", "http://127.0.0.1:22/", "http://127.0.0.1:1/",
                     "http://127.0.0.1:1/", "http://127.0.0.1:22/"]
    assert rps == {"a": [19] * 3, "bb": [20] * 3}


def test_the_race_against_real_servers(step4):
    with servers.serve("tornado_app") as tornado:
        rps = loop_probes.alternating_rps({"step4": step4.url + "/", "tornado": tornado.url + "/"}, 300, 5, 2)
    assert [len(runs) for runs in rps.values()] == [2, 2] and all(value > 0 for runs in rps.values() for value in runs)


def test_step_profile_of_a_selector_server():
    with servers.serve("step3_callbacks") as step3:
        profile = loop_probes.step_profile(step3, idle_s=0.3, users=6, wait_ms=200, finish_after_s=0.2)
    assert profile["half_sent_wait_ms"] < NOT_HELD_UP_S * 1000
    assert STEP_WAITS_AT_LEAST_MS <= profile["waits_ms"] < STEP_WAITS_AT_MOST_MS
    assert profile["idle_cpu_percent"] < IDLE_CPU_UNDER
