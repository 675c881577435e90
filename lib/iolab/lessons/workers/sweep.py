"""Lesson 06's experiments.

Each configuration started once, every handler run on it, predicted from one worker, measured,
judged.
"""

import math
from dataclasses import dataclass

from iolab import environment, neighbours, params, registry

from . import cores as core_info
from . import measure, model

KINDS = {
    "sync": "gunicorn, sync workers (one request at a time each)",
    "gthread": "gunicorn, gthread workers (a pool of threads each)",
    "threaded": "threaded_app (http.server), a pool of threads in one process",
    "tornado": "nginx in front of Tornado processes",
    "nginx": "nginx answering by itself",
}
MAX_REQUESTS = 200_000
# Every other prediction leans on a baseline's demands, so one odd baseline run would tilt them all. Hello world's D is
# a third of a millisecond, which a shared or virtual machine moves by 10-20% from one short run to the next (the 5 ms
# of /cpu by about 2%; benchmarks/repeatability.py measures both): its baseline is the middle one of three runs.
# /cpu's baseline runs three times too, not to steady it but to measure its noise: the lesson checks that D stays
# the same across configurations, which only means something against how much D moves between identical runs.
BASELINE_RUNS = {"hello": 3, "cpu": 3}
# A run that ended before this share of run_seconds was sized from a guess far below what it did. Too short a window
# measures wrongly: under a CPU quota (CFS hands it out per 100 ms period) a group may run on every core until that
# period's quota is spent, so a window of 12 ms saw 1.7 CPUs' worth of work under a 1-CPU quota, where runs of a
# second saw 1.0. Such a run is sized again from its own throughput and run again, RESIZES times at most.
SHORT_RUN = 0.5
RESIZES = 2
NGINX_KINDS = ("tornado", "nginx")  # the kinds with nginx in them: the comparisons a machine without it skips


def missing(kind):
    """Why `kind`'s server cannot start on this machine (nginx or a package not installed), from the registry; or None."""
    return registry.missing(Config(kind).server)


def nginx_missing():
    """Why the nginx comparisons (nginx + Tornado processes, nginx alone) cannot run here, or None if they can."""
    return next((reason for reason in map(missing, NGINX_KINDS) if reason), None)


@dataclass(frozen=True)
class Config:
    """One server configuration: what to start, and what the model needs to know about it."""

    kind: str
    processes: int = 1
    threads: int = 1

    @property
    def server(self):
        return {"sync": "gunicorn_app", "gthread": "gunicorn_app", "threaded": "threaded_app",
                "tornado": "nginx_proxy", "nginx": "nginx_hello"}[self.kind]

    @property
    def options(self):
        if self.kind == "sync":
            return {"workers": self.processes}
        if self.kind == "gthread":
            return {"workers": self.processes, "threads": self.threads, "worker_class": "gthread"}
        if self.kind == "threaded":
            return {"threads": self.threads}
        if self.kind == "tornado":
            return {"upstreams": self.processes}
        return {}

    @property
    def keep_alive(self):
        # A pooled thread of threaded_app keeps its connection until the client closes it, so users beyond the
        # pool would wait for the whole run: each request gets a connection of its own, as with sync workers.
        return self.kind != "threaded"

    @property
    def label(self):
        return {
            "sync": f"gunicorn {self.processes} sync",
            "gthread": f"gunicorn {self.processes}×{self.threads} gthread",
            "threaded": f"threaded_app {self.threads} threads",
            "tornado": f"nginx + {self.processes} Tornado",
            "nginx": "nginx alone",
        }[self.kind]

    def setup(self, connections=(), client_processes=1):
        if self.kind == "nginx":
            return model.Setup(processes=0, threads=1, nginx_workers=1, client_processes=client_processes)
        return model.Setup(
            processes=self.processes, threads=self.threads, nginx_workers=1 if self.kind == "tornado" else 0,
            client_processes=client_processes, connections=tuple(connections),
            one_thread=self.kind in ("sync", "tornado"),
        )

    @property
    def baseline(self):
        """The one-worker configuration whose demands predict this one: gunicorn's threads=1 column is sync."""
        return Config(self.kind)


@dataclass(frozen=True)
class Cell:
    """One configuration on one handler: the prediction, the run, and the verdict."""

    config: Config
    handler: str
    users: int
    predicted: model.Prediction  # from the baseline's demands (and the connections' spread before the run, when read)
    explained: model.Prediction  # from this run's own demands (and the connections' spread, when read)
    run: measure.Run
    verdict: model.Verdict
    ceiling: model.Prediction  # the most this run's own demands allow, with every holder at work
    tries: tuple = ()  # req/s of every run made for this cell, the kept one among them (a baseline's: BASELINE_RUNS)
    tries_demand_ms: tuple = ()  # D of each of those runs, in the same order

    @property
    def noise(self):
        """How far D moved between this cell's identical runs, as a share of their middle one (0 with one run)."""
        if len(self.tries_demand_ms) < 2:
            return 0.0
        ordered = sorted(self.tries_demand_ms)
        return (ordered[-1] - ordered[0]) / ordered[len(ordered) // 2]

    @property
    def rps(self):
        return self.run.rps

    @property
    def error(self):
        return model.error(self.run.rps, self.predicted.rps)

    def row(self):
        """The cell as the results file lists it."""
        return {
            "server": self.config.label, "kind": self.config.kind, "handler": self.handler,
            "workers": self.config.processes, "threads": self.config.threads, "users": self.users,
            "rps": self.run.rps, "predicted_rps": self.predicted.rps, "limit": self.predicted.limit,
            "explained_rps": self.explained.rps, "ceiling_rps": self.ceiling.rps,
            "verdict": self.verdict.kind, "reason": self.verdict.reason,
            "demand_ms": self.run.app_demand_ms, "client_demand_ms": self.run.client_demand_ms,
            "mean_ms": self.run.mean_ms, "p99_ms": self.run.p99_ms, "errors": self.run.errors,
            "others_share": self.run.others_share, "idle_share": self.run.idle_share, "neighbours": self.run.neighbours,
            "connections": list(self.run.connections), "connections_at_go": list(self.run.connections_at_go),
            "tries_rps": list(self.tries), "tries_demand_ms": list(self.tries_demand_ms),
        }


class Lab:
    """The lesson's sizes and everything measured so far; the first run of each kind on each handler is its baseline."""

    def __init__(self, wait_ms, cpu_ms, run_seconds, users, handlers=tuple(measure.HANDLERS), cpus=None, retries=2):
        self.wait_ms, self.cpu_ms = wait_ms, cpu_ms
        self.retries = retries  # a run that other programs disturbed is run again, this many times at most
        self.run_seconds, self.users = run_seconds, users
        self.handlers = tuple(handlers)
        # With `cpus`, everything this lab starts runs on those CPUs only: the stand-in for a one-CPU machine.
        self.cpus = set(cpus) if cpus is not None else set(core_info.usable_cores())
        # Cores as the model counts them: these CPUs, or fewer under a container's CPU quota (Binder's is 1).
        self.cores = environment.usable_cpus(len(self.cpus))
        self.cells = []
        self.baselines = {}  # (kind, handler) -> model.Demands

    def wait_of(self, handler):
        return self.wait_ms if handler == "wait" else 0.0

    def users_for(self, config, handler):
        """Enough users to keep every thread or worker busy: twice as many as the requests it can hold."""
        setup = config.setup()
        holders = max(setup.processes, 1) * (setup.threads or 1)
        return max(self.users, 2 * holders)

    def demands(self, config, handler):
        """The baseline's demands for this configuration and handler (measuring the baseline first if needed)."""
        key = (config.baseline.kind, handler)
        if key not in self.baselines:
            self.measure(config.baseline, [handler])
        return self.baselines[key]

    def measure(self, config, handlers=None, again=False):
        """Start `config` once, run each handler on it, and return its Cells, kept in self.cells; a configuration
        measured before is not measured again, unless `again` asks for one more run (which is not kept)."""
        reason = missing(config.kind)
        if reason:
            raise RuntimeError(f"cannot measure {config.label}: {reason}")
        handlers = [h for h in (handlers or self.handlers) if config.kind != "nginx" or h == "hello"]
        wanted = handlers if again else [h for h in handlers if self.find(config, h) is None]
        if not wanted:
            return [self.find(config, h) for h in handlers]
        is_baseline = config == config.baseline
        first = {} if is_baseline and not again else {h: self.demands(config, h) for h in wanted}
        with core_info.pinned(self.cpus):
            server = measure.start(config.server, **config.options)
            try:
                core_info.pin_process_tree(server.pid, self.cpus)
                fresh = [self._measure_one(server, config, handler, first.get(handler), keep=not again)
                         for handler in wanted]
            finally:
                server.stop()
        return fresh if again else [self.find(config, h) for h in handlers]

    def _measure_one(self, server, config, handler, first, keep=True):
        users = self.users_for(config, handler)
        wait = self.wait_of(handler)
        # nginx alone is faster than one client process: give it one per core.
        clients = max(1, math.ceil(self.cores - 1e-9)) if config.kind == "nginx" else 1  # whole processes
        guess = model.predict(first, config.setup(client_processes=clients), users, self.cores) if first else None
        expected_rps = guess.rps if guess else self._rough_rps(handler, users)
        requests = min(MAX_REQUESTS, max(3 * users, math.ceil(expected_rps * self.run_seconds)))
        tries = []
        for _ in range(BASELINE_RUNS.get(handler, 1) if first is None else 1):
            run = self._least_disturbed(server, config, handler, requests, users, clients, requests / expected_rps)
            for _ in range(RESIZES):
                if run.duration_s >= SHORT_RUN * self.run_seconds or requests >= MAX_REQUESTS or not run.rps:
                    break
                # The guess that sized it was far off (nginx alone does some forty times _rough_rps's 3,000 req/s):
                # sized again from what it did, and run again, so the window is as long as the others.
                expected_rps = run.rps
                requests = min(MAX_REQUESTS, max(3 * users, math.ceil(expected_rps * self.run_seconds)))
                run = self._least_disturbed(server, config, handler, requests, users, clients, requests / expected_rps)
            tries.append(run)
        run = sorted(tries, key=lambda r: r.rps)[len(tries) // 2]  # the median run
        setup = config.setup(client_processes=clients)
        # Where the users connected first, how the workers took their connections is known before the run: the
        # prediction uses it, as it uses the baseline's demands.
        setup_at_go = config.setup(run.connections_at_go, client_processes=clients)
        setup_as_run = config.setup(run.connections, client_processes=clients)
        if first is None:  # this is the baseline: its own demands, and its g, predict the others
            g = model.process_cores(run, setup, users, self.cores, wait)
            first = model.Demands.of(run, wait, g)
            self.baselines[(config.kind, handler)] = first
        own = model.Demands.of(run, wait, first.process_cores)
        predicted = model.predict(first, setup_at_go, users, self.cores)
        explained = model.predict(own, setup_as_run, users, self.cores)
        # The most a run could do: under a quota a short run may catch a period's unused quota (environment.cpus_within).
        most = model.ceiling(run, own, setup, users, environment.cpus_within(run.duration_s, len(self.cpus)))
        verdict = model.judge(run, predicted, explained, first, own, setup_as_run, most)
        cell = Cell(config, handler, users, predicted, explained, run, verdict, most, tuple(t.rps for t in tries),
                    tuple(t.app_demand_ms or t.server_demand_ms for t in tries))
        if keep:
            self.cells.append(cell)
        return cell

    def _least_disturbed(self, server, config, handler, requests, users, clients, expected_s):
        """One run; run again (self.retries times at most) while other programs took too much of the cores."""
        runs = []
        while not runs or (runs[-1].others_share > model.DISTURBED_SHARE and len(runs) <= self.retries):
            runs.append(measure.run(
                server, measure.handler_path(handler, self.wait_ms, self.cpu_ms), requests, users, handler=handler,
                keep_alive=config.keep_alive, client_processes=clients,
                read_split=config.kind == "gthread" and config.processes > 1, expected_s=expected_s,
            ))
        return min(runs, key=lambda r: r.others_share)

    def _rough_rps(self, handler, users):
        """A first guess at a baseline's throughput, only to size its run."""
        if handler == "wait":
            return users / (self.wait_ms / 1000) / 2
        if handler == "cpu":
            return 1000 / self.cpu_ms
        return 3000.0

    def find(self, config, handler):
        for cell in self.cells:
            if cell.config == config and cell.handler == handler:
                return cell
        return None

    def select(self, kinds=None, handler=None):
        return [
            cell for cell in self.cells
            if (kinds is None or cell.config.kind in kinds) and (handler is None or cell.handler == handler)
        ]

    def noise(self, handler):
        """How far D moved between identical baseline runs of `handler` (the largest share over the kinds measured):
        the yardstick for a change of D between configurations."""
        return max((c.noise for c in self.select(handler=handler) if c.config == c.config.baseline), default=0.0)

    def predict(self, config, handler):
        """The prediction for a configuration from its baseline's demands, without running it."""
        clients = max(1, math.ceil(self.cores - 1e-9)) if config.kind == "nginx" else 1  # whole processes
        users = self.users_for(config, handler)
        return model.predict(self.demands(config, handler), config.setup(client_processes=clients), users, self.cores)


REPORT_HEADERS = ["configuration", "handler", "users", "predicted req/s", "limit", "measured req/s", "error",
                  "D (ms)", "client's D (ms)", "verdict", neighbours.COLUMN]


def others_held(run):
    """The share of a run others held the CPUs (iolab.neighbours), for a table: "38%", or "unknown"."""
    return neighbours.held(run.neighbours)


def report_rows(cells):
    """Rows for a table of cells under REPORT_HEADERS: the prediction, its limit, the run, and the verdict."""
    rows = []
    for cell in cells:
        verdict = cell.verdict.kind + (f": {cell.verdict.reason}" if cell.verdict.reason else "")
        rows.append([
            cell.config.label, cell.handler, cell.users, cell.predicted.rps, cell.predicted.limit, cell.rps,
            f"{cell.error:+.0%}", cell.run.app_demand_ms or cell.run.server_demand_ms, cell.run.client_demand_ms,
            verdict, others_held(cell.run),
        ])
    return rows


def check_counts(name, values, low, high, must_have=(1,), at_least=1):
    """A notebook parameter that lists counts: distinct whole numbers from `low` to `high`, in rising order."""
    whole = isinstance(values, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    if not whole or not values or list(values) != sorted(set(values)) or not low <= values[0] <= values[-1] <= high:
        raise params.ParameterError(
            f"parameter {name}={values!r} is not allowed: it must list distinct whole numbers from {low} to {high}, "
            "in rising order"
        )
    missing = [v for v in must_have if v not in values]
    if missing or len(values) < at_least:
        raise params.ParameterError(
            f"parameter {name}={values!r} is not allowed: it must have at least {at_least} values"
            + (f" and include {must_have}" if must_have else "")
        )
    return list(values)
