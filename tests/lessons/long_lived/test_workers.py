"""Section 2 of lesson 12: sync workers hold one long poll each, and --timeout kills a parked one."""

import pytest

from iolab.claims import Claims, ClaimsFailed
from iolab.lessons.long_lived import workers


@pytest.fixture(scope="module")
def result():
    if workers.missing(workers.GUNICORN):
        pytest.skip(workers.missing(workers.GUNICORN))
    return workers.run(workers=2, hold_s=0.3, timeout_s=1)


def test_two_sync_workers_hold_two_polls_and_the_rest_wait_for_the_publish(result):
    g = result["gunicorn"]
    assert g["answered_before_publish"] == []
    assert [row["status"] for row in g["requests"]] == [200] * 4
    assert len({row["pid"] for row in g["requests"][:2]}) == 2
    assert g["requests"][-1]["r_s"] >= g["hold_s"], "GET / came back before a worker was free"


def test_the_timeout_kills_the_parked_worker_and_the_log_says_so(result):
    t = result["gunicorn"]["timeout"]
    assert t["cut_s"] is not None and t["cut_s"] >= t["timeout_s"]
    assert t["status"] in (500, None) and "WORKER TIMEOUT" in t["log"]


def test_the_run_keeps_its_claims(result, capsys):
    claims = Claims("12-long-lived-connections")
    workers.add_claims(claims, result)
    claims.report()
    assert "✗" not in capsys.readouterr().out


def test_a_get_answered_before_a_worker_was_free_is_named(result):
    broken = {**result, "gunicorn": {**result["gunicorn"], "answered_before_publish": ["GET /"]}}
    claims = Claims("12-long-lived-connections")
    workers.add_claims(claims, broken)
    with pytest.raises(ClaimsFailed, match=r"\['GET /'\]"):
        claims.report()


def test_a_hold_as_long_as_the_timeout_is_refused():
    with pytest.raises(ValueError, match="hold_s=1.*timeout_s=1"):
        workers.run(workers=1, hold_s=1, timeout_s=1)
