"""Lesson 14's section 5: h2load's report read, the page's claims on plain data, and hypercorn and h2load for real."""

import pytest

from iolab import children, contract, link
from iolab.claims import Claims
from iolab.lessons.network import claims, model, pages, parameters

REPORT = """finished in 331.52ms, 180.98 req/s, 3.46MB/s
requests: 60 total, 60 started, 60 done, 0 succeeded, 60 failed, 0 errored, 0 timeout
traffic: 1.15MB (1207020) total, 5.16KB (5280) headers (space savings 0.00%), 1.14MB (1200000) data
"""


def test_the_page_time_is_read_from_h2load_once_every_byte_arrived():
    assert pages.seconds_of(REPORT, 60 * 20_000) == pytest.approx(0.33152)
    assert pages.seconds_of(REPORT.replace("331.52ms", "3.57s"), 1000) == pytest.approx(3.57)
    with pytest.raises(RuntimeError, match="1200000 bytes of 1200001"):
        pages.seconds_of(REPORT, 1_200_001)
    with pytest.raises(RuntimeError, match="no time"):
        pages.seconds_of("h2load: connection refused", 1)


def test_without_h2load_the_section_says_why():
    with children.environment(**{contract.TOOLS_OFF_VARIABLE: "h2load"}):
        assert "h2load" in pages.why_not() and "nghttp2-client" in pages.why_not()


def page(rtt, n=60, clean=None, lossy=None, loss=2.0):
    """Section 5's figures on plain data: a page of n answers of 20 kB on a link of `rtt` seconds."""
    h2, h1 = model.page_h2_rtts(n, 20_000), model.page_h1_rtts(n, 20_000, 6)
    jitter = [0.0, 0.001, 0.002]
    return {"requests": n, "size": 20_000, "loss_percent": loss, "congestion": "reno", "connections_h1": 6,
            "loopback": {"h2": [0.02 + j for j in jitter], "h1": [0.012 + j for j in jitter]},
            "clean": clean or {"h2": [0.02 + h2 * rtt + j for j in jitter], "h1": [0.012 + h1 * rtt + j for j in jitter]},
            "lossy": lossy or {"h2": [3.3, 3.9, 4.4], "h1": [1.1, 1.3, 1.6]}}


def test_the_page_claims_hold_on_figures_as_the_model_predicts_them():
    judged = Claims("test")
    claims.page_claims(judged, page(0.041), 41.0, 0.3, 40)
    assert not judged.failed(), judged.lines()
    assert len(judged.rows) == 4 and all(row[0] != "skipped" for row in judged.rows), judged.lines()


def test_http2_slower_than_http1_on_a_clean_link_is_named():
    found = page(0.041)
    found["clean"]["h2"], found["clean"]["h1"] = found["clean"]["h1"], found["clean"]["h2"]
    judged = Claims("test")
    claims.page_claims(judged, found, 41.0, 0.3, 40)
    failed = " ".join(row[1] for row in judged.failed())
    assert "HTTP/2 on 1 connection, clean" in failed and "clean: HTTP/2 on one connection wins" in failed


def test_a_lossy_winner_within_the_noise_is_not_judged():
    lossy = {"h2": [0.4, 2.0, 4.4], "h1": [0.5, 2.1, 4.0]}
    judged = Claims("test")
    claims.page_claims(judged, page(0.041, n=12, lossy=lossy, loss=0.5), 41.0, 0.3, 40)
    assert not judged.failed(), judged.lines()
    assert any("within this run's noise" in line for line in judged.lines()), judged.lines()


def test_a_small_page_is_won_by_six_connections_even_clean():
    """12 answers: HTTP/2's 240 kB take 5 rounds of slow start, HTTP/1.1's six take 2 for the first, 1 for the next."""
    assert (model.page_h2_rtts(12, 20_000), model.page_h1_rtts(12, 20_000, 6)) == (6, 4)
    judged = Claims("test")
    claims.page_claims(judged, page(0.041, n=12), 41.0, 0.3, 40)
    assert not judged.failed(), judged.lines()
    assert any("clean: HTTP/1.1 on six wins" in line for line in judged.lines()), judged.lines()


@pytest.mark.skipif(pages.why_not() is not None, reason=f"section 5's parts are missing: {pages.why_not()}")
def test_hypercorn_gives_h2load_every_byte_over_both_protocols_on_loopback():
    found = pages.in_turn(None, 12, 20_000, 1)
    assert set(found) == {"h2", "h1"} and all(0 < times[0] < 5 for times in found.values())


@pytest.mark.skipif(link.why_not() is not None or pages.why_not() is not None,
                    reason=f"no link or no h2load here: {link.why_not() or pages.why_not()}")
def test_section_5_on_a_real_link_http2_wins_clean_and_loses_at_loss_as_predicted():
    with link.build(link.LinkSpec(rtt_ms=20, loss_percent=0.0, rate_mbit=None)) as path:
        connects = [float(s) for s in children.run(
            path.argv("client", children.python("-c", CONNECT_TIME, path.server_host)), 10).stdout.split()]
        found = pages.compare(path, 48, parameters.PAGE_ANSWER_BYTES, 3, 3.0)
        assert path.spec.loss_percent == 0.0  # the link is clean again for the sections after it
    rtt = sorted(connects)[1] * 1000
    judged = Claims("test")
    claims.page_claims(judged, found, rtt, (max(connects) - min(connects)) * 1000, 20)
    assert not judged.failed(), judged.lines()


# Three connects to the server side's address, which nothing listens on: each refusal (an RST) costs one round trip.
CONNECT_TIME = """
import socket, sys, time
for _ in range(3):
    started = time.perf_counter()
    try:
        socket.create_connection((sys.argv[1], 9), timeout=5).close()
    except ConnectionRefusedError:
        pass
    print(time.perf_counter() - started)
"""
