"""Lesson 15's SIGTERM under load, against real servers.

Lesson 15's SIGTERM under load, against real servers: without a drain requests in flight fail, with one none.
"""

from iolab.lessons.service import shutdown


def test_tornado_without_and_with_its_drain():
    cut = shutdown.summarize("no drain", shutdown.sigterm_during_load("service_app", 50, 300, 0.5, drain_ms=0),
                             50, 300, 0, (0, 0))
    assert cut["in_flight"] > 0 and 0 < cut["failed"] <= cut["in_flight"]
    drained = shutdown.summarize("drain", shutdown.sigterm_during_load("service_app", 50, 300, 0.5, drain_ms=600),
                                 50, 300, 600, (0, 0))
    assert drained["in_flight"] > 0 and drained["failed"] == 0 and drained["exit_ms"] is not None


def test_uvicorn_with_its_graceful_timeout():
    run = shutdown.sigterm_during_load("uvicorn_drain", 50, 300, 0.5, timeout_graceful_shutdown=0.6)
    drained = shutdown.summarize("uvicorn", run, 50, 300, 600, (100, 200))
    assert drained["in_flight"] > 0 and drained["failed"] == 0


def test_gunicorn_without_and_with_its_graceful_timeout():
    [(server, route, _, cut_options, drained_options)] = [run for run in shutdown.runs(50, 300, 600)
                                                          if run[0] == "gunicorn_drain"]
    assert drained_options["graceful_timeout"] == 1  # whole seconds, rounded up from 600 ms
    run = shutdown.sigterm_during_load(server, 50, 300, 0.5, route=route, **cut_options)
    cut = shutdown.summarize("no drain", run, 50, 300, 0, shutdown.spared(server, run["exit_s"] * 1000))
    assert cut["in_flight"] > 0 and 0 < cut["failed"] <= cut["in_flight"]
    run = shutdown.sigterm_during_load(server, 50, 300, 0.5, route=route, **drained_options)
    drained = shutdown.summarize("graceful", run, 50, 300, 1000, (0, 0))
    assert drained["in_flight"] > 0 and drained["failed"] == 0 and drained["exit_ms"] is not None


def test_each_server_gets_its_own_setting_in_its_own_unit():
    settings = {server: (flag, cut, drained) for server, _, flag, cut, drained in shutdown.runs(100, 500, 1200)}
    assert settings["service_app"] == ("--drain-ms", {"drain_ms": 0}, {"drain_ms": 1200})
    assert settings["uvicorn_drain"][2] == {"timeout_graceful_shutdown": 1.2}
    assert settings["gunicorn_drain"][2]["graceful_timeout"] == 2  # 1.2 s rounds up to whole seconds
    assert settings["gunicorn_drain"][2]["threads"] == 100 * 500 // 1000 + shutdown.SLACK
    assert shutdown.spared("gunicorn_drain", 150.0) == (0.0, 150.0)
    assert shutdown.spared("uvicorn_drain", 150.0) == (shutdown.UVICORN_WAIT_MS, 2 * shutdown.UVICORN_WAIT_MS)
