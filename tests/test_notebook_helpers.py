"""The small modules lessons lean on.

Parameter checks, showing source, tables, the environment report, timelines.
"""

import pytest

from iolab import environment, params, show, tables, theory
from iolab.lessons.ordering import view as ordering_view
from iolab.load import Sample


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


def test_server_source_shows_named_handlers_from_the_running_file():
    code = show.server_source("tornado_app", "SyncSleep", "AsyncSleep").data
    assert "time.sleep" in code and "await asyncio.sleep" in code and "class Instant" not in code
    with pytest.raises(ValueError, match="no top-level"):
        show.server_source("tornado_app", "NoSuchHandler")


def test_tables_format_numbers_and_gaps():
    table = tables.markdown(["a", "b"], [[1.23456, None], [12345.6, float("nan")]]).data
    assert "| 1.23 | – |" in table and "| 12,346 | – |" in table


def test_environment_report_has_what_lesson_00_shows():
    found = environment.report()
    assert found["cores"] >= 1 and found["rlimit_nofile"]["soft"] > 0
    assert found["versions"]["tornado"] and set(found["tools"]) == set(environment.OPTIONAL_TOOLS)
    assert environment.problems(found) == []
    broken = {**found, "rlimit_nofile": {"soft": 64, "hard": 64}}
    assert any("RLIMIT_NOFILE is 64" in problem for problem in environment.problems(broken))


def test_gantt_draws_one_panel_per_order():
    runs = {"A,C": [Sample(0, 1.0, 200, 1, None, 0), Sample(0.1, 1.01, 200, 1, None, 1)]}
    image = ordering_view.request_timelines(runs, 1000, {"A,C": "C waits"})
    assert image.data.startswith(b"\x89PNG")


def test_one_error_type_for_every_bad_parameter():
    from iolab import load

    assert issubclass(load.LoadParameterError, params.ParameterError)
    with pytest.raises(params.ParameterError, match="throughput must be more than 0"):
        theory.response_time(4, 0)
    with pytest.raises(load.LoadParameterError, match="rate_rps must be between"):
        load.LoadSpec("http://127.0.0.1:9/", loop="open", rate_rps=-1).validate()
