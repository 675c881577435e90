"""Lesson 06's model (iolab.lessons.workers.model).

Each limit where it should bind, and the verdict on a run.
"""

import dataclasses

import pytest

from iolab import params
from iolab.lessons.workers import measure, model, sweep

ONE_CORE, TWO_CORES = 1, 2


def demands(app_ms=1.0, client_ms=0.0, wait_ms=0.0, nginx_ms=0.0, process_cores=1.0):
    return model.Demands(app_ms=app_ms, client_ms=client_ms, nginx_ms=nginx_ms, wait_ms=wait_ms,
                         process_cores=process_cores)


def test_waiting_scales_with_the_threads_that_hold_it():
    # Z = 20 ms, D = 1 ms: k threads serve k / 21 ms, as long as there are users and CPU for it.
    for threads in (1, 2, 4, 8):
        prediction = model.predict(demands(wait_ms=20), model.Setup(1, threads), users=2 * threads, cores=TWO_CORES)
        assert prediction.limit == "threads"
        assert prediction.rps == pytest.approx(threads / 0.021)


def test_cpu_work_does_not_scale_with_threads_because_of_the_gil():
    for threads in (1, 4, 16):
        prediction = model.predict(demands(app_ms=5), model.Setup(1, threads), users=32, cores=TWO_CORES)
        assert prediction.limit == "GIL" and prediction.rps == pytest.approx(200)


def test_a_process_with_threads_may_keep_a_little_more_than_a_core_busy():
    prediction = model.predict(demands(app_ms=0.5, process_cores=1.1), model.Setup(1, 4), users=16, cores=TWO_CORES)
    assert prediction.rps == pytest.approx(1.1 / 0.0005)


def test_processes_scale_cpu_work_up_to_the_cores_and_the_client_counts_too():
    d = demands(app_ms=5, client_ms=0.25)
    by_processes = {n: model.predict(d, model.Setup(n, 1, one_thread=True), users=16, cores=TWO_CORES) for n in (1, 2, 4)}
    assert by_processes[1].limit == "GIL" and by_processes[1].rps == pytest.approx(200)
    assert by_processes[2].limit == "cores" and by_processes[2].rps == pytest.approx(2 / 0.00525)
    assert by_processes[4].rps == by_processes[2].rps


def test_on_one_core_processes_do_not_scale_at_all():
    d = demands(app_ms=5, client_ms=0.25)
    rates = [model.predict(d, model.Setup(n, 1, one_thread=True), users=16, cores=ONE_CORE).rps for n in (1, 2, 4)]
    assert rates == pytest.approx([1 / 0.00525] * 3)


def test_few_users_limit_before_anything_else():
    prediction = model.predict(demands(app_ms=1, client_ms=1, wait_ms=98), model.Setup(4, 8), users=2, cores=TWO_CORES)
    assert prediction.limit == "users" and prediction.rps == pytest.approx(2 / 0.1)


def test_nginx_and_the_client_have_limits_of_their_own():
    nginx_alone = model.Setup(processes=0, threads=1, nginx_workers=1, client_processes=1)
    prediction = model.predict(demands(app_ms=0, client_ms=0.02, nginx_ms=0.01), nginx_alone, users=16, cores=TWO_CORES)
    assert prediction.limit == "client" and prediction.rps == pytest.approx(50_000)
    two_clients = dataclasses.replace(nginx_alone, client_processes=2)
    prediction = model.predict(demands(app_ms=0, client_ms=0.02, nginx_ms=0.01), two_clients, users=16, cores=TWO_CORES)
    assert prediction.limit == "cores" and prediction.rps == pytest.approx(2 / 0.00003)


def test_connections_crowded_into_one_worker_leave_the_others_idle():
    even = model.predict(demands(wait_ms=20), model.Setup(2, 4), users=16, cores=TWO_CORES)
    crowded = model.predict(demands(wait_ms=20), model.Setup(2, 4, connections=(15, 1)), users=16, cores=TWO_CORES)
    assert even.rps == pytest.approx(8 / 0.021)
    assert crowded.rps == pytest.approx(5 / 0.021)  # four threads of the first worker, one connection on the second


def run_of(rps, app_ms=1.0, client_ms=0.0, others=0.0, idle=0.0, connections=()):
    return measure.Run(
        server="x", options={}, handler="cpu", path="/cpu", users=16, keep_alive=True, completed=100, errors=0,
        rps=rps, mean_ms=1.0, p99_ms=2.0, duration_s=1.0, server_demand_ms=app_ms, app_demand_ms=app_ms,
        nginx_demand_ms=0.0, app_queued_ms=0.0, app_processes=1, client_demand_ms=client_ms, kernel_demand_ms=0.0,
        others_share=others, idle_share=idle, cores=TWO_CORES, connections=connections,
    )


ONE_SYNC_WORKER = model.Setup(1, 1, one_thread=True)


def verdict_of(run, first, setup=ONE_SYNC_WORKER):
    own = model.Demands.of(run, first.wait_ms, first.process_cores)
    predicted = model.predict(first, setup, 16, TWO_CORES)
    explained = model.predict(own, dataclasses.replace(setup, connections=run.connections), 16, TWO_CORES)
    most = model.ceiling(run, own, setup, 16, TWO_CORES)
    return model.judge(run, predicted, explained, first, own, dataclasses.replace(setup, connections=run.connections), most)


def test_a_run_within_ten_percent_is_predicted():
    assert verdict_of(run_of(950), demands(app_ms=1)).kind == "predicted"


def test_a_miss_that_the_runs_own_demand_accounts_for_is_explained_by_it():
    verdict = verdict_of(run_of(800, app_ms=1.25), demands(app_ms=1))
    assert verdict.kind == "explained" and "1.25 ms, not 1" in verdict.reason and verdict.holds


def test_a_miss_from_an_uneven_spread_is_explained_by_the_spread():
    first = demands(app_ms=1, wait_ms=20)
    verdict = verdict_of(run_of(240, app_ms=1, connections=(15, 1)), first, model.Setup(2, 4))
    assert verdict.kind == "explained" and "15, 1" in verdict.reason


def test_a_disturbed_run_is_reported_not_judged():
    verdict = verdict_of(run_of(500, others=0.4), demands(app_ms=1))
    assert verdict.kind == "reported" and "40%" in verdict.reason and verdict.holds


def test_a_run_that_idled_below_a_cpu_bound_is_reported_with_the_idle_share():
    verdict = verdict_of(run_of(700, idle=0.25), demands(app_ms=1))
    assert verdict.kind == "reported" and "idle 25%" in verdict.reason


def test_a_slower_run_nothing_measured_accounts_for_is_reported_with_what_was_measured():
    verdict = verdict_of(run_of(500, others=0.02, idle=0.03), demands(app_ms=1))
    assert verdict.kind == "reported" and verdict.holds
    assert "-50% from the bound" in verdict.reason and "2% of the cores" in verdict.reason


def test_only_a_run_faster_than_its_own_demands_allow_is_unexplained():
    verdict = verdict_of(run_of(2000, others=0.5), demands(app_ms=1))  # one sync worker, D = 1 ms: 1,000 req/s at most
    assert verdict.kind == "unexplained" and not verdict.holds and "+100% above" in verdict.reason


def test_the_ceiling_lets_threads_keep_as_many_cores_busy_as_they_did_and_spreads_connections_evenly():
    first = demands(app_ms=1, wait_ms=20)
    crowded = run_of(300, app_ms=1, connections=(15, 1))
    most = model.ceiling(crowded, first, model.Setup(2, 4), 16, TWO_CORES)
    assert most.limit == "threads" and most.rps == pytest.approx(8 / 0.021)  # every thread at work
    busy = run_of(1300, app_ms=1)  # one process with threads kept 1.3 cores busy: its system calls overlap
    assert model.ceiling(busy, demands(app_ms=1), model.Setup(1, 4), 16, TWO_CORES).rps == pytest.approx(1300)
    verdict = verdict_of(busy, demands(app_ms=1, process_cores=1.1), model.Setup(1, 4))
    assert verdict.kind == "explained" and "kept 1.30 cores busy" in verdict.reason


def test_g_is_measured_only_for_a_threaded_process_its_gil_limited():
    threaded = model.Setup(1, 1)
    assert model.process_cores(run_of(1100, app_ms=1), threaded, 16, TWO_CORES) == pytest.approx(1.1)
    assert model.process_cores(run_of(1100, app_ms=1), model.Setup(1, 1, one_thread=True), 16, TWO_CORES) == 1.0
    waiting = run_of(45, app_ms=1)
    assert model.process_cores(waiting, threaded, 16, TWO_CORES, wait_ms=20) == 1.0  # bound by its threads


@pytest.mark.parametrize(
    "values, words",
    [
        ([2, 4], "include (1,)"),
        ([1], "at least 2 values"),
        ([1, 4, 2], "rising order"),
        ([1, 1, 2], "distinct"),
        ([1, 2.5], "whole numbers"),
        ([1, 64], "from 1 to 32"),
        ("1,2", "whole numbers"),
    ],
)
def test_count_parameters_are_checked_by_name(values, words):
    with pytest.raises(params.ParameterError, match="thread_counts") as caught:
        sweep.check_counts("thread_counts", values, 1, 32, at_least=2)
    assert words in str(caught.value)


def test_configurations_name_their_server_options_and_baseline():
    assert sweep.Config("sync", 4).options == {"workers": 4}
    assert sweep.Config("gthread", 2, 8).options == {"workers": 2, "threads": 8, "worker_class": "gthread"}
    assert sweep.Config("threaded", 1, 4).options == {"threads": 4} and not sweep.Config("threaded").keep_alive
    assert sweep.Config("tornado", 2).options == {"upstreams": 2}
    assert sweep.Config("gthread", 2, 8).baseline == sweep.Config("gthread")
    assert sweep.Config("sync", 2).setup().one_thread and not sweep.Config("gthread", 1, 1).setup().one_thread


def test_without_nginx_its_comparisons_are_named_missing_and_refused_with_the_reason(monkeypatch):
    # A student's laptop without nginx: the registry's own check says so, and the rest of the lab still runs.
    monkeypatch.setattr("iolab.registry.find_program", lambda name: None if name == "nginx" else f"/usr/bin/{name}")
    assert sweep.missing("sync") is None and sweep.missing("threaded") is None
    for kind in sweep.NGINX_KINDS:
        assert "'nginx'" in sweep.missing(kind)
    assert "'nginx'" in sweep.nginx_missing()
    lab = sweep.Lab(wait_ms=20, cpu_ms=5, run_seconds=0.1, users=4, retries=0)
    with pytest.raises(RuntimeError, match="nginx alone.*'nginx'"):
        lab.measure(sweep.Config("nginx"))
    assert lab.cells == []


def test_with_nginx_installed_nothing_is_missing(monkeypatch):
    monkeypatch.setattr("iolab.registry.find_program", lambda name: f"/usr/sbin/{name}")
    assert sweep.nginx_missing() is None
