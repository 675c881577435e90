"""ab and wrk against a real server, and their reports parsed.

Skipped, with the reason, where a tool is missing.
"""

import pytest

from iolab import benchtools

# 10 users of a 100 ms wait: at most 100 req/s (101 for ab's rounding); half that allows for
# ab's start-up and a loaded machine. wrk's floor only proves it measured something real.
AB_RPS_AT_LEAST = 50
AB_RPS_AT_MOST = 101
WRK_RPS_AT_LEAST = 100
AB_ROUNDING = 0.01  # ab prints both figures to three decimals


def needs(tool):
    reason = benchtools.missing_reason(tool)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


@needs("ab")
def test_ab_report_is_parsed_into_numbers(tornado):
    report = benchtools.run_ab(tornado.url + "/async-sleep?ms=100", requests=20, concurrency=10)
    assert report["completed"] == 20 and report["failed"] == 0
    assert AB_RPS_AT_LEAST < report["rps"] <= AB_RPS_AT_MOST
    # ab's two lines are one division: concurrency x total / n and total / n.
    assert report["ab_time_per_request_ms"] == pytest.approx(10 * report["ab_time_per_request_all_ms"], rel=AB_ROUNDING)
    assert set(report["ab_percentiles"]) == {50, 66, 75, 80, 90, 95, 98, 99, 100}


@needs("wrk")
def test_wrk_report_is_parsed_into_numbers(tornado):
    report = benchtools.run_wrk(tornado.url + "/", connections=4, duration_s=1)
    assert report["rps"] > WRK_RPS_AT_LEAST and report["requests"] > WRK_RPS_AT_LEAST
    assert report["socket_errors"] == 0 and report["mean_ms"] > 0


def test_tools_refuse_non_loopback_urls():
    with pytest.raises(ValueError, match="loopback"):
        benchtools.run_ab("http://192.168.0.1/", 1, 1)
    with pytest.raises(ValueError, match="loopback"):
        benchtools.run_wrk("http://example.com/", 1, 1)


def test_missing_tool_says_which_package():
    assert "Debian package" in benchtools.missing_reason("surely-not-a-real-tool-xyz")


def test_parse_ab_reads_the_articles_report():
    text = """
Time taken for tests:   200.747 seconds
Complete requests:      200
Failed requests:        0
Requests per second:    1.00 [#/sec] (mean)
Time per request:       40149.358 [ms] (mean)
Time per request:       1003.734 [ms] (mean, across all concurrent requests)
Percentage of the requests served within a certain time (ms)
  50%  38133
  99%  199742
 100%  200746 (longest request)
"""
    report = benchtools.parse_ab(text)
    assert report["rps"] == 1.0 and report["duration_s"] == 200.747
    assert report["ab_time_per_request_ms"] == 40149.358 and report["ab_time_per_request_all_ms"] == 1003.734
    assert report["ab_percentiles"] == {50: 38133, 99: 199742, 100: 200746}
