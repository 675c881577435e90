"""Lesson 11's timeouts against a real tornado_app: each run's claims hold, and it leaves nothing behind."""

import asyncio
import threading

import psutil
import pytest

from iolab import servers
from iolab.claims import Claims, ClaimsFailed
from iolab.lessons.client_side import timeouts
from iolab.params import ParameterError

T_MS, TIMEOUT_MS = 200, 60  # small, so the file stays cheap; the timeout far under T, so noise cannot blur the two


def run_clean(coroutine):
    """Run `coroutine` on a fresh loop and check that it leaves no task, thread, connection or server behind."""
    threads = set(threading.enumerate())

    async def main():
        result = await coroutine
        return result, len(asyncio.all_tasks()) - 1

    result, tasks_left = asyncio.run(main())
    # Two threads live as long as the process, by design, started by the first run that needs them: iolab.children's
    # one spawner, and pycares's one thread that destroys DNS channels (aiohttp resolves through aiodns when present).
    new_threads = [t.name for t in set(threading.enumerate()) - threads
                   if not t.name.startswith("iolab-spawner") and not t.name.endswith("(_run_safe_shutdown_loop)")]
    assert tasks_left == 0, f"{tasks_left} tasks left on the loop"
    assert not new_threads, f"threads left running: {new_threads}"
    assert not servers.running(), f"servers left running: {servers.running()}"
    connections = [c for c in psutil.Process().net_connections(kind="tcp") if c.status != psutil.CONN_CLOSE]
    assert not connections, f"connections left open: {connections}"
    return result


def claims_of(**parts):
    claims = Claims("11-the-client-side")
    timeouts.add_claims(claims, parts)
    return claims


def test_a_timeout_frees_the_client_not_the_server(capsys):
    run = run_clean(timeouts.give_up(calls=5, T_ms=T_MS, timeout_ms=TIMEOUT_MS))
    assert run["timed_out"] and run["client_tasks_left"] == 0
    assert run["in_flight_right_after"] == 5 and run["finished"] == 5, run
    claims = claims_of(gather=run)
    claims.report()  # raises, naming them, if any failed
    # Five about this run (the in-flight count is skipped, with its reason, if it came after T); three parts not run.
    assert len(claims.rows) == 5 + 3 and capsys.readouterr().out.count("skipped, not run") == 3


def test_a_taskgroup_cancels_the_siblings_of_a_failure_and_gather_leaves_them_running():
    run = run_clean(timeouts.one_fails(calls=6, T_ms=T_MS))
    assert run["taskgroup"]["cancelled"] == 5 and run["gather"]["still_running"] == 5, run
    assert run["gather"]["answered"] == 5
    assert claims_of(cancel=run).report() == 5


def test_retries_on_a_timeout_multiply_the_arrivals_at_the_server():
    run = run_clean(timeouts.retry_load(rate=20, duration_s=0.5, T_ms=T_MS, timeout_ms=TIMEOUT_MS, retries=2))
    assert run["calls"] == 10 and run["attempts_sent"] == 30, run
    assert run["in_flight_samples"] > 0
    assert claims_of(retries=run).report() == 4


def test_a_broken_run_fails_its_claims_and_names_the_figures():
    run = {"calls": 4, "T_ms": 200, "timeout_ms": 100, "timed_out": True, "gave_up_s": 0.3, "client_tasks_left": 0,
           "in_flight_right_after": 0, "stats_read_s": 0.15, "drained_s": 0.25, "finished": 4}
    with pytest.raises(ClaimsFailed) as failure:
        claims_of(one=run).report()
    message = str(failure.value)
    assert "before the server was done: 300 ms, outside [100, 250] ms" in message
    assert "right after, the server still held every call: measured 0, predicted 4" in message


@pytest.mark.parametrize("call, words", [
    (lambda: timeouts.give_up(T_ms=200, timeout_ms=150), "timeout_ms must be at most T_ms / 2"),
    (lambda: timeouts.give_up(calls=0), "calls must be between 1 and 200"),
    (lambda: timeouts.retry_load(retries=9), "retries must be between 0 and 5"),
    (lambda: timeouts.one_fails(calls=1), "calls must be between 2 and 200"),
])
def test_bad_parameters_are_refused_by_name_before_anything_starts(call, words):
    with pytest.raises(ParameterError, match=words.replace("(", r"\(").replace("/", "/")):
        asyncio.run(call())
    assert not servers.running()
