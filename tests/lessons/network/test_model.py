"""Lesson 14's model: round trips per exchange, slow-start rounds, Mathis and Padhye, the SYN timeout, Nagle."""

import math

import pytest

from iolab.lessons.network import model


def test_n_requests_cost_their_connect_and_one_round_trip_each_unless_they_travel_together():
    assert [model.sequence_rtts(n) for n in (1, 10)] == [2, 11]
    assert model.pipelined_rtts(10) == model.connections_rtts(10) == 2


@pytest.mark.parametrize(("size", "rounds"), [(1, 1), (14_480, 1), (14_481, 2), (43_440, 2), (43_441, 3),
                                              (500_000, 6), (1_000_000, 7), (2_000_000, 8)])
def test_slow_start_carries_ten_then_twice_as_many_segments_each_round(size, rounds):
    assert model.slow_start_rounds(size) == rounds  # k rounds carry 10 · (2^k − 1) segments of 1,448 bytes


def test_the_bulk_senders_head_takes_a_segment_of_its_own():
    # 100,000 bytes fill 70 segments, all that 3 rounds carry; the head makes 71, and a fourth round.
    assert model.slow_start_rounds(100_000) == 3 and model.answer_rounds(100_000) == 4
    assert [model.answer_rounds(size) for size in (20_000, 500_000, 2_000_000)] == [2, 6, 8]


def test_without_doubling_the_window_a_large_answer_takes_many_more_rounds():
    assert model.linear_rounds(2_000_000) == 139 and model.linear_rounds(14_480) == 1


def test_mathis_falls_with_the_round_trip_and_the_square_root_of_the_loss():
    rate = model.mathis_rate(0.041, 0.02)
    assert rate == pytest.approx(0.216e6, rel=0.01)  # the research's figure for this link: 0.216 MB/s
    assert model.mathis_rate(0.082, 0.02) == pytest.approx(rate / 2)
    assert model.mathis_rate(0.041, 0.08) == pytest.approx(rate / 2)
    assert model.mathis_rate(0.041, 0.02, acked_per_ack=1) == pytest.approx(rate * math.sqrt(2))
    assert model.mathis_rate(0.041, 0) == math.inf


def test_padhye_adds_timeouts_so_it_is_slower_than_mathis():
    assert model.padhye_rate(0.041, 0.02, timeout_s=0.241) == pytest.approx(0.171e6, rel=0.01)
    for loss in (0.005, 0.02, 0.1):
        assert model.padhye_rate(0.041, loss) < model.mathis_rate(0.041, loss)


def test_a_connect_waits_the_first_timeout_when_its_syn_or_the_syn_ack_is_lost():
    assert model.slow_connect_chance(0.02) == pytest.approx(0.0396)
    assert model.slow_connect_chance(0) == 0 and model.slow_connect_chance(1) == 1


def test_nagle_stalls_for_the_delayed_ack_and_one_round_trip_more():
    assert model.nagle_stall_ms(0.03) == pytest.approx(40.03) and model.nagle_stall_ms(40) == 80


def test_the_binomial_range_leaves_out_at_most_its_tail_each_side():
    count, chance, tail = 100, model.slow_connect_chance(0.02), 1e-5
    fewest, most = model.binomial_range(count, chance, tail)
    def p(k):
        return math.comb(count, k) * chance ** k * (1 - chance) ** (count - k)
    assert sum(p(k) for k in range(fewest)) <= tail < sum(p(k) for k in range(fewest + 1))
    assert sum(p(k) for k in range(most + 1, count + 1)) <= tail < sum(p(k) for k in range(most, count + 1))
    # Rare successes: a normal curve's three standard deviations (9.8) leave 0.6 % above; the exact range does not.
    assert fewest == 0 and most > 9.8


def test_the_binomial_range_is_the_whole_of_a_certain_chance():
    assert model.binomial_range(50, 0.0, 1e-5) == (0, 0) and model.binomial_range(50, 1.0, 1e-5) == (50, 50)
