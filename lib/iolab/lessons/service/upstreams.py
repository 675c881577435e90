"""Section 3 behind nginx: restart one of two upstreams under load, abruptly or taken out first.

nginx (the nginx_balancer server) takes turns over two service_app upstreams listed in a file; a reload (SIGHUP,
what `nginx -s reload` sends) makes it read the file again. An open loop sends /async-sleep?ms=R at X a second,
each on a new connection, so a reload's old workers hold no idle connection a request could meet closing.
"""

import os
import shutil
import signal
import time

import psutil

from iolab import neighbours, owned_folders, registry, servers
from iolab.load import start_load

from . import model

UPSTREAM = "service_app"
TIMEOUT_S = 10
MOST_S = 20  # the schedule's length; the run stops well before, once the restart is done and answered
SLACK = 20  # connections beyond L = X·R, so no request waits for one
NGINX_S = 5  # a reload's new workers start within this, and its old ones exit within it plus R


def missing():
    """Why this part cannot run here (nginx not installed), or None."""
    return registry.missing("nginx_balancer", UPSTREAM)


class Pair:
    """Two upstreams, nginx in front, and the file it reads them from; stopped however the block ends."""

    def __init__(self):
        self.folder = owned_folders.make("iolab-upstreams-")
        self.path = os.path.join(self.folder, "upstreams.txt")
        self.upstreams = []
        self.balancer = None
        try:
            self.upstreams = [servers.start(UPSTREAM, drain_ms=0) for _ in range(2)]
            self.write(down=())
            self.balancer = servers.start("nginx_balancer", upstreams_file=self.path)
        except BaseException:
            self.close()
            raise

    def write(self, down):
        """The upstream list nginx reads: `down` after each one taken out."""
        with open(self.path, "w") as file:
            for k, upstream in enumerate(self.upstreams):
                file.write(f"{upstream.host}:{upstream.port}{' down' if k in down else ''}\n")

    def reload(self, down):
        """Write the list, reload nginx, and return once its new workers run: from then on they send nothing to
        the upstreams in `down`. Returns the old workers, who still finish what they hold."""
        old = self.workers()
        self.write(down)
        os.kill(self.balancer.pid, signal.SIGHUP)
        deadline = time.monotonic() + NGINX_S
        while not self.workers() - old:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nginx started no new worker within {NGINX_S} s of a reload:\n"
                                   f"{self.balancer.stderr_tail()}")
            time.sleep(0.005)
        return old

    def workers(self):
        """The pids of nginx's workers (its master is the balancer's child named nginx)."""
        master = next(child for child in psutil.Process(self.balancer.pid).children() if child.name() == "nginx")
        return {worker.pid for worker in master.children()}

    def restart(self, k):
        """SIGTERM upstream k (no drain: it exits at once) and start it again on the same port."""
        port = self.upstreams[k].port
        self.upstreams[k].stop()
        self.upstreams[k] = servers.start(UPSTREAM, port=port, drain_ms=0)

    def close(self):
        for server in [self.balancer, *self.upstreams]:
            if server is not None:
                server.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def restart_abruptly(pair, k):
    """What a deploy without a balancer's help does: restart the upstream while nginx still sends to it."""
    pair.restart(k)


def restart_taken_out(pair, k):
    """The operator's way: take it out (nginx reloads with it marked down), wait until the old workers have
    finished what they hold (about R), restart it, and put it back."""
    old_workers = pair.reload(down={k})
    wait_until_gone(old_workers)
    pair.restart(k)
    pair.reload(down=())


def wait_until_gone(pids):
    """Return once none of `pids` runs: nginx's old workers exit when their last request is answered."""
    deadline = time.monotonic() + NGINX_S + TIMEOUT_S
    while any(running(pid) for pid in pids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"nginx's old workers {sorted(pids)} still run {NGINX_S + TIMEOUT_S} s after a reload")
        time.sleep(0.005)


def running(pid):
    """Whether `pid` runs (an exited worker its master has not reaped yet does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def under_load(pair, rate, hold_ms, procedure, k=1):
    """Load nginx with /async-sleep?ms=R at X a second; once L is in flight, run `procedure(pair, k)`; stop the
    load R after it is done. Returns each request's (sent, ended, answered) and when the procedure began and
    ended, on the load's clock, and what else held the CPUs meanwhile."""
    with neighbours.watching() as watch:
        run = start_load(f"{pair.balancer.url}/async-sleep?ms={hold_ms}", kind="open", rate_rps=rate,
                         schedule="fixed", requests=int(rate * MOST_S),
                         concurrency=int(rate * hold_ms / 1000) + SLACK, timeout_s=TIMEOUT_S, keep_alive=False)
        try:
            began = run.sleep_until(1.5 * hold_ms / 1000)  # past R: L = X·R are in flight
            procedure(pair, k)
            ended = time.perf_counter() - run.time_zero
            if ended > MOST_S:
                raise RuntimeError(f"the restart ended {ended:.1f} s into a load of {MOST_S} s: this machine is too"
                                   " busy")
            run.sleep_until(ended + hold_ms / 1000 + 0.2)  # the last requests sent during it are answered
        finally:
            run.stop()
    calls = [(s.start, s.end, s.status == 200) for s in run.result().samples]
    return {"calls": calls, "began_s": began, "ended_s": ended, "neighbours": watch.found.as_dict()}


def summarize(how, run, hold_ms):
    """The row a run keeps: this run's X, R and L, how long the procedure took, what failed and what was predicted.

    Taken out first, none fails. Restarted abruptly, the upstream fails what it holds, half of L = X·R with nginx
    taking turns, and half of what is sent while it is down, from SIGTERM until it listens again (the procedure's
    time): X·(R + that time)/2."""
    calls = run["calls"]
    sends = sorted(sent for sent, _, _ in calls)
    rate = (len(sends) - 1) / (sends[-1] - sends[0])
    times = [ended - sent for sent, ended, ok in calls if ok]
    mean_s = sum(times) / len(times)
    down_s = run["ended_s"] - run["began_s"]
    abrupt = how == "abrupt"
    return {"how": how, "hold_ms": hold_ms, "rate": rate, "sent": len(calls), "mean_ms": mean_s * 1000,
            "shortest_ms": min(times) * 1000, "longest_ms": max(times) * 1000, "little_L": rate * mean_s,
            "in_flight": model.in_flight_at([(sent, ended) for sent, ended, _ in calls], run["began_s"]),
            "procedure_ms": down_s * 1000, "failed": sum(1 for *_, ok in calls if not ok),
            "predicted": rate * (mean_s + down_s) / 2 if abrupt else 0.0, "neighbours": run.get("neighbours")}


def measure(rate, hold_ms):
    """One pair, two runs under load: upstream 2 restarted abruptly, then taken out first. {how: run}."""
    with Pair() as pair:
        return {how: under_load(pair, rate, hold_ms, procedure)
                for how, procedure in (("abrupt", restart_abruptly), ("taken out first", restart_taken_out))}


def rows(runs, hold_ms):
    """A row per run, as summarize keeps it."""
    return [summarize(how, run, hold_ms) for how, run in runs.items()]
