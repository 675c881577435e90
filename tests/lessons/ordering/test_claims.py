"""Lesson 03's claims on plain data: the claims of a run as theory draws it hold, a broken one is named with its values."""

import pytest

from iolab.claims import ClaimsFailed
from iolab.lessons.ordering import claims, parameters
from iolab.neighbours import Neighbours
from iolab.params import ParameterError

DELAY, GAP, C_ALONE = 400, 40, 2


def ideal_results(neighbours=None):
    """A run as the lesson's theory draws it: sleepers answer one delay after they were read, C at once unless held."""
    def order(first_done, second_sent, second_done):
        return {"first_done_ms": first_done, "second_done_ms": second_done, "second_sent_ms": second_sent}
    orders = {
        "C,A": order(C_ALONE, GAP, GAP + DELAY + 1), "C,B": order(C_ALONE, GAP, GAP + DELAY + 1),
        "A,C": order(DELAY + 1, GAP, DELAY + 2), "B,C": order(DELAY + 1, GAP, GAP + C_ALONE),
        "D,C": order(DELAY + 3, GAP, DELAY + 4), "A′,C": order(DELAY + 1, GAP, GAP + C_ALONE),
    }
    abc = {"A": DELAY + 1, "B": 2 * DELAY + 2, "C": DELAY + 2}
    plan = parameters.Plan(DELAY, GAP, quick=False)
    return claims.results(plan, orders=orders, abc_done_ms=abc, threaded_c_ms=GAP + C_ALONE, exercises={"q1": "correct"},
                          neighbours=neighbours)


def test_the_claims_of_a_run_as_theory_draws_it_hold(capsys):
    assert claims.check_claims(ideal_results()) == 18
    out = capsys.readouterr().out
    assert "✓ A,C: C waits for A: 402 ms within (222, ∞) ms, nearer the predicted 401 than 42" in out
    assert "All 18 of this lesson's claims hold on this run." in out


def test_c_answered_at_once_behind_a_blocking_sleep_fails_and_names_its_figures(capsys):
    results = ideal_results()
    results["orders"]["A,C"]["second_done_ms"] = GAP + C_ALONE
    results["orders"]["B,C"]["first_done_ms"] = DELAY - 10  # a timer that fired early
    with pytest.raises(ClaimsFailed) as failure:
        claims.check_claims(results)
    assert "✗ A,C: C waits for A" in capsys.readouterr().out
    assert "A,C: C waits for A: measured 42 ms, predicted 401 ms, the opposite 42 ms" in str(failure.value)
    assert "B,C: B answered 390.000 ms after it was sent, under its 400 ms" in str(failure.value)
    assert "2 of 18 claims failed" in str(failure.value)


def test_each_runs_neighbours_are_kept_and_a_busy_run_is_still_judged(capsys):
    # Every claim here sits between two predictions, with one side open: no margin a neighbour could fill, so others
    # that held the CPUs most of the run excuse nothing (iolab.claims.others_explain), and the claim is judged.
    busy = Neighbours(1.0, "host", None, 0.0, 0.0, 0, 0.0, 0.6)
    results = ideal_results({"A,C": busy, "threaded A,C": busy})
    assert results["neighbours"]["A,C"]["others_share"] == 0.6 and set(results["neighbours"]) == {"A,C", "threaded A,C"}
    results["orders"]["A,C"]["first_done_ms"] = 2.5 * DELAY  # A slept two and a half delays
    results["orders"]["A,C"]["second_done_ms"] = 2.5 * DELAY + 1
    with pytest.raises(ClaimsFailed, match="1 of 18 claims failed"):
        claims.check_claims(results)
    assert "✗ A,C: A slept one delay" in capsys.readouterr().out


def test_parameters_are_refused_by_name_and_shrunk_when_quick():
    def plan(**values):
        found = parameters.Plan.from_cell({**parameters.DEFAULTS, **values})
        return found.delay_ms, found.gap_ms

    assert plan(delay_ms=1000, gap_ms=100, quick=True) == (400, 40)
    assert plan(delay_ms=1000, gap_ms=100) == (1000, 100)
    with pytest.raises(ParameterError, match="gap_ms must be between 10 and 500"):
        plan(delay_ms=1000, gap_ms=600)
