"""Lesson 11's closing claims on plain data.

A run that keeps them prints a tick each, one that breaks one names it.
"""

import pytest

from iolab.claims import ClaimsFailed
from iolab.lessons.client_side import claims, model


def fan_row(how="gather", P=20, n=20, T=0.1, overhead=0.005, work_s=0.02):
    calls = [(0.0, (i // P + 1) * (T + overhead)) for i in range(n)]
    return model.predict(how, P, T, calls, work_s)


def library_row(option="requests_pool_block", opened=10, **changes):
    row = fan_row("requests, pool_block=True", P=10, n=20)
    return row | {"library": "requests, pool_block=True", "option": option, "default_limit": 10, "errors": 0,
                  "completed": 20, "expected_calls": 20, "connections_opened": opened, "connections_predicted": (1, 10),
                  "server_cpu_ms_per_call": 0.5, "cpus": 2,
                  "client_cpu_ms_per_call": 1.0} | changes


def found(**changes):
    return {"fanout": [fan_row(), fan_row("semaphore of 5", P=5)], "limits": [library_row()],
            "timeouts": None, "blocking": None, "exercises": {}} | changes


def test_a_run_inside_its_bounds_keeps_every_claim(capsys):
    checked = claims.check_claims(found())
    out = capsys.readouterr().out
    assert not checked.failed() and "✗" not in out and out.count("✓") == len(checked.rows) - 2  # 2 sections skipped


def test_a_run_longer_than_its_rounds_and_work_is_named():
    slow = fan_row(overhead=0.2)  # a round of T + 200 ms: more than this run's 20 ms of CPU and waits
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(fanout=[slow]))
    assert "gather" in str(raised.value) and f"{slow['measured_s'] * 1000:.0f} ms" in str(raised.value)


def test_a_first_round_larger_than_the_limit_is_named():
    row = fan_row("semaphore of 5", P=5) | {"answered_in_two_T": 7}  # 7 answered within 2Z: more than 5 at once
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(fanout=[row]))
    assert "7 calls answered within 2Z" in str(raised.value) and "first round's 5" in str(raised.value)


def test_a_pool_that_opened_more_than_its_limit_is_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(limits=[library_row(opened=14)]))
    assert "never more connections than its limit" in str(raised.value) and "14" in str(raised.value)


def test_a_client_slower_than_T_a_call_is_held_to_its_cpu_instead():
    row = library_row(option="httpx") | {"overhead_ms": 300.0, "measured_rps": 2000.0}
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(limits=[row]))
    assert "X ≤ 1 / D_c" in str(raised.value)


def test_a_slow_run_beside_a_neighbour_is_excused_with_the_figures(capsys):
    slow = fan_row(overhead=0.05) | {"neighbours": {"others_share": 0.3}}  # 150 ms against at most 121
    checked = claims.check_claims(found(fanout=[slow]))
    out = capsys.readouterr().out
    assert not checked.failed() and "⚠" in out and "others held the CPUs 30%" in out and "150 ms" in out


def test_the_same_slow_run_on_a_quiet_machine_fails():
    slow = fan_row(overhead=0.05) | {"neighbours": {"others_share": 0.0}}
    with pytest.raises(ClaimsFailed, match="gather"):
        claims.check_claims(found(fanout=[slow]))


def test_a_miss_larger_than_the_neighbours_explain_still_fails():
    slow = fan_row(overhead=0.2) | {"neighbours": {"others_share": 0.2}}  # 300 ms: 2.5x, more than 0.2 / 0.8
    with pytest.raises(ClaimsFailed, match="gather"):
        claims.check_claims(found(fanout=[slow]))


def test_under_a_quota_a_rounds_burst_on_two_cpus_makes_the_read_back_a_bound(capsys):
    # P = 20 calls of Z = 100 ms, 1.5 ms of client CPU and 1.3 ms of the server's a call: on one CPU a round lasts
    # 100 + 20 × 2.8 ms (L = 12.8), on two 100 + 20 × 1.5 ms (L = 15.4). The quota's burst ran them side by side.
    row = library_row(option="requests", opened=20, connections_predicted=(11, 40)) | fan_row(P=20, n=40) | {
        "library": "requests Session", "expected_calls": 40, "completed": 40, "client_cpu_ms_per_call": 1.5,
        "server_cpu_ms_per_call": 1.3, "cpus": 1.0, "measured_rps": 150.0}
    with pytest.raises(ClaimsFailed, match=r"1 of \d+ claims failed(.|\n)*L = X · Z within 15%"):
        claims.check_claims(found(limits=[row]))  # judged on one CPU, 15.0 is over 12.8 × 1.15
    capsys.readouterr()
    claims.check_claims(found(limits=[row | {"burst_cpus": 2.0}]))
    out = capsys.readouterr().out
    assert "✓ requests Session: the limit read back, L = X · Z between P · Z / (Z + P · D) on one CPU and on 2" in out
