"""The exercise kinds in iolab.checks.

Right, wrong and missing answers, hints, disabled solutions.
"""

import pytest

from iolab import checks as core


class Throughput(core.NumberExercise):
    prompt = "Throughput of 25 customers on 0.5 s timers?"
    expected = 50
    unit = "req/s"
    mistakes = {2: "is what a single synchronous worker gives."}
    hint_text = ["Little's law.", "L = lambda * W."]
    solution_text = "25 / 0.5 s = 50 req/s."


class ComputedThroughput(core.NumberExercise):
    concurrency, delay_s = 40, 1.0
    rel_tol, abs_tol = 0.0, 0.5

    def expected(self):
        return self.concurrency / self.delay_s


class WhichOrder(core.ChoiceExercise):
    choices = {"A,C": "", "C,A": "C goes first, so it never waits.", "B,C": "B hands the loop back while it waits."}
    correct = "A,C"


class PredictSleep(core.PredictThenMeasure):
    rel_tol = 0.10
    unit = "ms"
    quantity = "the sleep"

    def measure(self, ms=100):
        return ms * 1.02  # a stand-in experiment: the test controls what it "measures"


@pytest.fixture(autouse=True)
def solutions_enabled(monkeypatch):
    monkeypatch.delenv(core.DISABLE_ENV, raising=False)
    monkeypatch.setattr(core, "_disabled_by_call", False)


def test_number_right(capsys):
    exercise = Throughput()
    assert exercise.check(50) == "correct"
    assert exercise.check(51.5) == "correct"  # within 5%
    assert capsys.readouterr().out.startswith("Correct")
    assert exercise.status == core.CORRECT


def test_number_wrong_explains_known_mistake(capsys):
    exercise = Throughput()
    assert exercise.check(2) == "incorrect"
    out = capsys.readouterr().out
    assert out.startswith("Incorrect: 2 req/s is what a single synchronous worker gives.")
    assert "50" not in out  # a wrong answer teaches; it does not give the answer away


def test_number_wrong_says_which_way(capsys):
    exercise = Throughput()
    exercise.check(80)
    assert "more than" in capsys.readouterr().out
    exercise.check(30)
    assert "better" in capsys.readouterr().out
    assert exercise.status == core.INCORRECT


@pytest.mark.parametrize("answer", ["50", True, float("nan"), [50]])
def test_number_rejects_non_numbers(answer, capsys):
    assert Throughput().check(answer) == "incorrect"
    assert "should be a number in req/s" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [None, ...])
def test_number_missing(answer, capsys):
    exercise = Throughput()
    exercise.check(51)
    assert exercise.check(answer) == "not attempted"
    assert capsys.readouterr().out.splitlines()[-1].startswith("Not attempted: ")
    assert exercise.status == core.NOT_ATTEMPTED


def test_number_expected_method():
    exercise = ComputedThroughput()
    assert exercise.check(40.4) == "correct"
    assert exercise.check(39) == "incorrect"
    exercise.concurrency = 20
    assert exercise.check(20) == "correct"


def test_choice_right_ignores_case_and_spaces(capsys):
    assert WhichOrder().check(" a, c ") == "correct"
    assert capsys.readouterr().out.strip() == "Correct"


def test_choice_wrong_gives_the_choice_reason(capsys):
    assert WhichOrder().check("C,A") == "incorrect"
    assert capsys.readouterr().out.strip() == "Incorrect: 'C,A': C goes first, so it never waits."


def test_choice_unknown_lists_choices(capsys):
    assert WhichOrder().check("A then C") == "incorrect"
    assert "is not one of the choices: 'A,C', 'C,A', 'B,C'" in capsys.readouterr().out


def test_choice_missing():
    assert WhichOrder().check() == "not attempted"


def test_predict_then_measure_right_reports_both_numbers(capsys):
    exercise = PredictSleep()
    assert exercise.check(200, ms=200) == "correct"
    out = capsys.readouterr().out
    assert "you predicted 200 ms, the sleep measured 204 ms (within 10%)" in out
    assert exercise.measured == pytest.approx(204)


def test_predict_then_measure_wrong_reports_both_numbers(capsys):
    exercise = PredictSleep()
    assert exercise.check(100, ms=200) == "incorrect"
    out = capsys.readouterr().out
    assert out.startswith("Incorrect: you predicted 100 ms, the sleep measured 204 ms")
    assert "too low" in out


def test_predict_then_measure_missing_does_not_measure():
    calls = []
    exercise = core.PredictThenMeasure(measure=lambda: calls.append(1) or 1.0)
    assert exercise.check(None) == "not attempted"
    assert calls == []
    assert exercise.check(1.0) == "correct"
    assert calls == [1]


def test_hints_step_through(capsys):
    exercise = Throughput()
    exercise.hint()
    exercise.hint()
    exercise.hint()
    assert capsys.readouterr().out.splitlines() == [
        "Hint 1/2: Little's law.",
        "Hint 2/2: L = lambda * W.",
        "Hint 2/2: L = lambda * W.",
    ]
    exercise.hint(1)
    assert capsys.readouterr().out.startswith("Hint 1/2")


def test_solution_shown_by_default(capsys):
    Throughput().solution()
    assert capsys.readouterr().out.strip() == "Solution: 25 / 0.5 s = 50 req/s."


def test_solution_disabled_by_call(capsys):
    core.disable_solutions()
    assert core.solutions_disabled()
    Throughput().solution()
    out = capsys.readouterr().out
    assert "disabled in this copy" in out
    assert "50" not in out


@pytest.mark.parametrize("value, disabled", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_solution_disabled_by_environment(monkeypatch, capsys, value, disabled):
    monkeypatch.setenv(core.DISABLE_ENV, value)
    assert core.solutions_disabled() is disabled
    Throughput().solution()
    assert ("disabled in this copy" in capsys.readouterr().out) is disabled


def test_statuses_of_names_and_orders_exercises():
    namespace = {"q10": Throughput(), "q2": WhichOrder(), "q1": Throughput(), "helper": Throughput(), "qx": 3}
    namespace["q1"].check(50)
    namespace["q2"].check("C,A")
    assert list(core.statuses_of(namespace).items()) == [
        ("q1", "correct"),
        ("q2", "incorrect"),
        ("q10", "not attempted"),
    ]
    assert namespace["q2"].name == "q2"


def test_status_is_a_plain_string_for_json():
    import json

    status = Throughput().check(50)
    assert json.loads(json.dumps({"q1": status})) == {"q1": "correct"}


def test_an_allowance_measured_on_the_run_widens_the_tolerance_by_that_much_only():
    def late_by(late):
        def measure():
            exercise.allowance, exercise.allowance_text = late, "(the peer was late)"
            return 100.0 + late
        return measure

    exercise = core.PredictThenMeasure()
    exercise.rel_tol = 0.1
    exercise.measure = late_by(40.0)
    status = exercise.check(100.0)
    assert status == "correct" and "plus 40" in exercise.message
    assert exercise.check(140.0 + 14.0 + 40.0 + 1.0) == "incorrect"  # beyond 10% of 140 plus the 40 allowed
    exercise.measure = lambda: 140.0  # no allowance this time: the last run's is not carried over
    assert exercise.check(100.0) == "incorrect" and exercise.allowance == 0.0
