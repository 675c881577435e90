"""Client processes: the row format read by name, several processes merged into one run, bad parameters, safety."""

import io
import typing

import pytest

from helpers import kill_the_parent
from iolab import load
from iolab.clients import wire
from iolab.clients.shares import share_of


def test_the_row_is_written_in_the_order_it_is_read():
    # RowBuffer.add is the only place a client writes a row, a wire.Row: one value for each of wire.FIELDS.
    assert len(typing.get_args(wire.Row)) == len(wire.FIELDS)
    assert set(load.Sample._fields) == set(wire.FIELDS), "every field of a Sample comes from the row, by name"


def test_a_frame_carries_rows_that_are_read_by_name():
    buffer = wire.RowBuffer()
    # In wire.FIELDS' order: intended, start, end, status, bytes, error, user, connection.
    buffer.add((0.5, 0.75, 1.0, 200, 12, 0, 3, 7))
    buffer.add((1.0, 1.0, 1.5, 0, 0, 1, 4, -1))
    stream = io.BytesIO()
    wire.write_frame(stream, wire.ROWS, buffer.take(), t=2.0, in_flight=1, error_names=[None, "refused"])
    wire.write_frame(stream, wire.DONE, t=2.5)
    stream.seek(0)
    header, rows = wire.read_frame(stream)
    assert header["kind"] == wire.ROWS and header["in_flight"] == 1
    assert list(rows["user"]) == [3, 4] and list(rows["connection"]) == [7, -1]
    first, second = load.samples_of(rows, header["error_names"])
    assert first == load.Sample(start=0.75, end=1.0, status=200, bytes=12, error=None, user=3, connection=7, intended=0.5)
    assert second.error == "refused" and second.status == 0
    assert first.latency == 0.25 and first.latency_from_intended == 0.5 and first.send_lag == 0.25
    assert wire.read_frame(stream)[0]["kind"] == wire.DONE
    assert wire.read_frame(stream) is None
    assert buffer.take() == (0, b""), "taking the rows forgets them"


def test_a_frame_cut_short_by_a_kill_reads_as_the_end():
    buffer = wire.RowBuffer()
    buffer.add((0.0, 0.0, 1.0, 200, 12, 0, 0, 0))
    stream = io.BytesIO()
    wire.write_frame(stream, wire.ROWS, buffer.take(), t=1.0, in_flight=0, error_names=[None])
    stream = io.BytesIO(stream.getvalue()[:-5])
    assert wire.read_frame(stream) is None


@pytest.mark.parametrize("total, parts", [(10, 3), (7, 7), (100, 1), (5, 4)])
def test_shares_split_users_and_requests_without_loss(total, parts):
    shares = [share_of({"process": p, "processes": parts, "concurrency": total, "requests": total * 3})
              for p in range(parts)]
    users = [user for share in shares for user in share["users"]]
    assert users == list(range(total)), "every user in exactly one process"
    assert sum(share["requests"] for share in shares) == total * 3
    assert max(len(s["users"]) for s in shares) - min(len(s["users"]) for s in shares) <= 1


@pytest.mark.parametrize("kind", ["closed_async", "closed_raw", "closed_sync"])
def test_several_processes_merge_into_one_run(tornado, kind):
    result = load.run_load(tornado.url + "/", requests=90, concurrency=6, kind=kind, processes=3)
    assert result.stop_reason == "completed"
    assert len(result.samples) == 90 and result.errors == 0
    assert {s.user for s in result.samples} == set(range(6))
    assert len({s.connection for s in result.samples}) == 6, "connection numbers are unique across processes"
    # One time zero for all: every process's users send their first request right after it.
    first_sends = sorted(min(s.start for s in result.samples if s.user == user) for user in range(6))
    assert first_sends[-1] - first_sends[0] < result.duration_s
    assert all(0 <= s.start <= s.end <= result.duration_s for s in result.samples)


def test_several_processes_merge_an_aggregated_run(tornado):
    result = load.run_load(tornado.url + "/", requests=300, concurrency=4, kind="closed_raw", processes=2, record="aggregate")
    assert result.aggregated and result.completed == 300 and result.errors == 0
    assert sum(result.samples.finished) == 300


def test_the_client_process_stops_when_the_run_is_stopped(tornado):
    run = load.start_load(tornado.url + "/async-sleep?ms=100", requests=10_000, concurrency=4, processes=2, kind="closed_raw")
    assert len(run.processes) == 2
    run.stop()
    assert all(process.poll() is not None for process in run.processes)
    assert run.result().stop_reason == "stopped"


PARENT = """
    import json
    from iolab import load, servers
    server = servers.start("tornado_app")
    run = load.start_load(server.url + "/async-sleep?ms=500", requests=10000, concurrency=4, processes=2,
                          kind="closed_raw", max_duration_s=60)
    print(json.dumps({"pids": [process.pid for process in run.processes]}), flush=True)
"""


def test_client_processes_die_with_their_parent():
    report, survivors = kill_the_parent(PARENT)
    assert len(report["pids"]) == 2
    assert not survivors, "a client process outlived its SIGKILLed parent"


def test_a_client_that_cannot_start_ends_the_run_with_its_reason(monkeypatch, tmp_path, tornado):
    # An interpreter that fails at once: the run must end with the reason, not wait for a start that never comes.
    broken = tmp_path / "broken-python"
    broken.write_text("#!/bin/sh\necho 'the client could not start' >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setattr("sys.executable", str(broken))
    result = load.start_load(tornado.url + "/", requests=10, concurrency=2, kind="closed_raw").wait(timeout=30)
    assert "exited with code 3 before the run began" in result.stop_reason
    assert "the client could not start" in result.client_stderr
    assert result.completed == 0


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"kind": "half-open"}, ["kind must be one of", "'half-open'"]),
        ({"kind": "open"}, ["rate_rps is required for the open loop"]),
        ({"kind": "open", "rate_rps": 0}, ["rate_rps must be between", "got 0"]),
        ({"kind": "open", "rate_rps": 10, "schedule": "weekly"}, ["schedule must be one of", "'weekly'"]),
        ({"rate_rps": 10}, ["rate_rps is not an option of the 'closed_async' client kind", "take it: open"]),
        ({"kind": "open", "rate_rps": 10, "schedule": "poisson", "seed": "lucky"}, ["seed must be a whole number", "'lucky'"]),
        ({"kind": "pipelined"}, ["pipeline_depth is required"]),
        ({"kind": "pipelined", "pipeline_depth": 0}, ["pipeline_depth must be between 1 and", "got 0"]),
        ({"kind": "pipelined", "pipeline_depth": 4, "keep_alive": False}, ["keep_alive is not an option of the 'pipelined'"]),
        ({"kind": "pipelined", "pipeline_depth": 4, "pipeline_paths": ["x"]}, ["pipeline_paths must be paths", "'x'"]),
        ({"pipeline_depth": 4}, ["pipeline_depth is not an option of the 'closed_async'", "take it: pipelined"]),
        ({"processes": 0}, ["processes must be between 1 and", "got 0"]),
        ({"processes": 8, "concurrency": 4, "requests": 8}, ["processes must be at most concurrency (4)", "got 8"]),
        ({"record": "everything"}, ["record must be one of", "'everything'"]),
        ({"requests": 2_000_000, "record": "samples"}, ["at most 1000000 when every request is kept", "record='aggregate'"]),
        ({"event_loop": "trio"}, ["event_loop must be one of", "'trio'"]),
        ({"requests": 2.5}, ["requests must be a whole number", "2.5"]),
    ],
)
def test_bad_parameters_are_refused_by_name(spec, words):
    with pytest.raises(load.LoadParameterError) as raised:
        load.start_load("http://127.0.0.1:9/", **{"requests": 40, "concurrency": 4, **spec})
    for word in words:
        assert word in str(raised.value)


def test_the_file_limit_counts_every_connection_whatever_the_processes(monkeypatch):
    # 250 connections split across 5 processes fit each process, but the server must hold all 250.
    monkeypatch.setattr(load.resource, "getrlimit", lambda which: (300, 300))
    with pytest.raises(load.LoadParameterError, match="RLIMIT_NOFILE is 300") as raised:
        load.start_load("http://127.0.0.1:9/", requests=500, concurrency=250, processes=5, kind="closed_raw")
    assert "each of 5 client processes" in str(raised.value)
    load.LoadSpec("http://127.0.0.1:9/", requests=500, concurrency=200, processes=5, kind="closed_raw").validate()
