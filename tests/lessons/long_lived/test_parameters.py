"""Lesson 12's parameters: defaults pass, bad values are named.

The defaults pass, a bad value and a size the machine cannot hold are named.
"""

import pytest

from iolab.lessons.long_lived import parameters
from iolab.params import ParameterError

ROOMY = parameters.Limits(files_soft=20_000, files_hard=20_000, memory_limit_bytes=None,
                          memory_available_bytes=16 * 2**30, cpus=2.0)


def test_the_defaults_pass_and_quick_shrinks_them():
    full = parameters.Plan.from_cell(parameters.DEFAULTS, ROOMY)
    quick = parameters.Plan.from_cell(parameters.DEFAULTS | {"quick": True}, ROOMY)
    assert full.subscribers == 10_000 and quick.subscribers == 400
    assert quick.memory_steps() == [80, 160, 240, 320, 400]


def test_a_value_out_of_range_is_named():
    with pytest.raises(ParameterError, match="repeats must be between 2 and 7.*got 1"):
        parameters.Plan.from_cell(parameters.DEFAULTS | {"repeats": 1}, ROOMY)


def test_more_subscribers_than_open_files_are_refused_with_the_limit():
    tight = parameters.Limits(1024, 4096, None, 16 * 2**30, 1.0)
    with pytest.raises(ParameterError, match="hard RLIMIT_NOFILE is 4096.*at most 3996"):
        parameters.Plan.from_cell(parameters.DEFAULTS, tight)


def test_more_compressed_subscribers_than_memory_are_refused():
    small = parameters.Limits(20_000, 20_000, 2**30, 2**30, 1.0)
    with pytest.raises(ParameterError, match="compressed_subscribers = 10000 could take"):
        parameters.Plan.from_cell(parameters.DEFAULTS | {"compressed_subscribers": 10_000}, small)


def test_the_machines_limits_are_read():
    limits = parameters.machine_limits()
    assert limits.files_soft == limits.files_hard and limits.cpus > 0
