"""Lesson 04's claims on plain data: the claims of a run as Stevens draws it hold, a broken one is named with its values."""

import pytest

from iolab import neighbours
from iolab.claims import ClaimsFailed
from iolab.lessons.io_models import claims, parameters, view
from iolab.lessons.io_models.trace import Event, ModelRun
from iolab.neighbours import Neighbours
from iolab.params import ParameterError

DELAY, PEERS = 100.0, 4


def model(name, cpu_ms=0.2, queued_ms=0.0, calls=1, **notes):
    """A run that waited from asking (at 0.05 ms) until the peer's data (sent at the delay, delivered 0.1 ms later)."""
    events = [Event(t, "app", "eagain") for t in (1.0, 50.0, 99.9)] if name == "nonblocking" else []
    return ModelRun(model=name, delay_ms=DELAY, wait_ms=DELAY, asked_ms=0.05, ready_ms=DELAY + 0.15, copy_ms=0.01,
                    cpu_ms=cpu_ms, work_ms=0.0, queued_ms=queued_ms, calls=calls, wakeups=1,
                    sent_ms=[DELAY + 0.05] * (PEERS if name == "multiplexing" else 1), blocks={}, events=events,
                    spans=[], notes={"peers": PEERS, **notes}, last_sent_ms=DELAY, last_delivered_ms=DELAY + 0.1)


def run_figures():
    runs = {"blocking": model("blocking"), "nonblocking": model("nonblocking", cpu_ms=99.0, wasted_calls=40_000),
            "multiplexing": model("multiplexing"), "signal": model("signal", signal_ms=DELAY + 0.1, work_slices=900),
            "async": model("async", work_slices=800)}
    by_mechanism = {name: model("multiplexing") for name in ("select", "poll", "epoll")}
    # select grows 40 µs per 1000 descriptors and stops below 1024; epoll stays at 0.5 µs; both wobble a little.
    rows = [{"fds": n, "select_us": 0.5 + 0.04 * n + (0.1 if i % 2 else -0.1) if n < 1024 else None,
             "epoll_us": 0.5 + (0.02 if i % 2 else -0.02)} for i, n in enumerate((1, 64, 256, 512, 896, 2000, 4000))]
    limit = {"fd": 1024, "select_error": claims.SELECT_ERROR}
    return runs, by_mechanism, rows, limit, 2.0, DELAY, PEERS


def check(runs, by_mechanism, rows, limit, cost_per_eagain_us, delay_ms, peers):
    plan = parameters.Plan.from_cell({**parameters.DEFAULTS, "delay_ms": int(delay_ms), "peers": peers})
    found = claims.results(plan, model_runs=runs, by_mechanism=by_mechanism, scaling_rows=rows, limit=limit,
                           cost_per_eagain_us=cost_per_eagain_us, exercises={})
    return claims.check_claims(found)


def test_the_claims_of_a_run_as_stevens_draws_it_hold(capsys):
    assert check(*run_figures()) == 42
    out = capsys.readouterr().out
    assert "✓ blocking: CPU burnt while asleep (ms): 0.20 within (-∞, 50.00), nearer the predicted 0.00 than 100.00" in out
    assert "All 42 of this lesson's claims hold on this run." in out


def test_a_signal_driven_model_that_cannot_run_here_drops_its_eight_claims():
    runs, *rest = run_figures()
    runs["signal"] = None
    assert check(runs, *rest) == 34


def test_a_sleeper_that_burnt_the_wait_fails_and_names_its_figures(capsys):
    runs, by_mechanism, rows, limit, *rest = run_figures()
    runs["blocking"].cpu_ms = 90.0
    limit["select_error"] = None  # select() took a descriptor past FD_SETSIZE
    with pytest.raises(ClaimsFailed) as failure:
        check(runs, by_mechanism, rows, limit, *rest)
    assert "✗ blocking: CPU burnt while asleep (ms)" in capsys.readouterr().out
    assert "blocking: CPU burnt while asleep (ms): measured 90.00, predicted 0.00, the opposite 100.00" in str(failure.value)
    assert "select() on descriptor 1024 said None" in str(failure.value)


def test_a_wait_others_stretched_is_excused_with_their_figures(capsys):
    runs, *rest = run_figures()
    runs["blocking"].wait_ms = 130.0  # 24 % past the latest it may end, 105.1 ms; its band is 2.5 % wide
    runs["blocking"].others = Neighbours(1.0, "host", None, 0.0, 0.0, 0, 0.0, 0.4)  # others held 40 %
    assert check(runs, *rest) == 41
    out = capsys.readouterr().out
    assert "⚠ blocking: it waited from asking until the data: not judged: blocking: waited 130.0 of 100.1 ms" in out
    assert "others held the CPUs 40% of this run, more than the claim's margin of 3%, enough to explain a miss of 24%" in out


def test_the_same_wait_on_a_quiet_run_still_fails(capsys):
    runs, *rest = run_figures()
    runs["blocking"].wait_ms = 130.0
    runs["blocking"].others = Neighbours(1.0, "host", None, 0.0, 0.0, 0, 0.0, 0.01)
    with pytest.raises(ClaimsFailed) as failure:
        check(runs, *rest)
    assert "✗ blocking: it waited from asking until the data" in capsys.readouterr().out
    assert "1 of 42 claims failed" in str(failure.value)


def test_parameters_are_refused_by_name_and_shrunk_when_quick():
    counts = [1, 16, 5000]

    def plan(**values):
        return parameters.Plan.from_cell({**parameters.DEFAULTS, "fd_counts": counts, **values})

    quick = plan(quick=True)
    assert (quick.delay_ms, quick.repetitions, quick.fd_counts) == (100, 100, [1, 16])
    with pytest.raises(ParameterError, match="mechanism must be one of"):
        plan(mechanism="kqueue")
    with pytest.raises(ParameterError, match="fd_counts=\\[1\\] must be a list of at least two counts"):
        plan(fd_counts=[1])


def test_the_neighbours_column_shows_each_models_share_or_unknown():
    crowded, quiet = model("blocking"), model("async")
    crowded.blocks = quiet.blocks = {"wait": "yes", "copy": "yes"}
    crowded.others = Neighbours(1.0, "host", None, 0.0, 0.0, 0, 0.0, 0.38)
    rows = view.comparison_rows([crowded, quiet])
    assert view.COMPARISON_HEADERS[-1] == neighbours.COLUMN
    assert [row[-1] for row in rows] == ["38%", "unknown"]
    assert [view.others_held(run) for run in (crowded, quiet)] == ["38%", "unknown"]
