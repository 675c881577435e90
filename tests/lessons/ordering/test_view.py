"""Lesson 03's handlers on tornado_app, fired in order.

CPU work D holds the loop, A's sleep offloaded (A′) does not.
"""

import requests

from iolab import load
from iolab.lessons.ordering import view
from iolab.load import Sample
from iolab.neighbours import Neighbours

DELAY_MS, GAP_MS = 300, 30
TIMEOUT_S = 10


def fire(server, *routes):
    samples = load.fire_staggered([server.url + route for route in routes], gap_s=GAP_MS / 1000, timeout_s=TIMEOUT_S)
    assert [sample.status for sample in samples] == [200] * len(routes)
    return samples


def test_c_waits_for_cpu_work_but_not_for_an_offloaded_sleep(tornado):
    alone = fire(tornado, "/")[0]
    c_alone_ms = (alone.end - alone.start) * 1000
    cpu, c_behind_cpu = fire(tornado, f"/cpu?ms={DELAY_MS}", "/")
    offloaded, c_behind_offload = fire(tornado, f"/offload-sleep?ms={DELAY_MS}", "/")
    # D burns at least DELAY_MS of CPU, so it ends no sooner; C is read only after it.
    assert (cpu.end - cpu.start) * 1000 >= DELAY_MS
    assert c_behind_cpu.end >= cpu.end - c_alone_ms / 1000 - 0.005
    # A′ sleeps a whole delay on a pool thread, and C meanwhile is answered about as fast as alone:
    # nearer that than the DELAY_MS - GAP_MS it would have waited behind A.
    assert (offloaded.end - offloaded.start) * 1000 >= DELAY_MS * 0.99
    c_wait_ms = (c_behind_offload.end - c_behind_offload.start) * 1000
    assert c_wait_ms - c_alone_ms < (DELAY_MS - GAP_MS) / 2, (c_wait_ms, c_alone_ms)


def test_offload_sleep_validates_like_the_contract_routes(tornado):
    with requests.Session() as session:
        answer = session.get(tornado.url + "/offload-sleep?ms=20", timeout=TIMEOUT_S)
        assert answer.status_code == 200 and answer.text == "slept 20 ms in a worker thread\n"
        for bad in ("", "?ms=soon", "?ms=-1", "?ms=600000"):
            answer = session.get(tornado.url + "/offload-sleep" + bad, timeout=TIMEOUT_S)
            assert answer.status_code == 400 and "ms" in answer.text and answer.text.count("\n") == 1


def test_timelines_draw_the_new_handlers_in_their_own_colours(tornado):
    runs = {"D,C": fire(tornado, "/cpu?ms=20", "/"), "A′,C": fire(tornado, "/offload-sleep?ms=20", "/")}
    image = view.request_timelines(runs, 20, {"D,C": "C waits", "A′,C": "C at once"})
    assert image.data.startswith(b"\x89PNG")
    assert {"D", "A′"} <= set(view.HANDLER_COLORS)


def test_gantt_draws_one_panel_per_order():
    runs = {"A,C": [Sample(0, 1.0, 200, 1, None, 0), Sample(0.1, 1.01, 200, 1, None, 1)]}
    image = view.request_timelines(runs, 1000, {"A,C": "C waits"})
    assert image.data.startswith(b"\x89PNG")


def test_the_neighbours_column_shows_the_share_others_held_or_unknown():
    assert view.others_held(Neighbours(0.5, "host", None, 0.0, 0.0, 0, 0.0, 0.38)) == "38%"
    assert view.others_held(None) == "unknown"
