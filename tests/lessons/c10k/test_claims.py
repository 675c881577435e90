"""Lesson 07's closing claims, on plain data: a run that holds, and one that names what broke."""

import pytest

from iolab.claims import ClaimFirst, ClaimsFailed
from iolab.lessons.c10k import claims as lesson_claims


def scene(max_ms, timeouts=10, serves_at_once=True):
    return {"server": "gunicorn, 4 sync workers", "skipped": None, "timeout_s": 2, "serves_at_once": serves_at_once,
            "wrk_max_ms": max_ms, "wrk_timeouts": timeouts, "lab_rps": 100.0, "bound_rps": 100.0,
            "lab_over_timeout": 300, "lab_requests": 400, "row": {"wrk_max_ms": max_ms}}


def test_the_wrk_scene_claims_hold_on_a_run_that_bears_them_out(capsys):
    claims = ClaimFirst("07")
    lesson_claims._scenes(claims, [scene(1990.0)])
    assert claims.report() == 4
    assert "within [0, 2020] ms" in capsys.readouterr().out


def test_a_wrk_latency_past_its_timeout_fails_and_names_the_value():
    claims = ClaimFirst("07")
    lesson_claims._scenes(claims, [scene(2500.0, timeouts=0)])
    with pytest.raises(ClaimsFailed) as failed:
        claims.report()
    assert "2 of 4 claims failed" in str(failed.value) and "'wrk_max_ms': 2500.0" in str(failed.value)


def held(threads, kb, vsz_kb=None, held_n=1000, baseline_threads=2, rss_mb=None):
    """A holding run's figures, as the results keep them, with every step held."""
    last = {"held": held_n, "target": held_n, "threads": threads, "limit": None, "message": None,
            "kb_per_connection": kb, "vsz_kb_per_connection": vsz_kb if vsz_kb is not None else kb,
            "rss_mb": rss_mb, "row": {"connections": held_n}}
    return {"held_all": True, "message": None, "baseline_threads": baseline_threads, "most_held": held_n,
            "rows": [], "short": [], "last": last}


HOLDING = {"tornado_app": held(2, 9.3), "step4_event_loop": held(2, 1.1),
           "threaded_app": held(1002, 31.2, vsz_kb=9073.0, rss_mb=53.8)}
PROBE = {"baseline_rss_kb": 23_000, "kb_per_connection": 31.0}


def test_the_holding_claims_read_each_servers_last_step(capsys):
    claims = ClaimFirst("07")
    lesson_claims._holding(claims, HOLDING, PROBE, stack_kb=8192)
    assert claims.report() == 13
    out = capsys.readouterr().out
    assert "✓ step4_event_loop: an idle connection costs at most 16 KiB of RSS: 1.1 KiB within (-1.0, 17.0] KiB" in out
    assert "✓ threaded_app: a connection costs more RSS than on any event loop: 31.2 KiB within (9.3, ∞) KiB" in out


def test_an_event_loop_that_grows_threads_or_memory_fails_by_name():
    claims = ClaimFirst("07")
    lesson_claims._holding(claims, {**HOLDING, "tornado_app": held(5, 20.0)}, PROBE, stack_kb=8192)
    with pytest.raises(ClaimsFailed) as failed:
        claims.report()
    message = str(failed.value)
    assert "2 of 13 claims failed" in message
    assert "tornado_app: one thread whatever N: ('tornado_app', 5, 2)" in message
    assert "('tornado_app', 20.0)" in message


def others(share):
    """A run's neighbours as the results keep them (iolab.neighbours.Neighbours.as_dict), others holding `share`."""
    return {"seconds": 8.0, "source": "host", "pressure_share": share, "own_wait_share": 0.0, "steal_share": 0.0,
            "throttled": 0, "throttled_s": 0.0, "others_cpu_share": share, "others_share": share}


@pytest.mark.parametrize("share", [0.0, 0.6])
def test_a_run_above_w_over_z_fails_whatever_others_held(share):
    """w / Z is a ceiling: others can only slow a run, so a run above it is never theirs to explain."""
    claims = ClaimFirst("07")
    lesson_claims._scenes(claims, [{**scene(1990.0), "lab_rps": 110.0, "neighbours": others(share)}])
    with pytest.raises(ClaimsFailed) as failed:
        claims.report()
    assert "the lab's X stays under w / Z: {'wrk_max_ms': 1990.0}" in str(failed.value)
    assert [mark for mark, *_ in claims.rows] == ["✓", "✗", "✓", "✓"]
