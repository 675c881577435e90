"""Validation for a notebook's parameters cell: every failure names the parameter, its value and what is allowed."""

import numbers
import os

# IOLAB_QUICK=1 makes every lesson run at its small sizes: for a class demo, and for the browser test.
QUICK_ENV = "IOLAB_QUICK"


class ParameterError(ValueError):
    """A notebook parameter outside its allowed range."""


def check_range(name, value, low, high, integer=True):
    """`value` must be a number (a whole one if `integer`) from `low` to `high` inclusive."""
    kind = "a whole number" if integer else "a number"
    valid_type = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, valid_type) or not low <= value <= high:
        raise ParameterError(f"parameter {name}={value!r} is out of range: it must be {kind} from {low} to {high}")
    return value


def check_choice(name, value, choices):
    if value not in choices:
        raise ParameterError(f"parameter {name}={value!r} is not allowed: it must be one of {list(choices)}")
    return value


def check_flag(name, value):
    if not isinstance(value, bool):
        raise ParameterError(f"parameter {name}={value!r} must be True or False")
    return value


def quick_from_environment():
    """True when IOLAB_QUICK asks every lesson for its small sizes."""
    return os.environ.get(QUICK_ENV, "").strip().lower() not in ("", "0", "false", "no")


def check_common(quick, solutions, results_path):
    """The three parameters every lesson has; returns `quick`, turned on by IOLAB_QUICK=1 as well."""
    check_flag("quick", quick)
    check_flag("solutions", solutions)
    if results_path is not None and not isinstance(results_path, str):
        raise ParameterError(f"parameter results_path={results_path!r} must be None or a file path")
    return quick or quick_from_environment()
