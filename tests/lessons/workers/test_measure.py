"""Lesson 06's measurements on real servers.

Demands per party, the spread of connections, pinning, the GIL probe.
"""

import os
import statistics

import psutil
import pytest

from iolab import servers, usage
from iolab.lessons.workers import cores, gil, measure, sweep

pytestmark = pytest.mark.slow
CPU_MS = 5
# /cpu?ms=5 burns 5 ms of the worker's CPU; parsing, answering and closing add a fraction of a millisecond,
# and a machine busy with other work can make that CPU a little slower.
DEMAND_AT_LEAST_MS, DEMAND_AT_MOST_MS = 0.95 * CPU_MS, 1.6 * CPU_MS


def started(config):
    if (reason := servers.registry.get(config.server).missing()) is not None:
        pytest.skip(reason)
    return measure.start(config.server, **config.options)


@pytest.mark.parametrize(
    "config", [sweep.Config("sync", 2), sweep.Config("gthread", 2, 2), sweep.Config("threaded", 1, 2),
               sweep.Config("tornado", 2)], ids=lambda c: c.label,
)
def test_every_configuration_answers_every_handler_and_refuses_a_bad_query(config):
    server = started(config)
    try:
        for handler in measure.HANDLERS:
            run = measure.run(server, measure.handler_path(handler, 2, 2), 12, 4, handler=handler,
                              keep_alive=config.keep_alive)
            assert run.completed == 12 and run.errors == 0, run
        bad = measure.run(server, "/cpu?ms=oops", 4, 2, keep_alive=config.keep_alive)
        assert bad.errors == 4  # a 400 for each: a wrong query is refused, never served
    finally:
        server.stop()


def test_nginx_alone_and_in_front_of_tornado_is_measured_as_the_lesson_measures_it():
    # The lesson's nginx cells, with nginx: CI runs lesson 06 in the browser without it (tests/tool_paths.py).
    for config in (sweep.Config("tornado", 1), sweep.Config("nginx")):
        server = started(config)
        try:
            run = measure.run(server, measure.handler_path("hello", 2, 2), 200, 4, handler="hello")
        finally:
            server.stop()
        assert run.completed == 200 and run.errors == 0, run
        assert run.server_demand_ms > 0 and run.client_demand_ms > 0, run
        if config.kind == "tornado":  # nginx's own share of each request, which the lesson prints before Exercise 7
            assert 0 < run.nginx_demand_ms < run.server_demand_ms, run


def test_a_run_measures_the_demand_of_server_and_client():
    server = started(sweep.Config("sync"))
    try:
        run = measure.run(server, f"/cpu?ms={CPU_MS}", 60, 4, handler="cpu")
    finally:
        server.stop()
    assert run.completed == 60 and run.errors == 0
    assert DEMAND_AT_LEAST_MS <= run.app_demand_ms <= DEMAND_AT_MOST_MS, run
    assert run.server_demand_ms >= run.app_demand_ms and run.client_demand_ms > 0
    assert run.app_processes == 1 and run.cores == len(os.sched_getaffinity(0))
    assert 0 <= run.others_share <= 1 and 0 <= run.idle_share <= 1


def test_the_connections_each_gthread_worker_holds_are_counted():
    server = started(sweep.Config("gthread", 2, 2))
    try:
        run = measure.run(server, "/sync-sleep?ms=20", 200, 8, handler="wait", read_split=True, expected_s=1.0)
    finally:
        server.stop()
    assert len(run.connections) == 2 and sum(run.connections) == 8, run.connections
    # The users connected before the go, and kept those connections: the spread read then is the run's.
    assert len(run.connections_at_go) == 2 and sum(run.connections_at_go) == 8, run.connections_at_go
    assert run.connections_at_go == run.connections


def test_a_lab_pinned_to_one_cpu_runs_its_servers_and_clients_there():
    cpu = cores.usable_cores()[:1]
    lab = sweep.Lab(wait_ms=20, cpu_ms=CPU_MS, run_seconds=0.2, users=4, handlers=("cpu",), cpus=cpu)
    assert lab.cores == 1
    cell = lab.measure(sweep.Config("sync"))[0]
    assert cell.run.cores == 1
    assert os.sched_getaffinity(0) == set(cores.usable_cores())  # the notebook's own affinity came back
    with cores.pinned(set(cpu)):
        server = servers.start("gunicorn_app", workers=2)
        try:
            cores.pin_process_tree(server.pid, set(cpu))
            tree = usage.process_tree(psutil.Process(server.pid))
            assert all(set(process.cpu_affinity()) == set(cpu) for process in tree)
        finally:
            server.stop()


def test_hello_worlds_baseline_is_the_middle_of_three_runs_and_the_runs_it_predicts_are_run_once():
    lab = sweep.Lab(wait_ms=20, cpu_ms=CPU_MS, run_seconds=0.1, users=4, handlers=("hello", "cpu"), retries=0)
    hello, cpu = lab.measure(sweep.Config("sync"))
    assert len(hello.tries) == sweep.BASELINE_RUNS["hello"] == 3 and len(cpu.tries) == sweep.BASELINE_RUNS["cpu"] == 3
    # /cpu's three runs measure the noise of D, against which a change of D between configurations is held.
    assert len(cpu.tries_demand_ms) == 3 and 0 <= cpu.noise == lab.noise("cpu") < 1, cpu.tries_demand_ms
    assert hello.rps == sorted(hello.tries)[1], hello.tries  # the kept run is the median, and its demands the baseline
    assert lab.baselines[("sync", "hello")].app_ms == hello.run.app_demand_ms
    two = lab.measure(sweep.Config("sync", 2), ["hello"])[0]
    assert two.tries == (two.rps,)
    assert hello.row()["tries_rps"] == list(hello.tries)


def test_a_busy_thread_delays_hello_world_by_switch_intervals_and_a_busy_process_does_not():
    # A busy machine only adds to a latency, so each claim is put where noise cannot make it true or false: every
    # request beside a busy thread waits at least about one interval for the GIL (the median, with room for the
    # clock), while beside a busy process, or with nothing busy, some requests get through far sooner.
    with servers.serve("threaded_app") as threaded:
        alone = gil.hello_latencies_ms(threaded.url, 0, probes=10)
        beside_a_thread = gil.hello_latencies_ms(threaded.url, 1, probes=10, pid=threaded.pid)
    with servers.serve("gunicorn_app", workers=2) as processes:
        beside_a_process = gil.hello_latencies_ms(processes.url, 1, probes=10, pid=processes.pid)
    interval = gil.switch_interval_ms()
    assert statistics.median(beside_a_thread) >= 0.8 * interval, (beside_a_thread, interval)
    assert min(alone) < 0.5 * interval and min(beside_a_process) < 0.5 * interval, (alone, beside_a_process)


def test_python_bytecode_in_threads_keeps_one_core_busy_and_c_code_can_keep_more():
    bytecode = gil.threads_at_work(gil.count_in_python, 2, seconds=0.2)
    in_c = gil.threads_at_work(gil.hash_in_c, 2, seconds=0.2, retries=2)
    assert bytecode.calls_per_s > 0 and in_c.calls_per_s > 0
    assert bytecode.cores_busy <= 1.1, bytecode  # the GIL: one thread at a time runs bytecode
    # Two cores left free by other programs let the hashing threads run side by side; otherwise there is nothing
    # to see, and the test says so.
    if len(cores.usable_cores()) >= 2 and in_c.others_share <= 0.05:
        assert in_c.cores_busy > 1.1, in_c


def test_free_threading_says_why_not_on_a_gil_build():
    free, why = gil.free_threading()
    assert isinstance(free, bool) and why
    if not free:
        assert "GIL" in why
