"""params: one validator and one error type, whose message names the parameter, its value and the range."""

import pytest

from iolab import params, theory


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: params.check_range("requests", 0, 1, 2000), ["requests must be between 1 and 2000", "got 0"]),
        (lambda: params.check_range("requests", 2.5, 1, 2000), ["a whole number"]),
        (lambda: params.check_range("requests", True, 1, 2000), ["requests", "got True"]),
        (lambda: params.check_range("timeout_s", 0, 0, 60, integer=False, above=True), ["more than 0 and at most 60"]),
        (lambda: params.check_choice("client", "curl", ("async", "sync")),
         ["client must be one of", "'curl'", "['async', 'sync']"]),
        (lambda: params.check_flag("quick", "yes"), ["quick", "'yes'", "True or False"]),
        (lambda: params.check_common(False, False, 42), ["results_path", "42"]),
    ],
)
def test_bad_parameters_name_parameter_value_and_range(call, words):
    with pytest.raises(params.ParameterError) as raised:
        call()
    for word in words:
        assert word in str(raised.value)


def test_good_parameters_pass_through():
    assert params.check_range("delay_ms", 0.5, 0, 1, integer=False) == 0.5
    params.check_common(True, False, "/tmp/x.json")


def test_one_error_type_for_every_bad_parameter():
    from iolab import load

    assert issubclass(load.LoadParameterError, params.ParameterError)
    with pytest.raises(params.ParameterError, match="throughput must be more than 0"):
        theory.response_time(4, 0)
    with pytest.raises(load.LoadParameterError, match="rate_rps must be between"):
        load.LoadSpec("http://127.0.0.1:9/", kind="open", rate_rps=-1).validate()
