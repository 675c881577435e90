"""Lesson 14's closing claims on plain data: kept, broken (named), skipped without the link, and read back."""

import json

import pytest

from iolab.claims import ClaimsFailed
from iolab.lessons.network import claims, model, parameters

from .test_pages import page

RTT = 0.041  # s: the link's 40 ms and the delay line's millisecond
QUIET, BUSY = {"others_share": 0.0}, {"others_share": 0.4}  # a run's neighbours (Neighbours.as_dict), others' share


def plan(**changes):
    return parameters.Plan.from_cell(parameters.DEFAULTS | {"quick": True} | changes)


def exchanges(rtt, n, server=0.002):
    """Section 1's figures on a path of `rtt` seconds, each request costing the server `server` seconds."""
    jitter = [0.0, 0.0003, 0.0006]
    return {"connect_s": [rtt + j for j in jitter], "request_s": [rtt + server + j for j in jitter], "n": n,
            "sequence_s": [(n + 1) * rtt + n * server + j for j in jitter],
            "pipelined_s": [2 * rtt + n * server + j for j in jitter],
            "connections_s": [2 * rtt + 3 * server + j for j in jitter]}


def round_trips(n=6):
    return {"link": exchanges(RTT, n), "loopback": exchanges(0.00005, n)}


def slow_start():
    return {"sizes": {str(size): [[(model.answer_rounds(size) + 0.3) * RTT + j, RTT] for j in (0.0, 0.002, 0.004)]
                      for size in parameters.SLOW_START_SIZES}, "neighbours": QUIET}


def loss(size=1_000_000, slow=4):
    def times(rate):  # (the whole transfer, its second half) at `rate` once slow start is over
        return [[size / (rate * f), size / 2 / (rate * f)] for f in (0.9, 0.95, 1.0, 1.05, 1.1)]
    return {"loss_percent": 2.0, "size": size,
            "transfer_s": {"reno": times(model.mathis_rate(RTT, 0.02)),
                           "cubic": times(1.15 * model.mathis_rate(RTT, 0.02)),
                           "bbr": times(20 * model.mathis_rate(RTT, 0.02))},
            "connect_s": [1.04] * slow + [RTT] * (100 - slow)}


def slow_clients(gunicorn_waits_s=0.3):
    """Section 2's figures at 16 Mbit/s, 150 kB and 2 workers: τ is 82 ms, (N − w)·τ 164 ms."""
    def server(short_s, answers_per_s=7.0):
        return {"short_alone_s": [0.002, 0.001, 0.001, 0.0015], "short_s": short_s, "clients": 4,
                "wall_s": 2.0, "transfer_s": [0.5] * int(2 * answers_per_s)}
    return {"rate_mbit": 16, "size": 150_000, "workers": 2, "alone_s": [[0.19, 0.05], [0.21, 0.05], [0.2, 0.05]],
            "servers": {"gunicorn alone": server([gunicorn_waits_s + j for j in (0.1, 0.0, 0.002, -0.001)]),
                        "nginx in front": server([0.003, 0.002, 0.002, 0.002]),
                        "Tornado": server([0.01, 0.002, 0.001, 0.001])}}


def nagle(rtt_s, stall_s=None, exchanges=12):
    stall_s = model.nagle_stall_ms(rtt_s * 1000) / 1000 + 0.003 if stall_s is None else stall_s
    base = [rtt_s + 0.0002 * (i % 3) for i in range(exchanges)]
    return {"connect_s": [rtt_s] * 3, "nodelay_s": base,
            "nagle_s": [b + (0.0 if i < parameters.WARM_UP_EXCHANGES else stall_s) for i, b in enumerate(base)]}


def found(**changes):
    return claims.results(plan(), link_reason=None, round_trips=round_trips(), slow_start=slow_start(), loss=loss(),
                          nagle_loopback=nagle(0.00003), nagle_link=nagle(RTT),
                          delay_line={"cpu_s": 0.8, "packets": 9000, "dropped": 40, "wall_s": 20.0},
                          slow_clients=slow_clients(), pages=page(RTT)) | changes


def test_a_run_inside_its_bounds_keeps_every_claim(capsys):
    checked = claims.check_claims(found())
    out = capsys.readouterr().out
    assert not checked.failed() and "✗" not in out and "–" not in out and out.count("✓") == len(checked.rows)


def test_a_round_trip_far_from_the_one_set_is_named():
    slow = round_trips()
    slow["link"] = exchanges(0.0603, 6)  # 60 ms on a link set to 40
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(round_trips=slow))
    assert "a connect costs the round trip set on the link" in str(raised.value) and "60.6 ms" in str(raised.value)


def test_reno_far_below_both_models_is_named():
    broken = loss()
    broken["transfer_s"]["reno"] = [[t * 3 for t in pair] for pair in broken["transfer_s"]["reno"]]  # a third
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(loss=broken))
    assert "reno at 2 % loss" in str(raised.value) and "cubic" not in str(raised.value)


def test_too_many_slow_connects_are_named():
    with pytest.raises(ClaimsFailed, match=r"connects of 1 s or more.*: 30,"):
        claims.check_claims(found(loss=loss(slow=30)))


def test_sync_workers_that_never_keep_a_short_request_waiting_are_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(slow_clients=slow_clients(gunicorn_waits_s=0.003)))
    assert "gunicorn alone: a short request" in str(raised.value) and "Tornado" not in str(raised.value)


def test_no_stall_with_nagle_on_is_named():
    with pytest.raises(ClaimsFailed, match="Nagle's stall on loopback"):
        claims.check_claims(found(nagle={"loopback": nagle(0.00003, stall_s=0.0), "link": nagle(RTT)}))


def test_without_the_link_its_claims_are_skipped_with_the_reason(capsys):
    reason = "this container refuses user namespaces"
    checked = claims.check_claims(claims.results(plan(), link_reason=reason, nagle_loopback=nagle(0.00003)))
    out = capsys.readouterr().out
    assert not checked.failed() and out.count("✓") == 2  # Nagle on loopback still runs and is judged
    assert out.count(f"skipped, {reason}") == len(checked.rows) - 2


def test_the_claims_read_back_from_a_results_file_print_the_same_lines(tmp_path, capsys):
    results = found()
    claims.check_claims(results)
    first = capsys.readouterr().out
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    claims.check_claims(json.loads(path.read_text()))
    assert capsys.readouterr().out == first


def slowed(others):
    """Section 1 with every exchange on the link 20 % slower than its round trips allow, with those `others`."""
    found = round_trips()
    found["link"] = {**exchanges(RTT * 1.2, 6), "neighbours": others}
    return found


def test_a_slow_round_trip_while_others_held_the_cpus_is_excused_with_their_figures(capsys):
    checked = claims.check_claims(found(round_trips=slowed(BUSY)))
    out = capsys.readouterr().out
    assert not checked.failed() and "a connect costs the round trip set on the link (ms): not judged" in out
    assert "others held the CPUs 40% of this run" in out and "could not be judged" in out


def test_the_same_slow_round_trip_on_a_quiet_run_fails():
    with pytest.raises(ClaimsFailed, match="a connect costs the round trip set on the link"):
        claims.check_claims(found(round_trips=slowed(QUIET)))


def test_round_trips_faster_than_the_link_allows_are_never_the_neighbours():
    fast = round_trips()
    fast["link"] = {**exchanges(RTT * 0.8, 6), "neighbours": BUSY}
    with pytest.raises(ClaimsFailed, match="a connect costs the round trip set on the link"):
        claims.check_claims(found(round_trips=fast))


def test_a_short_request_beside_slow_clients_is_judged_busy_or_not_others_cannot_stretch_1_ms_to_80():
    for others in (BUSY, QUIET):
        found_ = slow_clients()
        found_["servers"]["Tornado"] |= {"short_s": [0.15, 0.16, 0.14, 0.15], "neighbours": others}  # near (N − w)·τ
        with pytest.raises(ClaimsFailed, match="Tornado: a short request beside 4 slow clients"):
            claims.check_claims(found(slow_clients=found_))


def test_a_nagle_stall_late_while_others_held_the_cpus_is_excused_and_on_a_quiet_run_fails(capsys):
    def late(others):  # 20 ms past the delayed ACK, the round trip and a timer tick
        return {"loopback": nagle(0.00003), "link": nagle(RTT, stall_s=(model.nagle_stall_ms(RTT * 1000) + 30) / 1000)
                | {"neighbours": others}}
    checked = claims.check_claims(found(nagle=late(BUSY)))
    assert not checked.failed() and "Nagle's stall on the link: 40 ms + RTT" in capsys.readouterr().out
    with pytest.raises(ClaimsFailed, match="Nagle's stall on the link: 40 ms"):
        claims.check_claims(found(nagle=late(QUIET)))


def test_a_nagle_stall_is_held_to_the_set_round_trip_below_when_the_connect_came_out_longer():
    # Beside a CPU hog the connect timed 45 ms on a 40 ms link; the stall took 40 ms + the link's own 40.8 ms.
    slow_connect = nagle(RTT, stall_s=0.0808) | {"connect_s": [0.045] * 3}
    checked = claims.check_claims(found(nagle={"loopback": nagle(0.00003), "link": slow_connect}))
    assert not checked.failed()
    # Under the set round trip it is still too fast to be true.
    too_fast = nagle(RTT, stall_s=0.070) | {"connect_s": [0.045] * 3}
    with pytest.raises(ClaimsFailed, match="Nagle's stall on the link"):
        claims.check_claims(found(nagle={"loopback": nagle(0.00003), "link": too_fast}))
