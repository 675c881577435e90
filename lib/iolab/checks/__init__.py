"""Self-checking exercises: `from iolab.checks import lesson01 as ex; ex.q1.check(answer)`."""

from .core import (
    CORRECT,
    INCORRECT,
    NOT_ATTEMPTED,
    ChoiceExercise,
    Exercise,
    NumberExercise,
    PredictThenMeasure,
    disable_solutions,
    solutions_disabled,
    statuses_of,
)
