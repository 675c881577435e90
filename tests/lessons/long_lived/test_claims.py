"""Lesson 12's closing claims on plain data.

A run that keeps them prints a tick each, one that breaks one names it.
"""

import pytest

from iolab import neighbours
from iolab.claims import ClaimsFailed
from iolab.lessons.long_lived import claims, fanout, model, slow
from iolab.lessons.long_lived import ladder as ladders


def memory_row(kib=14.0, last_extra=0.0, compression=False):
    ns = [250, 500, 750, 1000]
    rss = [30e6 + n * kib * 1024 + (10_000 if i % 2 else 0) for i, n in enumerate(ns)]
    rss[-1] += last_extra
    fit = model.memory(ns, rss)
    return fit | {"kind": "ws", "server": "tornado_push", "compression": compression, "budget_bytes": 2 * 2**30,
                  "predicted_rss_10000_bytes": fit["m0_bytes"] + 10_000 * fit["bytes_per_connection"],
                  "predicted_max": model.n_max(2 * 2**30, fit["bytes_per_connection"], fit["m0_bytes"])}


def fanout_row(transport="ws", server_us=20.0, last_s=None, received=2000):
    n = 1000
    last = last_s if last_s is not None else n * (server_us + 10) * 1e-6
    repeats = [{"last_s": last * f, "server_cpu_s": n * server_us * 1.1e-6 * f,
                "path_cpu_s": n * server_us * 1e-6 * f, "client_cpu_s": n * 10e-6} for f in (0.97, 1.03)]
    return model.fanout(n, repeats, cpus=1) | {"transport": transport, "server": "tornado_push", "how": "loop",
                                                "received": received, "expected": 2000}


def ladder(frame_us=6.0):
    return {"floor": {"cpu_us_per_send": 5.0, "runs_us": [4.9, 5.0, 5.2], "subscribers": 1000},
            "rungs": [{"label": "tornado_push how=frame", "how": "frame", "cpu_us_per_delivery": frame_us,
                       "runs_us": [frame_us * 0.98, frame_us, frame_us * 1.02]},
                      {"label": "tornado_push how=loop", "how": "loop", "cpu_us_per_delivery": 30.0,
                       "runs_us": [29.0, 30.0, 31.0]}]}


def slow_runs(others_worst_ms=5.0, dropped=1):
    common = {"server": "tornado_push", "stall_ms": 2000.0, "baseline_ms": 3.0, "cap_bytes": 1024 * 1024,
              "buffered_peak_bytes": 1100 * 1024, "message_bytes": 16384, "buffers_filled": True,
              "piled_bytes": 1600 * 1024}
    return {"runs": [common | {"how": "await", "blocking": True, "others_worst_ms": 1800.0, "dropped": 0,
                               "predicted_ms": 1700.0, "opposite_ms": 3.0},
                     common | {"how": "loop", "blocking": False, "others_worst_ms": others_worst_ms,
                               "predicted_ms": 3.0, "opposite_ms": 1700.0,
                               "dropped": dropped, "growth_bytes_per_s": 790 * 1024,
                               "predicted_growth_bytes_per_s": 800 * 1024}]}


def found(**changes):
    return {"memory": [memory_row(), memory_row(160, compression=True)], "long_poll_workers": None,
            "fanout": [fanout_row(), fanout_row("sse", 15.0), fanout_row("poll", 60.0)], "ladder": ladder(),
            "slow_consumer": slow_runs(), "proxy": None, "browser": None, "exercises": {}} | changes


def test_a_run_inside_its_bounds_keeps_every_claim(capsys):
    checked = claims.check_claims(found())
    out = capsys.readouterr().out
    assert not checked.failed() and "✗" not in out and out.count("✓") == len(checked.rows) - 3  # 3 sections skipped


def test_a_last_step_off_the_fit_is_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(memory=[memory_row(last_extra=5e6)]))
    assert "tornado_push ws: RSS at N = 1000 was" in str(raised.value)


def test_a_last_delivery_far_from_n_times_d_is_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(fanout=[fanout_row(last_s=0.2)]))
    assert "after 194.0 ms; predicted 29.4 ms" in str(raised.value)  # the median repeat's (two: the lower)


def test_missing_deliveries_are_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(fanout=[fanout_row(received=1990)]))
    assert "1990 of 2000 deliveries" in str(raised.value)


def test_a_long_poll_cheaper_than_sse_is_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(fanout=[fanout_row(), fanout_row("poll", 10.0)]))
    assert "a long poll cost 11.0 µs" in str(raised.value)


def test_a_frame_broadcaster_far_above_the_floor_is_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(ladder=ladder(frame_us=11.0)))
    assert "2.20× the floor's 5.00 µs" in str(raised.value)


def test_a_library_broadcaster_below_the_floor_in_every_run_is_named():
    rungs = ladder()
    rungs["rungs"][1] |= {"cpu_us_per_delivery": 4.0, "runs_us": [3.9, 4.0, 4.1]}
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(ladder=rungs))
    assert "how=loop: its runs (3.90, 4.00, 4.10 µs per delivery) all lie below the floor's lowest run, 4.90 µs" in str(
        raised.value)


def test_a_slow_consumer_that_stalls_the_others_or_is_never_dropped_is_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(slow_consumer=slow_runs(others_worst_ms=1500.0, dropped=0)))
    assert "how=loop: the others stay on time" in str(raised.value) and "no subscriber dropped" in str(raised.value)


def test_a_stall_the_kernel_holds_whole_predicts_no_wait_and_no_drop(capsys):
    # Few small messages: the kernel's buffers took them all, so neither broadcaster waited and no one was dropped.
    held = {"buffers_filled": False, "piled_bytes": 0.0, "dropped": 0, "buffered_peak_bytes": 0,
            "growth_bytes_per_s": None}
    runs = slow_runs()["runs"]
    runs[0] |= held | {"others_worst_ms": 4.0, "predicted_ms": 3.0, "opposite_ms": 2000.0}
    runs[1] |= held | {"others_worst_ms": 5.0, "predicted_ms": 3.0, "opposite_ms": 2000.0}
    claims.check_claims(found(slow_consumer={"runs": runs}))
    said = capsys.readouterr().out
    assert "how=await: the others stay on time beside a stopped subscriber" in said
    assert "the stopped subscriber is kept: its kernel buffers never filled" in said
    runs[1]["dropped"] = 1
    with pytest.raises(ClaimsFailed, match="1 dropped, though only 0 KiB should have piled up"):
        claims.check_claims(found(slow_consumer={"runs": runs}))


def test_a_stall_that_piles_up_about_the_cap_is_not_judged(capsys):
    runs = slow_runs()["runs"]
    runs[1] |= {"buffers_filled": True, "piled_bytes": 1024 * 1024 + 100, "dropped": 0}
    claims.check_claims(found(slow_consumer={"runs": runs}))
    assert "within a message of the cap" in capsys.readouterr().out


def test_each_table_of_timed_runs_shows_the_share_others_held_the_cpus():
    busy = {"others_share": 0.38}
    rows = [fanout_row() | {"neighbours": busy, "repoll_us_per_delivery": 0.0}]
    rungs = ladder()
    rungs["rungs"][0]["neighbours"] = busy
    for row in rungs["rungs"]:
        row |= {"floor_ratio": 1.2, "reach_ms": 6.0}
    stalls = slow_runs()
    stalls["runs"][0]["growth_bytes_per_s"] = None  # one that awaits each send has no unsent bytes
    stalls["runs"][1]["neighbours"] = busy
    for headers, body in (fanout.table(rows), ladders.table(rungs, 1000), slow.table(stalls)):
        assert headers[-1] == neighbours.COLUMN and "38%" in [line[-1] for line in body], body


def test_a_fanout_band_the_neighbours_waits_widen_past_half_its_width_says_it_is_a_bound(capsys):
    crowded = fanout_row()
    crowded |= {"high_ms": crowded["high_ms"] + 40.0, "excess_wait_ms": 40.0}  # others held the CPUs 40 ms
    claims.check_claims(found(fanout=[crowded, fanout_row("sse", 15.0), fanout_row("poll", 60.0)]))
    out = capsys.readouterr().out
    assert "✓ tornado_push ws: the last of 1000 within a bound of N × max" in out
    assert "✓ tornado_push sse: the last of 1000 at N × max" in out  # a calm one still predicts
