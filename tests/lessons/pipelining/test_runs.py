"""Lesson 08's package on real servers.

A measured run, the order checks (and a server that breaks the order), a batch timed, the figures,
the ladder's lineup.
"""

import math
import shutil
import types

import pytest
from test_clients_pipelined import BACKWARDS_SERVER

from helpers import script_server
from iolab import environment, registry, servers, syscalls
from iolab.lessons.pipelining import hol, ladder, order, runs, view

needs_wrk = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (Debian package wrk)")
WAIT_MS = 100
TIMER_EARLY_AT_MOST_MS = hol.TIMER_EARLY_AT_MOST_MS


@pytest.fixture(scope="module")
def fast_server():
    with servers.serve("pipeline_app", loop="uvloop", parser="httptools") as server:
        yield server


def test_every_rung_is_a_registered_server_with_its_options():
    labels = [label for label, *_ in ladder.RUNGS]
    assert len(set(labels)) == len(labels) and set(ladder.SEED_FIGURES) == set(labels)
    for _, name, options, what in ladder.RUNGS:
        registry.get(name).option_values(**options)  # an unknown option would raise
        assert what
    assert set(ladder.QUICK_RUNGS) < set(labels) and ladder.FASTEST in labels
    assert [label for label, *_ in ladder.rungs(quick=True)] == [label for label in labels if label in ladder.QUICK_RUNGS]
    assert ladder.missing("no_such_server") and ladder.missing("tornado_app") is None


@pytest.mark.parametrize("client", ["lab client", pytest.param("wrk", marks=needs_wrk)])
def test_a_measured_run_adds_up(fast_server, client):
    point = runs.measure("fast", fast_server, depth=4, connections=4, duration_s=1, count=False, client=client)
    assert point.client == client and point.errors == 0 and point.requests > 100
    assert point.demand_us > 0 and math.isclose(point.user_us + point.system_us, point.demand_us, rel_tol=1e-9)
    assert point.client_us > 0 and point.cores >= 1
    # One thread cannot be busier than the whole run: X <= 1 / D, read over the run's own windows.
    assert 1.0 <= point.edges < 2 and point.rps <= point.edges * point.one_process_ceiling_rps
    assert point.machine_ceiling_rps <= point.one_process_ceiling_rps
    assert 0 < point.thread_us <= point.demand_us  # the loop's thread is one of the process's threads
    assert point.client_threads == (1 if client == "wrk" else min(environment.usable_cores(), 4))
    assert point.syscalls_per_request is None and point.row()["depth"] == 4 and point.row()["edges"] == point.edges


@needs_wrk
@pytest.mark.skipif(syscalls.missing_reason() is not None, reason="strace is not installed")
def test_a_batch_costs_a_read_and_a_write(fast_server):
    point = runs.measure("fast", fast_server, depth=16, connections=8, duration_s=1)
    if point.syscalls_skipped:
        pytest.skip(point.syscalls_skipped)  # strace is installed but may not trace here (no ptrace permission)
    # A read and a write per batch of 16, and at most one epoll_wait, give or take the edges of the counted window.
    row = point.row()
    assert point.counted_requests > 1000 and point.connections == 8
    assert point.writes_per_request <= 1 / 16 + runs.counted_at_edges(row, 1 / 16)
    assert 2 / 16 - runs.counted_at_edges(row, 2 / 16) <= point.syscalls_per_request
    assert point.syscalls_per_request <= 3 / 16 + runs.counted_at_edges(row, 3 / 16, setup=True)


def test_order_paths_get_the_bodies_the_checks_expect(fast_server):
    paths, bodies = order.batch(8)
    timing = hol.time_batch(fast_server, paths)
    assert timing.bodies == bodies and len(paths) == 8


def test_the_lab_client_finds_every_answer_in_its_place(fast_server):
    check = order.with_lab_client(fast_server, depth=16, connections=2, requests=640)
    assert check.row() == {"client": "lab client", "depth": 16, "connections": 2, "checked": 640, "out_of_order": 0,
                           "other_errors": 0}


def test_answers_out_of_place_are_counted(tmp_path):
    with script_server(tmp_path, BACKWARDS_SERVER) as url:
        check = order.with_lab_client(types.SimpleNamespace(url=url), depth=16, connections=1, requests=64)
    assert check.out_of_order > 0 and check.checked == 64


@needs_wrk
def test_wrk_checks_every_answer_too(fast_server):
    check = order.with_wrk(fast_server, depth=16, connections=2, duration_s=1)
    assert check.checked > 16 and check.out_of_order == 0 and check.other_errors == 0


def test_a_wait_first_holds_back_the_batch_and_a_wait_last_holds_back_nothing(fast_server):
    first = hol.time_batch(fast_server, hol.wait_first(WAIT_MS, 8))
    last = hol.time_batch(fast_server, hol.wait_first(WAIT_MS, 8)[::-1])
    assert first.paths[0] == f"/async-sleep?ms={WAIT_MS}" and first.paths[1:] == ["/"] * 7
    assert min(first.arrived_ms) >= WAIT_MS - TIMER_EARLY_AT_MOST_MS
    assert last.last_ms >= WAIT_MS - TIMER_EARLY_AT_MOST_MS and first.bodies[0] == last.bodies[-1]
    assert first.arrived_ms == sorted(first.arrived_ms)


def test_the_figures_draw():
    row = {"server": "a", "rps": 1000.0, "demand_us": 10.0, "user_us": 6.0, "system_us": 4.0,
           "syscalls_per_request": 2.0}
    assert view.ladder([row, {**row, "server": "b", "syscalls_per_request": None}]).axes
    sweep = [{"depth": depth, "batched": batched, "rps": 1e5 * depth, "syscalls_per_request": 2 / depth if batched else None}
             for depth in (1, 4, 16) for batched in (True, False)]
    assert view.depth_sweep(sweep, ceiling_rps=2e6).axes
    timing = hol.BatchTiming(["/"] * 3, ["hello world\n"] * 3, [1.0, 1.0, 2.0])
    assert view.batch_timeline({"no wait": timing}).axes


def test_the_batch_rung_measures_both_clients_and_numbered_paths_take_the_batch_path():
    with servers.serve("pipeline_batch_app", loop="uvloop", parser="httptools") as server:
        pair = runs.measure("per batch", server, depth=16, connections=4, duration_s=1, count=False,
                            client="batch client")
        lab = runs.measure("per batch", server, depth=16, connections=4, duration_s=1, count=False,
                           client="lab client", paths=runs.numbered_paths(16))
    assert pair.client == "batch client" and pair.errors == 0 and pair.requests > 1000
    assert pair.demand_us > 0 and pair.client_us > 0 and pair.rps <= pair.edges * pair.machine_ceiling_rps
    assert pair.client_threads == 1
    assert lab.errors == 0 and lab.requests > 100  # every numbered answer matched the one its path gets alone
    assert runs.numbered_paths(3) == ["/?seq=0", "/?seq=1", "/?seq=2"]


def test_the_ceilings_count_the_clients_own_threads():
    bounds = runs.ceilings(demand_us=2.0, client_us=4.0, cores=2, client_threads=1)
    assert bounds == {"server's thread": 500_000, "client's threads": 250_000, "the cores, shared": 2e6 / 6}
    # One client thread bounds the machine before the shared cores do; a process per core lifts that bound.
    assert min(bounds, key=bounds.get) == "client's threads"
    assert min(runs.ceilings(2.0, 4.0, 2, client_threads=2).values()) == 2e6 / 6


def test_the_edges_of_a_counted_window_scale_with_connections_and_depth():
    row = {"depth": 16, "connections": 64, "counted_requests": 28_736}
    # A batch in flight per connection at each edge: 2 × 64 batches, one write each, over the requests counted.
    assert runs.counted_at_edges(row, 1 / 16) == 128 / 28_736
    assert runs.counted_at_edges(row, 3 / 16, setup=True) == 64 * (6 + runs.SETUP_CALLS_PER_CONNECTION) / 28_736
