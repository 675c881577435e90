"""iolab.neighbours reads what else held the CPUs; iolab.claims excuses a timing claim only when they did."""

import math
import os
import subprocess
import sys
import time

import psutil
import pytest

from iolab import neighbours
from iolab.claims import EXCUSED, FAILS, HOLDS, Claims, ClaimsFailed

BUSY = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"
needs_pressure = pytest.mark.skipif(neighbours.pressure_file()[0] is None,
                                    reason="this kernel keeps no CPU pressure (/proc/pressure/cpu: PSI off)")


def busy(seconds, cpu):
    """A process that spins `seconds` on CPU `cpu`."""
    return subprocess.Popen([sys.executable, "-c", BUSY.format(s=seconds)], preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))


def window(with_hog):
    """Neighbours over 0.8 s of our worker spinning on CPU 0, beside a hog on the same CPU or alone, read as from a
    process pinned there. The worker outlives the window, so its figures are read at both ends."""
    started = [busy(5.0, 0)] + ([busy(5.0, 0)] if with_hog else [])
    mask = os.sched_getaffinity(0)
    try:
        time.sleep(0.1)
        os.sched_setaffinity(0, {0})  # the CPUs we may use are the ones whose time is counted
        with neighbours.watching(root=psutil.Process(started[0].pid)) as watch:
            time.sleep(0.8)
    finally:
        os.sched_setaffinity(0, mask)
        for process in started:
            process.kill()
            process.wait()
    return watch.found


def test_a_hog_on_our_cpu_shows_as_others_and_our_own_waits_do_not():
    quiet, crowded = window(False), window(True)
    # Beside the hog our worker waits about half the window: the hog ran then, on the CPU we may use.
    assert crowded.own_wait_share > 0.3, crowded.describe()
    assert crowded.others_share > quiet.others_share + 0.2, (quiet.describe(), crowded.describe())
    assert crowded.others_cpu_share == crowded.others_share
    assert "others held the CPUs" in crowded.describe() and crowded.as_dict()["others_share"] == crowded.others_share


def test_own_waits_count_only_our_tree():
    before = neighbours.read()
    time.sleep(0.05)
    found = neighbours.between(before, neighbours.read())
    assert 0.04 < found.seconds < 1.0 and 0.0 <= found.own_wait_share <= 1.0 and found.throttled >= 0


def quiet_or(share):
    return {"others_share": share}


def test_a_failed_timing_claim_on_a_quiet_run_still_fails():
    claims = Claims("test")
    assert not claims.timing("the last at N × D", 30.0, 18.0, 22.0, neighbours=quiet_or(0.02), unit="ms")
    assert claims.rows[0][0] == FAILS
    with pytest.raises(ClaimsFailed, match="the last at N × D: 30.0 ms, outside"):
        claims.report()


def test_a_failed_timing_claim_while_others_held_the_cpus_is_excused_with_the_figures(capsys):
    claims = Claims("test")
    claims.timing("the last at N × D", 30.0, 18.0, 22.0, neighbours=quiet_or(0.38),
                  unit="ms")  # margin 10 %, others 38 %: 61 % longer
    claims.timing("a quiet one", 20.0, 18.0, 22.0, neighbours=quiet_or(0.38), unit="ms")  # holds: judged as always
    assert [row[0] for row in claims.rows] == [EXCUSED, HOLDS]
    assert claims.report() == 1
    out = capsys.readouterr().out
    assert "⚠ the last at N × D: not judged:" in out and "others held the CPUs 38% of this run" in out
    assert "margin of 10%" in out and "miss of 36%" in out and "1 could not be judged" in out


def test_others_within_the_margin_do_not_excuse_a_failure():
    claims = Claims("test")
    claims.timing("wide", 30.0, 10.0, 25.0, neighbours=quiet_or(0.38),
                  unit="ms")  # margin 43 %: the neighbours do not explain it
    assert claims.rows[0][0] == FAILS


def test_others_explain_only_a_miss_they_could_cause():
    claims = Claims("test")
    claims.timing("too slow by far", 50.0, 18.0, 22.0, neighbours=quiet_or(0.2),
                  unit="ms")  # 127 % over; 20 % explains 25 %
    claims.timing("faster than possible", 10.0, 18.0, 22.0, neighbours=quiet_or(0.6),
                  unit="ms")  # others never make a run faster
    claims.timing("a rate cut by others", 118.0, 124.0, 160.0, neighbours=quiet_or(0.2), unit="req/s",
                  slower="below")  # 5 % under
    claims.timing("a rate above its best", 200.0, 124.0, 160.0, neighbours=quiet_or(0.6), unit="req/s", slower="below")
    assert [row[0] for row in claims.rows] == [FAILS, FAILS, EXCUSED, FAILS]


def test_a_bound_open_on_one_side_takes_its_margin_from_the_prediction():
    claims = Claims("test")
    # A floor of 300 req/s with no prediction has no margin to weigh the neighbours against: it fails as before.
    claims.timing("no prediction given", 280.0, 300.0, math.inf, neighbours=quiet_or(0.4), unit="req/s", slower="below")
    # Predicted 400: the floor lies 25 % under it, so 40 % of the CPUs held by others explain a 7 % miss...
    claims.timing("others beyond the slack", 280.0, 300.0, math.inf, neighbours=quiet_or(0.4), unit="req/s",
                  slower="below",
                  predicted=400.0)
    # ... but 20 % do not: the 25 % of slack already absorbs them, so the miss is the model's.
    claims.timing("others within the slack", 280.0, 300.0, math.inf, neighbours=quiet_or(0.2), unit="req/s",
                  slower="below",
                  predicted=400.0)
    # A time with only a ceiling: predicted 10 ms, ceiling 12 ms (20 % slack), 30 % of others explain 12.6 ms.
    claims.timing("a ceiling beside others", 12.6, 0.0, 12.0, neighbours=quiet_or(0.3), unit="ms", predicted=10.0)
    assert [row[0] for row in claims.rows] == [FAILS, EXCUSED, FAILS, EXCUSED]


def test_the_column_reads_a_runs_share_from_either_form_or_says_it_is_unknown():
    found = neighbours.Neighbours(seconds=2.0, pressure_share=None, own_wait_share=0.0, source="host",
                                  steal_share=0.0, throttled=0, throttled_s=0.0, others_cpu_share=0.38)
    assert neighbours.held(found) == neighbours.held(found.as_dict()) == "38%"
    assert neighbours.held(None) == "unknown"
