"""Lesson 13's parameters, checked against each other and this machine.

Lesson 13's parameters, checked: each one out of range is named with its value and the range, and a size this
machine's open-file limit cannot hold is refused with the reason.
"""

import resource
from dataclasses import dataclass

from iolab import contract, environment
from iolab.params import LessonPlan, ParameterError, cell_values

from . import model

# Why each range: Z must stay well above a request's CPU (about a millisecond) so the waits, not the CPU, set the
# pace; the pool is below the users so that it is the limit; the rest keep a run short and within the machine.
RANGES = {
    "query_ms": (10, 1000),  # Z: each query's pg_sleep
    "users": (2, 200),  # N: the closed loop's users
    "pool": (1, 45),  # P: each front end's pool; two pools and the executor's threads fit in max_connections
    "max_connections": (10, 1000),  # PostgreSQL's; section 4 opens one more
    "held_db_ms": (10, 1000),  # T_db of section 3
    "held_other_ms": (10, 1000),  # T_other of section 3
    "hold_ms": (100, 5000),  # how long section 2's holders keep every connection of asyncpg's pool
    "rows": (100, 100_000),  # R of section 5
    "statements": (10, 5000),  # n of section 6
    "slow_ms": (100, 5000),  # Z of section 7's timeout
    "timeout_ms": (10, 2500),  # and at most slow_ms / 2
    "backend_connections": (1, 200),  # section 4's connections, each weighed
    "bouncer_clients": (10, 2000),  # clients through pgbouncer
    "bouncer_pool": (1, 50),  # pgbouncer's backends
}
SECONDS = {"run_s": (0.2, 30.0)}  # how long each closed loop runs, about
QUICK = {"query_ms": 50, "users": 20, "pool": 5, "held_db_ms": 20, "held_other_ms": 40, "hold_ms": 300,
         "rows": 2000, "statements": 100, "slow_ms": 300, "timeout_ms": 100, "backend_connections": 10,
         "bouncer_clients": 200, "bouncer_pool": 4, "run_s": 0.5}
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"query_ms": 100, "users": 30, "pool": 10, "max_connections": 100, "held_db_ms": 20,
            "held_other_ms": 50, "hold_ms": 1000, "rows": 5000, "statements": 200, "slow_ms": 500,
            "timeout_ms": 100, "backend_connections": 20, "bouncer_clients": 1000, "bouncer_pool": 5,
            "run_s": 2.0, "quick": False, "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    query_ms: int
    users: int
    pool: int
    max_connections: int
    held_db_ms: int
    held_other_ms: int
    hold_ms: int
    rows: int
    statements: int
    slow_ms: int
    timeout_ms: int
    backend_connections: int
    bouncer_clients: int
    bouncer_pool: int
    run_s: float

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, QUICK)
        check_together(values)
        check_files(values)
        return cls(**values, **cls.flags(cell, quick))

    def describe(self):
        return (f"Z = {self.query_ms} ms, N = {self.users} users, a pool of P = {self.pool}, max_connections ="
                f" {self.max_connections}. Section 3: T_db = {self.held_db_ms} ms, T_other = {self.held_other_ms} ms."
                f" Section 5: R = {self.rows} rows. Section 6: n = {self.statements} statements.")


def check_together(values):
    """The rules between parameters, each named with its values."""
    if values["pool"] >= values["users"]:
        raise ParameterError(f"pool must be less than users ({values['users']}) so that requests wait for a"
                             f" connection, got {values['pool']}")
    # A front end opens at most two pools of P (psycopg_pool and asyncpg) and one connection per executor thread.
    needed = 2 * values["pool"] + model.executor_threads() + 1
    if needed > values["max_connections"]:
        raise ParameterError(f"max_connections must be at least 2 × pool + the executor's threads + 1 = {needed},"
                             f" got {values['max_connections']}")
    if values["backend_connections"] > values["max_connections"]:
        raise ParameterError(f"backend_connections must be at most max_connections ({values['max_connections']}),"
                             f" got {values['backend_connections']}")
    if values["timeout_ms"] * 2 > values["slow_ms"]:
        raise ParameterError(f"timeout_ms must be at most slow_ms / 2 ({values['slow_ms'] / 2:g}) so the query"
                             f" outlives the timeout, got {values['timeout_ms']}")
    if values["bouncer_pool"] >= values["bouncer_clients"]:
        raise ParameterError(f"bouncer_pool must be less than bouncer_clients ({values['bouncer_clients']}),"
                             f" got {values['bouncer_pool']}")


def files_needed(values):
    """Descriptors this process needs at once: the most connections a section opens, and the lab's own files."""
    return max(values["max_connections"] + 1, values["bouncer_clients"]) + contract.FDS_BESIDES_CONNECTIONS


def check_files(values, limit=None):
    """Raise the soft RLIMIT_NOFILE to the hard one if the sizes need it; refuse, with the reason, if even that is
    too few (a student's `ulimit -Sn 1024` holds the default sizes once raised)."""
    needed = files_needed(values)
    soft = limit if limit is not None else environment.raise_file_limit(needed)[0]
    if soft != resource.RLIM_INFINITY and soft < needed:
        raise ParameterError(f"max_connections ({values['max_connections']}) and bouncer_clients"
                             f" ({values['bouncer_clients']}) need {needed} open files, but this process may open"
                             f" only {soft} (ulimit -n): lower them, or raise the limit")
