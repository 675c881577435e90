"""The operational laws, bounds, knee, mean-value analysis and simulation, on cases whose answers are known by hand."""

import math

import pytest

from iolab import theory


def test_the_laws_are_the_textbook_formulas():
    assert theory.little(40.0, 1.0) == 40.0
    assert theory.utilization(1000, 0.0004) == pytest.approx(0.4)
    assert theory.utilization(1000, 0.0004, servers=2) == pytest.approx(0.2)
    assert theory.service_demand(0.4, 1000) == pytest.approx(0.0004)
    # The article's sync run: ab's 40149 ms is the response-time law with Z = 0 (40 users / 0.9963 req/s).
    assert theory.response_time(40, 200 / 200.7) == pytest.approx(40.14, rel=1e-3)
    assert theory.response_time(40, 39.35, delay_s=1.0) == pytest.approx(40 / 39.35 - 1)
    with pytest.raises(ValueError, match="throughput"):
        theory.service_demand(0.5, 0)


def test_bounds_for_one_server_match_the_article_and_the_knee():
    # 40 users, 1 s waits, 0.4 ms of CPU each: the article's async run.
    assert theory.optimistic_throughput(40, 0.0004, 1.0) == pytest.approx(40 / 1.0004)
    assert theory.pessimistic_throughput(40, 0.0004, 1.0) == pytest.approx(40 / 1.016)
    assert theory.knee(0.0004, 1.0) == pytest.approx(2501)
    # Past the knee the optimistic bound is the CPU's, 1 / D.
    assert theory.optimistic_throughput(5000, 0.0004, 1.0) == pytest.approx(2500)


def test_k_servers_bounds_reduce_to_one_server_and_contain_the_exact_batch():
    for users in (1, 2, 7, 40):
        assert theory.pessimistic_throughput(users, 0.01, 0.1, servers=1) == pytest.approx(users / (0.1 + users * 0.01))
    # N users arriving together at k servers of equal demand: the last leaves after ceil(N / k) D.
    for users, servers in ((3, 2), (4, 2), (10, 3), (40, 4)):
        worst = math.ceil(users / servers) * 0.01
        assert theory.pessimistic_response(users, 0.01, servers) >= worst - 1e-12
    assert theory.knee(0.01, 0.1, servers=4) == pytest.approx(44)
    assert theory.optimistic_throughput(1000, 0.01, 0.1, servers=4) == pytest.approx(400)


def test_bottleneck_form_for_several_centres():
    # Server 0.4 ms then client 0.2 ms: the sum for one request's path, the server's alone for saturation.
    assert theory.optimistic_throughput(1, 0.0006, 0.02, bottleneck_s=0.0004) == pytest.approx(1 / 0.0206)
    assert theory.optimistic_throughput(10_000, 0.0006, 0.02, bottleneck_s=0.0004) == pytest.approx(2500)
    assert theory.knee(0.0006, 0.02, bottleneck_s=0.0004) == pytest.approx(0.0206 / 0.0004)


def test_bottleneck_law_names_the_tier_with_the_least_capacity():
    # The article's blocking Tornado: one thread held 145 ms a request, a worker pool of 1: a tie, the first named.
    assert theory.bottleneck({"front end": (1, 0.145), "workers": (1, 0.145)}) == (pytest.approx(1 / 0.145), "front end")
    # A pool of 8 threads in front of 4 workers: the workers; 2 threads: the front end. No fixed limit bounds nothing.
    assert theory.bottleneck({"front end": (8, 0.2), "workers": (4, 0.2), "users": (None, 0.2)}) == (20.0, "workers")
    assert theory.bottleneck({"front end": (2, 0.2), "workers": (4, 0.2)})[1] == "front end"
    with pytest.raises(ValueError, match="demand_s"):
        theory.bottleneck({"workers": (4, 0)})
    with pytest.raises(ValueError, match="at least one"):
        theory.bottleneck({"users": (None, 0.2)})


@pytest.mark.parametrize("servers", [1, 2, 4])
def test_mva_lies_between_the_bounds_and_meets_them_at_the_ends(servers):
    demand, delay = 0.01, 0.1
    points = theory.mva(120, demand, delay, servers=servers)
    for point in points:
        low = theory.pessimistic_throughput(point.users, demand, delay, servers)
        high = theory.optimistic_throughput(point.users, demand, delay, servers)
        assert low * (1 - 1e-9) <= point.throughput <= high * (1 + 1e-9), point
        # Little's law on the centre, inside the model: Q = X R.
        assert point.queue == pytest.approx(point.throughput * point.response_s)
    assert points[0].throughput == pytest.approx(1 / (delay + demand))
    assert points[-1].throughput == pytest.approx(servers / demand, rel=0.01)


def test_mva_with_one_server_equals_the_load_dependent_recursion_and_series_centres_add_up():
    single = theory.mva(60, 0.01, 0.2)
    multi = theory._mva_multi_server(60, 0.01, 0.2, 1)
    assert [p.throughput for p in single] == pytest.approx([p.throughput for p in multi])
    # One user through two centres in series takes the sum of their demands.
    assert theory.mva(1, [0.004, 0.002], 0.02)[0].throughput == pytest.approx(1 / 0.026)
    with pytest.raises(ValueError, match="one centre"):
        theory.mva(5, [0.01, 0.01], servers=2)


def test_simulated_blocking_server_gives_the_articles_mean_and_median():
    run = theory.simulate(40, 200, 1.0)  # a blocking server: demand = the 1 s wait
    assert run.duration_s == pytest.approx(200)
    assert run.throughput == pytest.approx(1.0)
    assert sum(run.latencies_s) / 200 == pytest.approx(36.1)  # the first round climbs 1..40 s, then 40 s each
    assert run.percentile_s(0.5) == pytest.approx(40)
    assert min(run.latencies_s) == pytest.approx(1)


def test_simulated_event_loop_reaches_the_cpu_bound_past_the_knee():
    run = theory.simulate(400, 4000, 0.0005, 0.02)
    assert run.throughput == pytest.approx(2000, rel=0.02)
    assert theory.simulate(1, 5, 0.0005, 0.02).throughput == pytest.approx(1 / 0.0205)


def test_prediction_orders_its_bounds_and_the_in_step_estimate():
    for users in (1, 5, 40, 200):
        for blocking in (False, True):
            p = theory.predict(users, 0.1, 0.0004, queued_s=0.0001, path_s=0.0012, blocking=blocking)
            assert p.low_rps <= p.in_step_rps <= p.high_rps, p
            assert p.contains(p.in_step_rps) and not p.contains(p.high_rps * 1.05)
    blocking = theory.predict(40, 1.0, 0.0004, blocking=True)
    assert blocking.high_rps == pytest.approx(1 / 1.0004) and blocking.knee == pytest.approx(1)
    assert theory.predict(40, 1.0, 0.0004).in_step_rps == pytest.approx(40 / (1 + 40 * 0.0004))


def test_within_treats_nan_as_outside():
    assert theory.within(1.0, 0.9, 1.1)
    assert theory.within(1.12, 0.9, 1.1, tolerance=0.02)
    assert not theory.within(math.nan, 0.9, 1.1)
    assert not theory.within(1.0, math.nan, 1.1)


def test_cpu_measured_past_the_last_answer_widens_only_the_capacity_terms():
    # Past the knee the capacity term binds: a window 10% longer than the run lets the thread do 10% more.
    busy = theory.predict(200, 0.02, 0.001)
    wider = theory.predict(200, 0.02, 0.001, window=1.1)
    assert wider.high_rps == pytest.approx(1.1 * busy.high_rps) and wider.low_rps == busy.low_rps
    # Below the knee the users' own cycle binds, and the window changes nothing; a window under 1 is taken as 1.
    assert theory.predict(4, 1.0, 0.001, window=1.5).high_rps == pytest.approx(4 / 1.001)
    assert theory.predict(200, 0.02, 0.001, window=0.9).high_rps == busy.high_rps
    assert theory.predict(5, 0.1, 0.001, blocking=True, window=1.2).high_rps == pytest.approx(1.2 / 0.101)


def test_a_thread_pools_pessimistic_bound_takes_its_cpu_work_as_serial():
    # 40 users, 64 threads, 20 ms waits, 1.5 ms of CPU each: the waits overlap, the CPU work (one GIL) does not.
    p = theory.predict(40, 0.02, 0.0005, path_s=0.0015, blocking=True, threads=64)
    assert p.low_rps == pytest.approx(40 / (0.0215 + 39 * (0.0015 + 0.02 / 64)))
    assert p.low_rps <= p.in_step_rps <= p.high_rps
    # One thread: the same as the single server's pessimistic bound.
    one = theory.predict(40, 0.02, 0.0005, path_s=0.0015, blocking=True)
    assert one.low_rps == pytest.approx(theory.pessimistic_throughput(40, 0.0215))


def test_users_in_step_count_a_wait_for_a_cpu_only_beyond_the_other_sides_cpu():
    # Quiet machine: the server waited 0.3 ms while its client ran 0.7 ms, the client 0.4 ms while the server ran 1.2.
    assert theory.step_path(0.0012, 0.0003, 0.0007, 0.0004) == pytest.approx(0.0019)
    # Beside a hog the waits outgrow the other side's CPU, and the rest is another program's time.
    assert theory.step_path(0.0012, 0.0050, 0.0007, 0.0004) == pytest.approx(0.0012 + 0.0050)
    assert theory.step_path(0.0012, 0.0003, 0.0007, 0.0030) == pytest.approx(0.0007 + 0.0030)
    # Without the client's figures, the server's CPU and its whole wait.
    assert theory.step_path(0.0012, 0.0003) == pytest.approx(0.0015)
    one = theory.predict(1, 0.02, 0.0012, queued_s=0.0003, path_s=0.0026, step_path_s=0.0019)
    assert one.in_step_rps == pytest.approx(1 / 0.0219) and one.low_rps < 1 / 0.0226
    # The in-step path lies between the server's turn and the bound's path, whatever it is given.
    for given, kept in ((0.0001, 0.0015), (0.01, 0.0026), (math.nan, 0.0026)):
        p = theory.predict(1, 0.02, 0.0012, queued_s=0.0003, path_s=0.0026, step_path_s=given)
        assert p.step_path_s == pytest.approx(kept), (given, p)
    for users in (1, 40, 200):
        for blocking in (False, True):
            p = theory.predict(users, 0.02, 0.0004, queued_s=0.0003, path_s=0.0015, blocking=blocking,
                               step_path_s=0.0008)
            assert p.low_rps <= p.in_step_rps <= p.high_rps, p


def test_least_error_is_what_the_best_single_prediction_misses_identical_runs_by():
    runs = [900.0, 1000.0, 1100.0]
    best = (max(runs) + min(runs)) / 2
    assert theory.least_error(runs) == pytest.approx(max(abs(x / best - 1) for x in runs)) == pytest.approx(0.1)
    # No other prediction does better.
    assert all(max(abs(x / p - 1) for x in runs) >= 0.1 - 1e-12 for p in (950.0, 990.0, 1010.0, 1050.0))
    assert theory.least_error([45.2, 45.2]) == 0
    with pytest.raises(ValueError, match="positive"):
        theory.least_error([1.0, math.nan])


def test_dropped_connection_attempts_cost_the_in_step_prediction_their_retry_as_they_cost_the_bound():
    clean = theory.predict(200, 1.0, 0.0005, requests=200)
    # The bound allows every retry TCP may make; users in step that were dropped come back on its first.
    dropped = theory.predict(200, 1.0, 0.0005, requests=200, lost_s=theory.SYN_RETRIES_S,
                             step_lost_s=theory.SYN_RETRY_S)
    assert dropped.in_step_rps == pytest.approx(200 / (200 / clean.in_step_rps + theory.SYN_RETRY_S))
    assert dropped.low_rps == pytest.approx(200 / (200 / clean.low_rps + theory.SYN_RETRIES_S))
    assert dropped.low_rps <= dropped.in_step_rps <= dropped.high_rps == clean.high_rps


def test_the_open_queue_by_hand():
    # M/D/1 at ρ = 0.5, D = 10 ms: waits D ρ / (1 − ρ) / 2 = 5 ms, so R = 15 ms.
    assert theory.open_response(50, 0.010, arrival_cv2=1.0, service_cv2=0.0) == pytest.approx(0.015)
    # M/M/1 at ρ = 0.8: R = D / (1 − ρ) = 50 ms.
    assert theory.open_response(80, 0.010, arrival_cv2=1.0, service_cv2=1.0) == pytest.approx(0.050)
    # Arrivals on a fixed clock and fixed service below saturation: no wait at all.
    assert theory.open_response(90, 0.010, arrival_cv2=0.0, service_cv2=0.0) == pytest.approx(0.010)
    # At or past 1 / D the line grows without bound.
    assert theory.open_response(100, 0.010) == math.inf
    assert theory.open_response(130, 0.010) == math.inf
    with pytest.raises(ValueError, match="rate_rps"):
        theory.open_response(0, 0.010)


def test_a_blocking_servers_optimistic_bound_leaves_its_wait_for_a_cpu_out():
    # Beside two CPU hogs a sync run's counters read 40 ms a request of waiting for a CPU, while its ten requests
    # took 401 ms each: the wait was not on their path, and the best case cannot count it.
    calm = theory.predict(5, 0.4, 0.00105, queued_s=0.0, blocking=True)
    crowded = theory.predict(5, 0.4, 0.00105, queued_s=0.040, blocking=True)
    assert crowded.high_rps == calm.high_rps == pytest.approx(1 / 0.40105)
    assert crowded.low_rps < calm.low_rps  # the pessimistic bound still counts it
    assert not crowded.contains(1 / 0.39)  # and the bound can fail: faster than one wait and D a request
