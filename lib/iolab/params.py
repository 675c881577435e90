"""Validation for a notebook's parameters cell.

Every failure names the parameter, its value and what is allowed.
"""

import json
import numbers
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
Number = TypeVar("Number", bound=float)

# IOLAB_QUICK=1 makes every lesson run at its small sizes: for a class demo, and for the browser test.
QUICK_ENV = "IOLAB_QUICK"


class ParameterError(ValueError):
    """A parameter (of a notebook, or of a call into the lab) outside what it allows; the text names both."""


def _bounds(low: float | None, high: float | None, above: bool) -> str:
    if low is not None and high is not None:
        return f"more than {low} and at most {high}" if above else f"between {low} and {high}"
    if low is not None:
        return f"more than {low}" if above else f"at least {low}"
    return f"at most {high}"


def check_range(
    name: str,
    value: Number,
    low: float | None = None,
    high: float | None = None,
    *,
    integer: bool = True,
    above: bool = False,
    error: type[ParameterError] = ParameterError,
) -> Number:
    """`value` must be a number (a whole one if `integer`) from `low` to `high` inclusive, or more than `low` if
    `above`; None is no bound. Returns it, or raises `error` (ParameterError or a subclass) naming name, value and range."""
    valid_type = numbers.Integral if integer else numbers.Real
    valid = not isinstance(value, bool) and isinstance(value, valid_type)
    if valid and low is not None:
        valid = value > low if above else value >= low
    if valid and high is not None:
        valid = value <= high
    if not valid:
        kind = ", a whole number" if integer else ""
        raise error(f"{name} must be {_bounds(low, high, above)}{kind}, got {value!r}")
    return value


def check_choice(name: str, value: T, choices: Collection[Any], error: type[ParameterError] = ParameterError) -> T:
    """`value` must be one of `choices`; returns it, or raises `error` naming name, value and choices."""
    if value not in choices:
        raise error(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_flag(name: str, value: T) -> T:
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be True or False, got {value!r}")
    return value


def quick_from_environment() -> bool:
    """True when IOLAB_QUICK asks every lesson for its small sizes."""
    return os.environ.get(QUICK_ENV, "").strip().lower() not in ("", "0", "false", "no")


def check_common(quick: bool, solutions: bool, results_path: str | None) -> bool:
    """The three parameters every lesson has; returns `quick`, turned on by IOLAB_QUICK=1 as well."""
    check_flag("quick", quick)
    check_flag("solutions", solutions)
    if results_path is not None and not isinstance(results_path, str):
        raise ParameterError(f"results_path must be None or a file path, got {results_path!r}")
    return quick or quick_from_environment()


def cell_values(
    cell: Mapping[str, Any],
    ranges: Mapping[str, tuple[float | None, float | None]],
    seconds: Mapping[str, tuple[float | None, float | None]],
    quick_sizes: Mapping[str, float],
    cap: bool = False,
) -> tuple[bool, dict[str, Any]]:
    """(quick, values): the parameters cell's values named in `ranges` and `seconds`, quick mode's sizes where it is
    on (with `cap`, no larger than the cell's own), each checked against its (low, high); seconds may be fractions."""
    quick = check_common(cell["quick"], cell["solutions"], cell["results_path"])
    values = {name: cell[name] for name in [*ranges, *seconds]}
    if quick:
        values.update({name: min(values[name], size) if cap else size for name, size in quick_sizes.items()})
    for name, (low, high) in ranges.items():
        check_range(name, values[name], low, high)
    for name, (low, high) in seconds.items():
        check_range(name, values[name], low, high, integer=False)
    return quick, values


def write_results(results_path: str | None, results: T, default: Callable[[Any], Any] | None = None) -> T:
    """Write a lesson's `results` as JSON to the parameters cell's `results_path`, when it names one; return them.

    `default` turns what JSON cannot hold (a numpy float, a path) into what it can.
    """
    if results_path:
        with open(results_path, "w") as out:
            json.dump(results, out, indent=2, default=default)
    return results


@dataclass(frozen=True, kw_only=True)
class LessonPlan:
    """What every lesson's Plan holds besides its sizes: quick mode, the answers filled in, where the results go.

    A lesson's Plan subclasses it with its sizes as fields, and builds itself as cls(**values, **cls.flags(cell,
    quick))."""

    quick: bool = False
    solutions: bool = False
    results_path: str | None = None

    @staticmethod
    def flags(cell: Mapping[str, Any], quick: bool) -> dict[str, Any]:
        """The three fields every plan takes from the parameters cell, with quick as cell_values read it."""
        return {"quick": quick, "solutions": cell["solutions"], "results_path": cell["results_path"]}


def capped(values: dict[str, Any], most: Mapping[str, Any]) -> dict[str, Any]:
    """`values` with each size named in `most` lowered to it: quick mode keeps a smaller size the cell asked for."""
    return values | {name: min(values[name], size) for name, size in most.items()}
