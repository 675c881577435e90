"""Exercise machinery in the learntools style.

Declarative classes whose check() says why, bound to q1, q2, ... in one call.
"""

import math
import numbers
import os
import re
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

CORRECT = "correct"
INCORRECT = "incorrect"
NOT_ATTEMPTED = "not attempted"

# Either switch turns solutions off: the variable for a whole student install, the
# call for one notebook (tools/make_student.py inserts it into the setup cell).
DISABLE_ENV = "IOLAB_SOLUTIONS_DISABLED"
_disabled_by_call = False


def disable_solutions() -> None:
    """Make every solution() in this process say that solutions are disabled."""
    global _disabled_by_call
    _disabled_by_call = True


def solutions_disabled() -> bool:
    """True in a student copy: set by disable_solutions() or IOLAB_SOLUTIONS_DISABLED=1."""
    return _disabled_by_call or os.environ.get(DISABLE_ENV, "").strip().lower() not in ("", "0", "false", "no")


class Status(str):
    """A status string that a notebook does not echo: check() has already printed the verdict."""

    def _ipython_display_(self) -> None:
        pass


def is_missing(answer: object) -> bool:
    return answer is None or answer is Ellipsis


class Exercise:
    """One question. Subclasses set the class attributes and implement judge()."""

    prompt = ""  # the question, for listings and error messages
    hint_text: str | Sequence[str] = "No hint for this one: re-read the cell above."  # a string or a list of successive hints
    solution_text = "No written solution for this one."
    not_attempted_text = "set the answer variable (it is None) and run the check again."
    correct_text = ""  # optional: what a right answer should make the student notice

    def __init__(self) -> None:
        self.name = type(self).__name__.lower()
        self.status = Status(NOT_ATTEMPTED)
        self.message: str | None = None
        self._hints_shown = 0

    def judge(self, answer: Any, **context: Any) -> tuple[bool, str]:
        """Return (ok, explanation) for an answer that is not missing."""
        raise NotImplementedError

    def check(self, answer: Any = None, **context: Any) -> Status:
        """Print Correct / Incorrect: <why> / Not attempted: <what to do>, keep and return the status."""
        if is_missing(answer):
            status, message = NOT_ATTEMPTED, f"Not attempted: {self.not_attempted_text}"
        else:
            ok, explanation = self.judge(answer, **context)
            status = CORRECT if ok else INCORRECT
            message = ("Correct" if ok else "Incorrect") + (f": {explanation}" if explanation else "")
        self.status, self.message = Status(status), message
        print(message)
        return self.status

    def hint(self, number: int | None = None) -> None:
        """Print the next hint (or hint `number`, counting from 1)."""
        hints = [self.hint_text] if isinstance(self.hint_text, str) else list(self.hint_text)
        index = (number - 1) if number else min(self._hints_shown, len(hints) - 1)
        index = max(0, min(index, len(hints) - 1))
        self._hints_shown = index + 1
        label = f"Hint {index + 1}/{len(hints)}" if len(hints) > 1 else "Hint"
        print(f"{label}: {hints[index]}")

    def solution(self) -> None:
        if solutions_disabled():
            print("Solutions are disabled in this copy of the lab. Try hint(), or ask your instructor.")
        else:
            print(f"Solution: {self.solution_text}")

    def reset(self) -> None:
        self.status, self.message = Status(NOT_ATTEMPTED), None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}: {self.status}>"


def _format(value: object, unit: str = "") -> str:
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return f"{text} {unit}".rstrip()


def _close(a: float, b: float, rel_tol: float, abs_tol: float) -> bool:
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)


def _as_number(answer: object) -> float | None:
    """A real number, or None for strings, booleans and other things that only look like one."""
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return None
    value = float(answer)
    return value if math.isfinite(value) else None


class NumberExercise(Exercise):
    """A number within a tolerance of `expected` (or of what expected() computes).

    `mistakes` maps answers students are likely to give to the reason each is wrong;
    it is checked with the same tolerance, so a near miss of a known mistake is
    explained as that mistake.
    """

    expected: Any = None  # a number, or override expected() to compute it
    rel_tol = 0.05
    abs_tol = 0.0
    unit = ""
    mistakes: dict[float, str] = {}  # {likely wrong answer: "why it is wrong"}
    # What a wrong answer with no known mistake hears; a lesson sets its own words.
    too_high_text = "more than the answer: a better guess is lower."
    too_low_text = "less than the answer: a better guess is higher."

    def expected_value(self) -> float:
        value: float = self.expected() if callable(self.expected) else self.expected  # a number, however it is given
        return value

    def judge(self, answer: Any, **context: Any) -> tuple[bool, str]:
        value = _as_number(answer)
        if value is None:
            return False, f"the answer should be a number{' in ' + self.unit if self.unit else ''}, got {answer!r}."
        expected = self.expected_value()
        if _close(value, expected, self.rel_tol, self.abs_tol):
            return True, self.correct_text
        for mistake, reason in self.mistakes.items():
            if _close(value, mistake, self.rel_tol, self.abs_tol):
                return False, f"{_format(answer, self.unit)} {reason}"
        direction = self.too_high_text if value > expected else self.too_low_text
        return False, f"{_format(answer, self.unit)}: {direction}"


def _normalise(choice: object) -> object:
    return re.sub(r"\s+", "", choice).lower() if isinstance(choice, str) else choice


class ChoiceExercise(Exercise):
    """One of a fixed set of choices. `choices` maps each choice to why it is wrong (ignored for the right one)."""

    # {choice: "why this choice is wrong"}; a list works when there is nothing to say
    choices: dict[str, str] | Sequence[str] = {}
    correct: str | None = None

    def judge(self, answer: Any, **context: Any) -> tuple[bool, str]:
        choices = self.choices if isinstance(self.choices, dict) else dict.fromkeys(self.choices, "")
        by_key = {_normalise(choice): choice for choice in choices}
        choice = by_key.get(_normalise(answer))
        if choice is None:
            listed = ", ".join(repr(c) for c in choices)
            return False, f"{answer!r} is not one of the choices: {listed}."
        if choice == self.correct:
            return True, self.correct_text
        return False, f"{choice!r}: {choices[choice] or 'not this one.'}"


class PredictThenMeasure(Exercise):
    """The student predicts a number, then check() runs the experiment and compares.

    The lesson supplies the experiment: override measure(), or pass `measure=` to
    the constructor (or assign `exercise.measure = fn`). Keyword arguments given
    to check() go to the measure function, so a notebook can pass its own sizes.
    """

    rel_tol = 0.15
    abs_tol = 0.0
    unit = ""
    quantity = "the measurement"
    off_text = ""  # appended to a wrong prediction: what to reconsider

    def __init__(self, measure: Callable[..., float] | None = None) -> None:
        super().__init__()
        if measure is not None:
            self.measure = measure  # type: ignore[method-assign]  # an instance's own experiment
        self.measured: float | None = None
        self.prediction: float | None = None
        # What this run's machine added that no prediction could know (a peer the
        # scheduler ran late, say): measure() may set it, in the measurement's unit.
        self.allowance = 0.0
        self.allowance_text = ""

    def measure(self, **context: Any) -> float:
        raise NotImplementedError("this exercise needs a measure function: pass measure= or override measure()")

    def judge(self, answer: Any, **context: Any) -> tuple[bool, str]:
        value = _as_number(answer)
        if value is None:
            return False, f"the prediction should be a number{' in ' + self.unit if self.unit else ''}, got {answer!r}."
        self.prediction = value
        self.allowance, self.allowance_text = 0.0, ""
        self.measured = measured = float(self.measure(**context))
        both = f"you predicted {_format(value, self.unit)}, {self.quantity} measured {_format(measured, self.unit)}"
        tolerance = f"{self.rel_tol:.0%}" if self.rel_tol else _format(self.abs_tol, self.unit)
        if self.allowance > 0:
            tolerance += f", plus {_format(self.allowance, self.unit)} {self.allowance_text}".rstrip()
        if _close(value, measured, self.rel_tol, self.abs_tol) or abs(value - measured) <= max(
            self.rel_tol * abs(measured), self.abs_tol
        ) + self.allowance:
            return True, f"{both} (within {tolerance}). {self.correct_text}".rstrip()
        off = "high" if value > measured else "low"
        return False, f"{both}: more than {tolerance} too {off}. {self.off_text}".rstrip()


def statuses_of(namespace: MutableMapping[str, Any]) -> dict[str, str]:
    """{"q1": status, ...} for the exercises bound to q1, q2, ... in a lesson module's namespace."""
    found = {
        name: value
        for name, value in namespace.items()
        if re.fullmatch(r"q\d+", name) and isinstance(value, Exercise)
    }
    for name, exercise in found.items():
        exercise.name = name
    return {name: str(found[name].status) for name in sorted(found, key=lambda n: int(n[1:]))}


def bind(namespace: MutableMapping[str, Any]) -> None:
    """Bind a lesson's exercises as q1, q2, ... in the order its classes are defined, and give it statuses().

    A lesson's exercises module ends with `checks.bind(globals())`: defining the
    classes in the order the notebook asks them is the whole numbering.
    """
    module = namespace["__name__"]
    defined = [
        value
        for value in namespace.values()
        if isinstance(value, type) and issubclass(value, Exercise) and value.__module__ == module
    ]
    for number, kind in enumerate(defined, 1):
        namespace[f"q{number}"] = kind()
    namespace["statuses"] = lambda: statuses_of(namespace)
    statuses_of(namespace)  # names each exercise q1, q2, ... at once, not only when statuses() is first called
