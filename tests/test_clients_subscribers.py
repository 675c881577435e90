"""The subscribers client kind: its options refused by name, its bounds, large messages cut across reads, the floor."""

import resource
import socket
import time

import pytest

from helpers import run_with_file_limits
from iolab import environment, load, push_floor, servers
from iolab.clients import kinds
from iolab.params import ParameterError


@pytest.fixture(scope="module")
def push():
    with servers.serve("tornado_push") as server:
        yield server


@pytest.mark.parametrize(("options", "words"), [
    ({"transport": "pigeon"}, ["transport", "'pigeon'"]),
    ({"size": 10}, ["size", "10"]),
    ({"interval_s": -1}, ["interval_s", "-1"]),
    ({"how": "now; rm"}, ["how", "'now; rm'"]),
    ({"compression": "yes"}, ["compression", "'yes'"]),
])
def test_bad_options_are_refused_by_name(options, words):
    with pytest.raises(ParameterError) as refused:
        kinds.options_for("subscribers", **options)
    assert all(word in str(refused.value) for word in words), refused.value


def test_the_shared_fields_must_fit_the_subscribers():
    with pytest.raises(ParameterError, match=r"requests must be a multiple of concurrency \(4\).*got 10"):
        load.LoadSpec("http://127.0.0.1:9/", kind="subscribers", requests=10, concurrency=4).validate()
    with pytest.raises(ParameterError, match="slow must name one of the 4 subscribers .* got 4"):
        load.LoadSpec("http://127.0.0.1:9/", kind="subscribers", requests=4, concurrency=4, slow=4).validate()


def test_a_hard_file_limit_too_low_is_named_with_what_would_fit():
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard RLIMIT_NOFILE here")
    reason = environment.file_limit_reason(hard)
    assert f"hard RLIMIT_NOFILE is {hard}" in reason and f"at most {hard - 64}" in reason
    assert environment.file_limit_reason(10) is None


@pytest.mark.parametrize("transport", ["ws", "sse", "poll"])
def test_messages_larger_than_a_read_arrive_whole(push, transport):
    # 200 KiB messages come in many reads: each parser must put a message together before it counts it.
    size = 200 * 1024
    result = load.run_load(push.url + "/", kind="subscribers", transport=transport, publish=True, size=size,
                           interval_s=0.01, requests=3 * 4, concurrency=3, timeout_s=5, max_duration_s=10)
    assert result.stop_reason == "completed" and result.errors == 0, result.client_stderr
    assert len(result.samples) == 12 and {sample.bytes for sample in result.samples} == {size}


def test_a_server_that_never_answers_ends_the_run_within_its_bounds():
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel accepts; nobody ever answers
        port = silent.getsockname()[1]
        began = time.monotonic()
        result = load.run_load(f"http://127.0.0.1:{port}/", kind="subscribers", requests=2, concurrency=2,
                               timeout_s=0.5, max_duration_s=1)
    assert time.monotonic() - began < 10
    assert [sample.error for sample in result.samples] == ["timeout", "timeout"]
    assert result.reports[0]["lost"] == {"timeout": 2}


def test_the_floor_is_one_send_per_subscriber_and_every_byte_arrives():
    floor = push_floor.floor(connections=50, size=64, rounds=3)
    assert floor["subscribers"] == 50 and len(floor["runs_us"]) == 3 and floor["frame_bytes"] == 64 + 2
    assert 0 < floor["cpu_us_per_send"] == sorted(floor["runs_us"])[1] < 1000
    assert floor["received_bytes"] == floor["sent_bytes"] == 3 * 50 * (64 + 2)
    with pytest.raises(ValueError, match="connections must be a whole number of at least 1 and at most 20,000, got 0"):
        push_floor.floor(connections=0)


def test_a_websocket_frame_carries_its_length():
    assert push_floor.ws_frame(b"x" * 5) == b"\x81\x05xxxxx"
    assert push_floor.ws_frame(b"x" * 300)[:4] == b"\x81\x7e\x01\x2c"


def test_subscribers_spread_over_processes_are_numbered_across_them(push):
    result = load.run_load(push.url + "/", kind="subscribers", transport="ws", publish=True, processes=2,
                           requests=10 * 2, concurrency=10, timeout_s=5, max_duration_s=10)
    assert result.stop_reason == "completed" and result.errors == 0, result.client_stderr
    assert sorted({sample.user for sample in result.samples}) == list(range(10))
    assert len({sample.connection for sample in result.samples}) == 10
    assert len(result.reports) == 2 and len(result.reports[0]["published"]) == 2  # process 0 publishes


HELD_UNDER_A_LOW_SOFT_LIMIT = """
import resource
from iolab import load, servers
with servers.serve("tornado_push") as server:
    result = load.run_load(server.url + "/", kind="subscribers", publish=True, requests=1500, concurrency=1500,
                           timeout_s=10, max_duration_s=30)
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], result.stop_reason, len(result.samples), result.errors)
"""


def test_a_soft_file_limit_of_1024_is_raised_to_the_hard_one_for_1500_subscribers():
    # A student's login gives `ulimit -Sn 1024`: the client and the server each take their hard limit instead.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1500 + 128:
        pytest.skip(f"the hard RLIMIT_NOFILE here is {hard}: too low for 1,500 subscribers")
    soft, reason, samples, errors = run_with_file_limits(1024, hard, HELD_UNDER_A_LOW_SOFT_LIMIT)
    assert (reason, int(samples), int(errors)) == ("completed", 1500, 0) and int(soft) > 1024
