"""Lesson 15's lag windows against a real service_app.

Lesson 15's lag windows against a real service_app: the blocks it measured, the beats it recorded.
"""

from iolab.lessons.service import lag


def test_three_windows_on_a_real_server():
    runs = lag.measure(block_ms=20, period_ms=100, seconds=1.0, rate=50)
    blocked = runs["lag"]
    assert runs["quiet"]["blocks_ms"] == [] and len(blocked["blocks_ms"]) == 10
    assert all(block >= 20 for block in blocked["blocks_ms"])  # time.sleep never returns early
    assert len(blocked["lateness_ms"]) > 100 and max(blocked["lateness_ms"]) > 10  # some beat waited for a block
    assert runs["served"]["latency_ms"] and runs["served"]["errors"] == 0
    figures = lag.predict(runs, 20, 100)
    assert figures["predicted_mean_ms"] > 0 and figures["p99_low_ms"] <= figures["predicted_p99_ms"]
