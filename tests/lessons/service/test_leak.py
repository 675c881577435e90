"""Lesson 15's pool against a real service_app.

Lesson 15's pool against a real service_app: the leaky handler loses a slot per cancellation, `async with` none.
"""

from iolab.lessons.service import leak
from iolab.servers import serve


def test_the_leaky_handler_loses_a_slot_per_cancellation_then_stalls():
    leaky = leak.one_way(False, slots=4, hold_ms=20, timeout_ms=150, cancelled=2, calls=16)
    assert [step["free"] for step in leaky["steps"]] == [4, 2, 0]
    assert leaky["steps"][-1]["answered"] == 0 and leaky["steps"][-1]["cancelled"] == 16


def test_async_with_gives_every_slot_back():
    with serve("service_app", pool=4) as server:
        assert leak.cancel(server.url, 4, 100, safe=True) == 4
        assert leak.free_slots(server.url) == 4
