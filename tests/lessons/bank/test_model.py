"""The bank simulation against closed forms and Little's law, for several parameter sets."""

import math

import pytest

from iolab.lessons.bank import model as bank

# (requests, concurrency, delay_ms, threads): the article's set, the lesson's quick set, odd sizes
PARAMETER_SETS = [
    (200, 40, 1000, 4),
    (40, 8, 200, 2),
    (37, 5, 150, 3),
    (10, 25, 500, 4),  # fewer customers than seats
    (30, 3, 100, 3),  # as many tellers as seats
]


@pytest.mark.parametrize("requests, concurrency, delay_ms, threads", PARAMETER_SETS)
def test_synchronous_bank_serves_one_at_a_time(requests, concurrency, delay_ms, threads):
    run = bank.simulate("sync", requests, concurrency, delay_ms)
    assert run.duration_s == pytest.approx(requests * delay_ms / 1000)
    assert run.rps == pytest.approx(1000 / delay_ms)


@pytest.mark.parametrize("requests, concurrency, delay_ms, threads", PARAMETER_SETS)
def test_ticket_bank_serves_a_hall_at_a_time(requests, concurrency, delay_ms, threads):
    run = bank.simulate("ticket", requests, concurrency, delay_ms)
    assert run.duration_s == pytest.approx(math.ceil(requests / concurrency) * delay_ms / 1000)
    assert run.mean_ms == pytest.approx(delay_ms)  # nobody waits for the teller when counter work is free


@pytest.mark.parametrize("requests, concurrency, delay_ms, threads", PARAMETER_SETS)
def test_threaded_bank_serves_k_at_a_time(requests, concurrency, delay_ms, threads):
    run = bank.simulate("threaded", requests, concurrency, delay_ms, tellers=threads)
    at_once = min(concurrency, threads)
    assert run.duration_s == pytest.approx(math.ceil(requests / at_once) * delay_ms / 1000)


@pytest.mark.parametrize("name", bank.BANKS)
@pytest.mark.parametrize("requests, concurrency, delay_ms, threads", PARAMETER_SETS)
def test_littles_law_holds_on_the_simulation(name, requests, concurrency, delay_ms, threads):
    run = bank.simulate(name, requests, concurrency, delay_ms, cpu_ms=3, tellers=threads if name == "threaded" else None)
    mean_in_bank, throughput_times_wait = run.little()
    assert mean_in_bank == pytest.approx(throughput_times_wait, rel=1e-9)
    assert 0 < mean_in_bank <= min(concurrency, requests) + 1e-9


@pytest.mark.parametrize("name", bank.BANKS)
def test_closed_loop_keeps_the_hall_full_until_the_end(name):
    run = bank.simulate(name, 50, 10, 100, cpu_ms=2, tellers=4 if name == "threaded" else None)
    tellers = 4 if name == "threaded" else 1
    last_arrival = max(v.arrival for v in run.visits)
    for snapshot in run.timeline:
        assert snapshot.tellers_busy <= tellers
        assert snapshot.in_bank <= 10
        if 0 < snapshot.time < last_arrival:
            assert snapshot.in_bank == 10  # a leaving customer is replaced at the same instant
    assert run.timeline[-1].done == 50 and run.timeline[-1].in_bank == 0


def test_only_the_ticket_bank_uses_the_lounge_and_only_sync_tellers_wait():
    runs = bank.simulate_all(40, 8, 200, threads=2, cpu_ms=4)
    assert max(s.lounge for s in runs["ticket"].timeline) == 8
    assert max(s.waiting for s in runs["ticket"].timeline) == 0
    for name in ("sync", "threaded"):
        assert max(s.lounge for s in runs[name].timeline) == 0
        assert max(s.waiting for s in runs[name].timeline) >= 1


def test_ticket_bank_saturates_on_counter_work():
    # 100 customers on 100 ms errands could give 1000/s, but 10 ms of counter work
    # each means one teller can serve at most 100 per second.
    run = bank.simulate("ticket", 1000, 100, 100, cpu_ms=10)
    assert run.rps == pytest.approx(100, rel=0.03)
    assert run.mean_ms == pytest.approx(100 / run.rps * 1000, rel=0.05)  # Little: W = L / lambda


def test_visits_are_consistent():
    run = bank.simulate("threaded", 25, 6, 100, cpu_ms=1, tellers=2)
    assert [v.customer for v in run.visits] == list(range(25))
    for visit in run.visits:
        assert visit.arrival <= visit.service_start < visit.departure
        assert visit.time_in_bank == pytest.approx(visit.departure - visit.arrival)
    assert {v.seat for v in run.visits} == set(range(6))


def test_percentiles_are_nearest_rank():
    run = bank.simulate("sync", 10, 10, 100)  # everyone arrives at 0; customer i leaves at (i + 1) * 100 ms
    assert run.percentile_ms(50) == pytest.approx(500)
    assert run.percentile_ms(99) == pytest.approx(1000)
    assert run.percentile_ms(100) == pytest.approx(1000)
    assert run.mean_ms == pytest.approx(550)


def test_at_returns_the_state_in_force():
    run = bank.simulate("ticket", 4, 2, 100)
    assert run.at(0.05).lounge == 2
    assert run.at(0.1).lounge == 2 and run.at(0.1).done == 2  # the next two went straight to the lounge
    assert run.at(10).done == 4


@pytest.mark.parametrize(
    "arguments, message",
    [
        (("queue", 10, 2, 100), "bank must be one of"),
        (("threaded", 10, 2, 100), "needs tellers=k"),
        (("sync", 0, 2, 100), "requests must be at least 1, a whole number, got 0"),
        (("sync", 10, 0, 100), "concurrency must be at least 1, a whole number, got 0"),
        (("sync", 10, 2, -5), "delay_ms must be at least 0, got -5"),
        (("sync", 10, 2, 0), r"delay_ms \+ cpu_ms must be > 0"),
    ],
)
def test_bad_parameters_name_themselves(arguments, message):
    with pytest.raises(ValueError, match=message):
        bank.simulate(*arguments)


def test_sync_bank_refuses_more_tellers():
    with pytest.raises(ValueError, match="exactly one teller"):
        bank.simulate("sync", 10, 2, 100, tellers=3)
