"""Slow clients (a slowloris) against the lab's own servers.

A fresh client is still answered, and the slow ones are cut off in time.
"""

import concurrent.futures
import contextlib
import time

import pytest

from iolab import children, contract, environment, hostile, registry, servers, slowloris

pytestmark = pytest.mark.slow  # waits out the servers' own timeouts: timing-sensitive, run under the lock
SLOW_EACH = 20  # slow clients of each kind per server: more than any pool here has threads
# Scheduling slack on a loaded machine. Every bound below is the server's own timeout plus this.
SLACK_S = 3.0
# The servers here cut a slow request off after TIMEOUT_S instead of the contract's 10 s (the same cuts, 20 s sooner):
# longer than the two drips the slow clients get before the fresh client comes, so they are still there to get in its way.
TIMEOUT_S = 4.0
OWN = sorted(name for name in hostile.OWN_HTTP if name in registry.names())
CONCURRENT = [name for name in OWN if name != "step1_blocking"]  # step 1 serves one connection at a time, by design
# Steps 2 and 3 are the lesson's first loops: they never wait on one client, but never cut one off either.
CUTS_OFF = [name for name in OWN if name not in ("step2_busy_wait", "step3_callbacks")]


@pytest.fixture(scope="module", autouse=True)
def enough_files():
    environment.raise_file_limit(4 * SLOW_EACH * len(OWN) + 256)


@pytest.fixture(scope="module", autouse=True)
def short_timeouts():
    with children.environment(**{contract.REQUEST_TIMEOUT_VARIABLE: TIMEOUT_S}):
        yield


@pytest.fixture(scope="module")
def step1_run(short_timeouts):
    """step1_blocking with a slow client on it and a fresh client behind that one, begun before the first test: the
    fresh client waits out the slow one's head timeout while that test waits out the same timeout on the other servers,
    not after it. Yields (the server, its slow client, the fresh client's wait to come: fresh_request_s's answer)."""
    if "step1_blocking" not in OWN:
        yield None
        return
    with (servers.serve("step1_blocking") as server, slowloris.SlowClients(server.host, server.port) as slow,
          concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="step1-fresh") as pool):
        slow.add(1, "head")
        yield server, slow, pool.submit(slowloris.fresh_request_s, server.host, server.port, TIMEOUT_S + SLACK_S)


@pytest.mark.usefixtures("step1_run")  # step 1's run goes on beside this one
def test_a_fresh_client_is_answered_beside_slow_ones_and_they_are_cut_off():
    with contextlib.ExitStack() as stack:
        running = {name: stack.enter_context(servers.serve(name)) for name in CONCURRENT}
        slow = {}
        for name, server in running.items():
            slow[name] = stack.enter_context(slowloris.SlowClients(server.host, server.port))
            for kind in slowloris.KINDS:
                assert slow[name].add(SLOW_EACH, kind) == SLOW_EACH, name
        time.sleep(2 * slowloris.DRIP_S)  # let them trickle
        for name, server in running.items():
            # A server that waited on a slow client would take at least that client's head timeout to answer.
            took = slowloris.fresh_request_s(server.host, server.port, bound_s=TIMEOUT_S)
            assert took is not None, f"{name} did not answer a fresh client beside {2 * SLOW_EACH} slow ones"
            assert slow[name].still_open() > 0 or name in CUTS_OFF  # they were still there to get in its way
        # A request gets its head timeout from its first byte, and its body timeout after that; then a 408.
        bound_s = TIMEOUT_S + TIMEOUT_S + SLACK_S
        cutting = [name for name in running if name in CUTS_OFF]
        slowloris.wait_for(lambda: all(slow[name].still_open() == 0 for name in cutting), bound_s)
        for name in cutting:
            clients = slow[name]
            assert clients.still_open() == 0, f"{name} kept {clients.still_open()} slow clients past {bound_s} s"
            assert max(clients.lasted_s["head"]) <= TIMEOUT_S * 2 + SLACK_S, (name, clients.lasted_s)
            assert set(line.split(" ")[1] for line in clients.answers) <= {"408"}, (name, clients.answers)
            running[name].check()
        for name in running:
            if name not in CUTS_OFF:
                assert slow[name].still_open() == 2 * SLOW_EACH, name  # recorded: these steps have no timeout


@pytest.mark.skipif("step1_blocking" not in OWN, reason="step1_blocking is not in the registry")
def test_step1_serves_the_next_client_once_a_slow_one_is_cut_off(step1_run):
    server, slow, fresh = step1_run
    took = fresh.result()  # fresh_request_s gives up by itself, at TIMEOUT_S + SLACK_S
    assert took is not None, "step1_blocking never served the client behind a slow one"
    # One connection at a time: the fresh client waited for the slow one's head timeout, no longer.
    assert took >= 0.9 * TIMEOUT_S, took
    assert slowloris.wait_for(lambda: slow.cut_off["head"] == 1, SLACK_S)
    assert list(slow.answers) == ["HTTP/1.1 408 Request Timeout"], slow.answers
    server.check()


def test_servers_take_the_contracts_timeouts_and_a_test_may_only_shorten_them():
    # Without the variable (as every lesson runs them) a server keeps the contract's 10 s; with it, what it says.
    assert contract.request_timeout_s({}) == contract.DEFAULT_REQUEST_TIMEOUT_S == 10.0
    assert contract.request_timeout_s({contract.REQUEST_TIMEOUT_VARIABLE: "2.5"}) == 2.5
    for bad in ("0", "-1", "11", "soon", "nan"):
        with pytest.raises(ValueError, match=contract.REQUEST_TIMEOUT_VARIABLE):
            contract.request_timeout_s({contract.REQUEST_TIMEOUT_VARIABLE: bad})
    # What a server started here reads: the module above sets the variable for every child (short_timeouts).
    said = children.run(children.python("-c", "from iolab import contract; print(contract.HEAD_TIMEOUT_S,"
                                        " contract.BODY_TIMEOUT_S)"), timeout_s=30)
    assert said.stdout.split() == [str(TIMEOUT_S)] * 2, said
