"""Lesson 15's restart behind nginx, against real nginx and servers.

One pair of upstreams behind nginx_balancer, restarted under load twice: abruptly, about X·(R + the restart's
time)/2 of the requests fail; taken out first, none.
"""

import pytest

from iolab.claims import SKIPPED
from iolab.lessons.service import claims, upstreams

RATE, HOLD_MS = 60, 300


@pytest.fixture(scope="module")
def rows():
    reason = upstreams.missing()
    if reason:
        pytest.skip(reason)
    return {row["how"]: row for row in upstreams.rows(upstreams.measure(RATE, HOLD_MS), HOLD_MS)}


def test_an_abrupt_restart_fails_its_half_of_L_and_what_it_was_sent_while_down(rows):
    abrupt = rows["abrupt"]
    assert abrupt["in_flight"] > 0 and abrupt["failed"] > 0
    low, high = claims.upstream_bounds(abrupt)
    assert low <= abrupt["failed"] <= high, abrupt
    # The failures are more than the in-flight half of L: the requests sent while it was down failed too.
    assert abrupt["failed"] > abrupt["in_flight"] / 2 + 1


def test_taken_out_first_none_fails(rows):
    taken_out = rows["taken out first"]
    assert taken_out["failed"] == 0 and taken_out["sent"] > RATE * HOLD_MS / 1000
    # It was out longer than the abrupt restart (two reloads and the old workers' R), and still none failed.
    assert taken_out["procedure_ms"] > rows["abrupt"]["procedure_ms"] + HOLD_MS / 2


def test_the_claims_hold_on_this_run(rows):
    checked = claims.Claims(claims.LESSON)
    claims.upstream_claims(checked, list(rows.values()))
    assert not checked.failed() and len(checked.rows) == 2


def test_a_reason_in_place_of_the_rows_is_a_skip_with_that_reason():
    reason = "server 'nginx_balancer' needs the program 'nginx', which is not installed here"
    checked = claims.check_claims({"upstreams": reason})
    assert (SKIPPED, "upstreams", "", "", reason) in checked.rows and not checked.failed()


def test_an_abrupt_restart_that_failed_none_breaks_its_claim():
    row = {"how": "abrupt", "rate": 100.0, "shortest_ms": 400.0, "longest_ms": 420.0, "procedure_ms": 300.0,
           "predicted": 35.0, "failed": 0, "sent": 150}
    checked = claims.Claims(claims.LESSON)
    claims.upstream_claims(checked, [row])
    assert claims.upstream_bounds(row) == (32, 38) and len(checked.failed()) == 1
