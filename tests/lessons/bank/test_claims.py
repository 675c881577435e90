"""Lesson 01's parameters refused by name, and its claims on plain data printed and failed with their values."""

from types import SimpleNamespace

import pytest

from iolab import params
from iolab.claims import ClaimsFailed
from iolab.lessons.bank import claims, parameters
from iolab.lessons.bank import model as bank
from iolab.neighbours import Neighbours

REQUESTS, CONCURRENCY, DELAY_MS, THREADS, CPU_MS = 8, 4, 100, 2, 0.5


class Measured:
    """A bank measured exactly as the model ran it, `rps_scale` times faster: what claims.results reads of one."""

    def __init__(self, run, rps_scale=1.0, others=None):
        self.rps, self.mean_ms, self.counter_ms, self._in_bank = run.rps * rps_scale, run.mean_ms, CPU_MS, run.mean_in_bank()
        self.others = others
        self.summary = SimpleNamespace(errors=0, error_kinds={}, rps=self.rps, demand_ms=CPU_MS, listen_drops=0)

    def mean_in_flight(self):
        return self._in_bank

    def model_band(self, delay_ms, model):
        return 0.02

    def unmodelled_ms(self, model):
        return 1.0

    def sampling_error(self, model):
        return 0.001


def others_held(share):
    """A run's neighbours: others held `share` of its CPUs (their CPU time), nothing else read."""
    return Neighbours(1.0, "host", None, 0.0, 0.0, 0, 0.0, share)


def run(scale=None, others=None):
    predicted = {name: bank.simulate(name, REQUESTS, CONCURRENCY, DELAY_MS, cpu_ms=CPU_MS,
                                     tellers=THREADS if name == "threaded" else None) for name in bank.BANKS}
    measured = {name: Measured(predicted[name], (scale or {}).get(name, 1.0), (others or {}).get(name))
                for name in bank.BANKS}
    theories = {name: SimpleNamespace(lines=lambda: {"optimistic": 1e9, "in step": 1e9, "pessimistic": 0.0})
                for name in bank.BANKS}
    plan = parameters.Plan(REQUESTS, CONCURRENCY, DELAY_MS, THREADS, quick=False)
    found = claims.results(plan, predicted=predicted, measured=measured, theories=theories, exercises={})
    return claims.check_claims(found)


def cell(**values):
    return {**parameters.DEFAULTS, **values}


def test_every_claim_holds_when_the_run_is_the_model(capsys):
    assert run() == 3 * 6 + 1
    printed = capsys.readouterr().out
    assert "All 19 of this lesson's claims hold on this run." in printed
    assert "✓ ticket: the model's throughput meets the measured" in printed


def test_a_claim_that_breaks_names_its_values(capsys):
    with pytest.raises(ClaimsFailed) as failed:
        run({"ticket": 1.2})
    assert "off the measured" in str(failed.value) and "beyond the band 2.00%" in str(failed.value)
    assert "✗ ticket: the model's throughput meets the measured" in capsys.readouterr().out


def test_a_throughput_others_slowed_is_excused_with_their_figures(capsys):
    # 20 % under the model, whose band is 2 %: others holding 30 % of the CPUs can cut a rate so far.
    assert run({"ticket": 0.8}, {"ticket": others_held(0.3)}) == 3 * 6 + 1 - 1
    printed = capsys.readouterr().out
    assert "⚠ ticket: the model's throughput meets the measured" in printed
    assert "others held the CPUs 30% of this run, more than the claim's margin of 2%" in printed
    assert "1 could not be judged: other programs held the CPUs" in printed


def test_the_same_miss_on_a_quiet_run_still_fails(capsys):
    with pytest.raises(ClaimsFailed) as failed:
        run({"ticket": 0.8}, {"ticket": others_held(0.01)})
    assert "+25.00% off the measured" in str(failed.value)
    assert "✗ ticket: the model's throughput meets the measured" in capsys.readouterr().out


def test_parameters_out_of_range_are_refused_by_name():
    with pytest.raises(params.ParameterError, match="threads must be between 1 and 64"):
        parameters.Plan.from_cell(cell(threads=0))
    with pytest.raises(params.ParameterError, match="requests=10 is out of range"):
        parameters.Plan.from_cell(cell(requests=10))
    plan = parameters.Plan.from_cell(cell(quick=True))
    assert (plan.quick, plan.requests, plan.concurrency, plan.delay_ms, plan.threads) == (True, 16, 4, 200, 2)
