"""Lesson 07's holding client and limits.

A thousand connections on every server, each limit hit with a clear message, nothing left open.
"""

import os
import socket
import threading
import time

import psutil
import pytest

from helpers import kill_the_parent, wait_until
from iolab import environment, listening, registry, servers
from iolab.lessons.c10k import client, holding, limits, lineup, provoke, sizing

SERVERS = lineup.servers()


@pytest.fixture(scope="module", autouse=True)
def raised_file_limit():
    environment.raise_file_limit()


def fds_of(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_every_server_that_times_out_idle_connections_is_told_to_wait_longer_than_a_run():
    # A server left at its own idle timeout (gunicorn's is 2 s) closes what a slow step is still weighing.
    idle_options = {"step4_event_loop": "idle_timeout", "threaded_app": "idle_timeout", "gunicorn gthread": "keepalive"}
    for label, option in idle_options.items():
        name, options = SERVERS[label]
        assert option in registry.get(name).options, f"{name} has no {option} option"
        assert options.get(option) == lineup.IDLE_S, (label, options)


def test_asking_for_an_idle_option_a_server_lacks_is_an_error_not_a_silent_drop():
    with pytest.raises(ValueError, match="tornado_app has no 'idle_timeout' option"):
        lineup._with_idle("tornado_app", {})


@pytest.mark.parametrize("label", list(SERVERS))
def test_every_server_type_holds_a_thousand_connections_and_lets_them_all_go(label):
    name, options = SERVERS[label]
    reason = lineup.missing(name)
    if reason:
        pytest.skip(reason)
    with servers.serve(name, **options) as server:
        idle_fds = fds_of(server.pid)
        result = holding.hold(server, [100, 1000], fresh_requests=20, label=label)
        step = result.last
        if label == "gunicorn gthread":
            # gthread keeps at most worker_connections - threads alive (996 by default) and says so with
            # 'Connection: close'.
            assert step.limit in (None, limits.SERVER_CAP), (step.limit, step.message)
            assert step.limit != limits.SERVER_CAP or "Connection: close" in step.message, step.message
            assert step.held >= 900, step.row()
        else:
            assert result.held_all and step.held == 1000 and step.limit is None, (step.row(), step.message)
            assert step.footprint.fds >= 1000  # the server really accepted them: one file each
            assert step.fresh_ms and step.fresh_error is None
        assert step.tcp_inuse >= 2 * step.held  # both ends of each connection are sockets of this kernel
        assert result.rows()[-1]["server"] == label
        # Every socket is closed at the end: the client's and, once it notices, the server's.
        assert result.open_fds_after is not None and result.open_fds_after < 20
        server.check()
        assert wait_until(lambda: fds_of(server.pid) <= idle_fds + 2, 5.0), (fds_of(server.pid), idle_fds)



def test_a_fresh_connection_left_in_the_accept_queue_fails_in_seconds_not_at_the_answer_timeout(monkeypatch):
    # gthread at worker_connections stops accepting: the fresh client's connection waits in the queue for ever.
    monkeypatch.setattr(client, "UNACCEPTED_S", 0.5)  # the client's 2 s, shortened: the same wait, sooner
    with socket.create_server(("127.0.0.1", 0), backlog=8) as listener:  # it listens and never accepts
        port = listener.getsockname()[1]
        holder = client.Holder({"host": "127.0.0.1", "port": port, "path": "/", "sources": [], "fresh_requests": 5,
                                "answer_timeout_s": 10.0})
        assert client.accept_queue(port) == 0
        began = time.perf_counter()
        fresh_ms, error = holder.fresh_requests()
        took = time.perf_counter() - began
        assert client.accept_queue(port) == 1  # the fresh connection, closed by now, which the kernel still queues
    assert fresh_ms == [] and "accept queue" in error, error
    assert client.UNACCEPTED_S <= took < client.UNACCEPTED_S + 1, took

def test_event_loop_memory_per_connection_and_threads():
    with servers.serve("step4_event_loop", idle_timeout=600) as server:
        step = holding.hold(server, [1000], fresh_requests=10).last
    assert step.threads == step.baseline.threads  # one loop, whatever N
    assert 0 < step.kb_per_connection <= 16


def test_thread_server_grows_a_thread_and_a_stack_per_connection():
    with servers.serve("threaded_app", idle_timeout=600) as server:
        result = holding.hold(server, [200], fresh_requests=10)
    step = result.last
    assert step.threads - result.baseline.threads == 200
    assert step.vsz_kb_per_connection >= 0.9 * limits.stack_size_kb()
    assert step.kb_per_connection < step.vsz_kb_per_connection / 10  # RSS: a sliver of the reserved stack


def test_the_client_refuses_what_its_file_limit_cannot_hold_before_starting():
    _, hard = limits.file_limits()
    with servers.serve("step4_event_loop") as server:
        with pytest.raises(limits.LimitReached, match="RLIMIT_NOFILE") as refused:
            holding.Holding(server, [hard])
        assert refused.value.limit == limits.NOFILE_CLIENT
        limits.set_file_limit(server.pid, 300)
        with pytest.raises(limits.LimitReached, match="inherits") as refused:
            holding.Holding(server, [500])
        assert refused.value.limit == limits.NOFILE_SERVER
    assert not [p for p in psutil.Process().children(recursive=True) if client.__name__ in " ".join(p.cmdline())]


@pytest.mark.parametrize("steps, words", [([], "whole numbers"), ([0], "whole numbers"), ([100, 50], "grow"),
                                          ([10, 10], "grow"), ([True], "whole numbers")])
def test_bad_steps_are_refused_by_name(steps, words):
    with pytest.raises(ValueError, match=words):
        holding.check_size(steps)


def test_bad_options_are_refused_by_name():
    with servers.serve("step4_event_loop") as server:
        with pytest.raises(ValueError, match="window"):
            holding.Holding(server, [10], window=0)
        with pytest.raises(ValueError, match="hold_s"):
            holding.Holding(server, [10], hold_s=0)
        with pytest.raises(ValueError, match="fresh_requests"):
            holding.Holding(server, [10], fresh_requests=-1)


def test_a_short_step_raises_the_limit_it_met():
    with servers.serve("step4_event_loop") as server:
        result = holding.hold(server, [300], nofile=128, preflight=False, fresh_requests=0)
    with pytest.raises(limits.LimitReached, match="EMFILE") as raised:
        result.raise_for_limit()
    assert raised.value.limit == limits.NOFILE_CLIENT


# --- each limit, hit on purpose, named, and fixed ----------------------------------------------------------

def check_meeting(meeting, *words):
    assert meeting.named, (meeting.limit, meeting.met.limit, meeting.met.message)
    for word in words:
        assert word in meeting.met.message, (word, meeting.met.message)
    assert meeting.fix_held, (meeting.row(), meeting.fixed.message)


def test_client_file_limit():
    with servers.serve("step4_event_loop") as server:
        meeting = provoke.client_files(server, connections=300, soft_limit=200)
    check_meeting(meeting, "EMFILE", "RLIMIT_NOFILE", "setrlimit")
    assert meeting.met.held < 200 and meeting.held_when_met < 200


def test_server_file_limit_and_inheritance():
    # Tornado only logs accept()'s EMFILE (the hand-built loop closes what it cannot keep: the test below).
    meeting = provoke.server_files("tornado_app", connections=300, soft_limit=200)
    check_meeting(meeting, "Too many open files", "RLIMIT_NOFILE", "inherits")
    assert meeting.details["inherited"] == limits.file_limits()
    assert meeting.met.errors.get("no answer")  # connected by the kernel, never accepted by the server
    assert meeting.details["cpu_s"] > 0  # and meanwhile it was woken for them again and again


def test_ephemeral_ports():
    with servers.serve("step4_event_loop") as server:
        meeting = provoke.ephemeral_ports(server, ports=50, sources=2)
    check_meeting(meeting, "EADDRNOTAVAIL", "source address")
    assert meeting.held_when_met == 50


def test_listen_backlog():
    meeting = provoke.listen_backlog("tornado_app", burst=400, block_ms=300)
    check_meeting(meeting, "SYN", "backlog")
    assert meeting.details["backlog"] == min(128, listening.somaxconn())
    assert sum(1 for ms in meeting.met.connect_ms if ms < 300) <= meeting.details["backlog"] + 1
    assert max(meeting.met.connect_ms) >= 900 and max(meeting.fixed.connect_ms) < 900


def test_thread_stacks():
    meeting = provoke.thread_stacks(budget_mb=128, connections=100, small_stack_kb=256)
    check_meeting(meeting, "can't start new thread", "stack")
    assert meeting.held_when_met <= meeting.details["predicted_threads"] + 2


@pytest.mark.parametrize("selector", ["epoll", "poll"])
def test_the_hand_built_loop_on_epoll_or_poll_holds_past_fd_setsize(selector):
    with servers.serve("step4_event_loop", idle_timeout=lineup.IDLE_S, selector=selector) as server:
        result = holding.hold(server, [1100], fresh_requests=10)
    assert result.held_all, result.message


def test_the_hand_built_loop_on_select_dies_at_fd_setsize_and_says_why():
    with servers.serve("step4_event_loop", idle_timeout=lineup.IDLE_S, selector="select") as server:
        result = holding.hold(server, [1100], fresh_requests=0)
    step = result.last
    assert step.limit == limits.DIED and "filedescriptor out of range in select()" in step.message, step.message
    assert step.held <= 1024


def test_out_of_descriptors_the_hand_built_loop_closes_what_it_cannot_keep_with_its_reserve():
    meeting = provoke.server_files("step4_event_loop", connections=200, soft_limit=64, idle_timeout=lineup.IDLE_S)
    check_meeting(meeting, "Too many open files")
    assert "no answer" not in meeting.met.errors, meeting.met.errors  # none left queued, unanswered
    assert meeting.met.errors.get("closed before answering", 0) + meeting.met.errors.get("ECONNRESET", 0) > 0


def test_address_space_is_labelled_for_what_it_is():
    meeting = provoke.address_space(10.0, "tornado_app", budget_mb=12)
    check_meeting(meeting, "MemoryError")
    assert "RLIMIT_AS" in meeting.what


def test_kernel_memory_counts_the_threads_kernel_stacks():
    inuse, buffers_kb, slab_kb, stacks_kb = holding.kernel_memory()
    assert inuse is not None and buffers_kb >= 0 and slab_kb > 0
    assert stacks_kb > 0  # every thread on the machine has one: this one too


@pytest.mark.skipif(provoke.memory_cgroup_unavailable() is not None,
                    reason=f"no memory cgroup here: {provoke.memory_cgroup_unavailable()}")
def test_a_memory_cgroup_kills_the_highest_oom_score_not_the_process_that_crossed():
    meeting = provoke.memory_cgroup(10.0, "tornado_app", budget_mb=12)
    check_meeting(meeting, "out-of-memory killer")
    beside = meeting.details["beside"]["fates"]
    assert beside["bystander"]["killed"] and beside["bystander"]["rss_mb"] > beside["server"]["rss_mb"], beside
    assert beside["bystander"]["killed_order"] in (1, None) and beside["server"]["killed_order"] != 1, beside
    assert meeting.details["alone"]["fates"]["server"]["killed"]
    assert meeting.details["beside"]["oom_kills"] in (None, 1, 2)
    assert not servers.running()


def test_without_a_memory_cgroup_the_run_says_why(monkeypatch):
    monkeypatch.setattr(provoke.cgroup_limit, "why_not", lambda controllers: "making a cgroup needs root")
    assert provoke.memory_cgroup_unavailable() == "making a cgroup needs root"
    with pytest.raises(limits.LimitReached, match="no memory cgroup here: making a cgroup needs root"):
        provoke.memory_cgroup(10.0)


# --- nothing outlives its parent ---------------------------------------------------------------------------

PARENT = """
    import json
    from iolab import environment, servers
    from iolab.lessons.c10k import holding
    environment.raise_file_limit()
    server = servers.start("step4_event_loop")
    run = holding.Holding(server, [300], fresh_requests=0)
    run.next_step()
    run.proceed()
    step = run.next_step()
    print(json.dumps({"pids": [server.pid, run.process.pid], "held": step.held}), flush=True)
"""


def test_a_killed_notebook_takes_the_holder_and_the_server_with_it():
    report, survivors = kill_the_parent(PARENT, within_s=3.0)
    assert report["held"] == 300
    assert not survivors


def test_the_holder_alone_exits_when_its_stdin_closes():
    with servers.serve("step4_event_loop") as server:
        run = holding.Holding(server, [50], fresh_requests=0)
        run.next_step()
        run.close()  # end of file on its stdin: it closes every socket and goes
        assert run.process.returncode == 0
        assert run.closed is not None and run.closed["kind"] == client.CLOSED


# --- choosing N ---------------------------------------------------------------------------------------------

def test_plan_takes_the_smallest_bound_and_says_which():
    roomy = sizing.plan(10_000, 40.0, memory_share=0.5, available_bytes=64 * 2**30)
    assert roomy.bounds["50% of the free memory"] == 64 * 2**20 // 2 // 40
    assert roomy.connections == sizing.nice(min(roomy.bounds.values())) <= 10_000
    tight = sizing.plan(10_000, 40.0, memory_share=0.5, available_bytes=100 * 2**20)
    assert tight.decided_by == "50% of the free memory"
    assert tight.connections == sizing.nice(100 * 1024 * 0.5 / 40)
    assert "set by 50% of the free memory" in tight.explain()
    with pytest.raises(ValueError, match="memory_share"):
        sizing.plan(10, 1.0, memory_share=1.5)


def test_sources_spread_past_the_ports_of_one_address():
    per_source = limits.ports_per_source()
    assert limits.sources_for(10) == ["127.0.0.2"]
    assert len(limits.sources_for(per_source)) == 2  # half of each address's ports at most
    with pytest.raises(ValueError, match="source addresses"):
        limits.sources_for(per_source * 200)


def test_a_holder_started_from_a_short_lived_thread_outlives_the_thread():
    # A notebook's widget callback is such a thread: the client must live as long as the notebook, not the thread.
    with servers.serve("step4_event_loop") as server:
        made = []
        starter = threading.Thread(target=lambda: made.append(holding.Holding(server, [50], fresh_requests=0)))
        starter.start()
        starter.join()
        run = made[0]
        assert wait_until(lambda: run.process.poll() is not None, 0.6) is False  # still alive after the thread ended
        result = run.run()
    assert result.held_all and result.last.held == 50


def closed_step(server_label):
    """A step in which the server closed the connections the client held, as a dying or timing-out server does."""
    return holding.Step(server=server_label, target=10, held=0, accept_s=0.0, errors={}, first_error=None,
                        closed_by_server=10, shortest_idle_close_s=0.1, connect_ms=[], answer_ms=[], fresh_ms=[],
                        fresh_error=None, client_nofile=[1024, 1024], client_max_rss_kb=0)


def test_a_server_seen_exiting_just_after_it_closed_the_connections_died_it_did_not_time_them_out():
    # Under a CPU quota the kernel closes a dying server's connections a moment before its parent can see it exit.
    with servers.serve("step4_event_loop", idle_timeout=lineup.IDLE_S) as server:
        threading.Timer(0.3, server.process.terminate).start()  # SIGKILL would read as the OOM killer
        limit, message = limits.diagnose(closed_step(server.name), server)
    assert limit == limits.DIED and "died" in message, (limit, message)


def test_a_live_server_that_closed_the_connections_timed_them_out():
    with servers.serve("step4_event_loop", idle_timeout=lineup.IDLE_S) as server:
        limit, message = limits.diagnose(closed_step(server.name), server)
        assert server.alive()
    assert limit == limits.IDLE_TIMEOUT and "idle" in message, (limit, message)
