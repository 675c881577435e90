"""Lesson 12's parameters, checked against this machine's limits.

Lesson 12's parameters, checked: each one out of range is named with its value and the range, and a size this
machine cannot hold (its open files, its memory) is refused with the limit that stops it.
"""

import resource
from dataclasses import dataclass

import psutil

from iolab import environment
from iolab.params import LessonPlan, ParameterError, cell_values

# Why each range: below 100 subscribers the fixed cost of a process hides the slope; 10,000 is the lesson's figure.
RANGES = {
    "subscribers": (100, 10_000),  # N: section 1's largest and section 4's ladder
    "memory_points": (5, 10),  # the N of section 1's fit: 4 at least to fit (a prediction interval needs 2 degrees of
    # freedom to be narrower than the run), and the last held out to be predicted
    "compressed_subscribers": (50, 10_000),  # N with permessage-deflate on: each holds ten times the memory
    "fanout_subscribers": (50, 10_000),  # N of section 3, per transport and server
    "repeats": (2, 7),  # each broadcast this many times: 2 at least, so the run has a spread
    "message_bytes": (64, 65_536),  # B: the JSON header {"seq", "t"} needs about 60 bytes
    "slow_rate": (5, 200),  # messages a second in section 5
    "slow_message_kib": (1, 256),  # the size of each of section 5's messages
    "max_buffer_kib": (64, 16_384),  # a subscriber whose unsent bytes pass this is dropped
}
SECONDS = {"slow_seconds": (0.5, 20.0), "budget_gib": (0.25, 64.0)}
QUICK = {"subscribers": 400, "memory_points": 5, "compressed_subscribers": 200, "fanout_subscribers": 400,
         "repeats": 3, "slow_seconds": 2.0}
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"subscribers": 10_000, "memory_points": 5, "compressed_subscribers": 1_000, "fanout_subscribers": 2_000,
            "repeats": 3, "message_bytes": 100, "slow_rate": 50, "slow_message_kib": 64, "max_buffer_kib": 1024,
            "slow_seconds": 3.0, "budget_gib": 2.0, "quick": False, "solutions": False, "results_path": None}
FILES_PER_PROCESS_MARGIN = 100  # descriptors a server or a client uses besides its subscribers' sockets
# The most a connection held here with compression on (research 1c: Tornado's 159-166 KiB); a size whose server could
# need more than the memory this machine has left is refused before it starts.
WORST_KIB_PER_CONNECTION = {False: 16, True: 200}
MEMORY_SHARE = 0.5  # of the memory available now, the most one server may be predicted to take


@dataclass(frozen=True)
class Limits:
    """What this machine lets the lesson hold: open files per process, memory, CPUs."""

    files_soft: int
    files_hard: int
    memory_limit_bytes: int | None  # the container's cgroup limit, or None where none is set
    memory_available_bytes: int
    cpus: float

    def describe(self):
        memory = (f"a memory limit of {self.memory_limit_bytes / 2**30:.2f} GiB" if self.memory_limit_bytes
                  else "no memory limit")
        return (f"This machine: {self.cpus:g} CPU(s), open files {self.files_soft} (soft) / {self.files_hard} (hard),"
                f" {memory}, {self.memory_available_bytes / 2**30:.1f} GiB available now.")


def machine_limits():
    """This process's open-file limits after raising the soft one to the hard one (as lesson 07 does: children
    inherit it), the container's memory limit, the memory available, and the CPUs the lesson may use."""
    soft, hard = environment.raise_file_limit()
    if hard == resource.RLIM_INFINITY:
        hard = soft
    available = psutil.virtual_memory().available
    limit = environment.memory_limit_bytes()
    if limit is not None:
        available = min(available, limit)
    return Limits(soft, hard, limit, available, environment.usable_cpus())


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    subscribers: int
    memory_points: int
    compressed_subscribers: int
    fanout_subscribers: int
    repeats: int
    message_bytes: int
    slow_rate: int
    slow_message_kib: int
    max_buffer_kib: int
    slow_seconds: float
    budget_gib: float
    limits: Limits | None = None

    @classmethod
    def from_cell(cls, cell, limits=None):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on.
        `limits`: this machine's (machine_limits() by default)."""
        quick, values = cell_values(cell, RANGES, SECONDS, QUICK, cap=True)
        if values["memory_points"] * 20 > values["compressed_subscribers"]:
            raise ParameterError(f"compressed_subscribers must be at least 20 × memory_points"
                                 f" ({values['memory_points'] * 20}) so each step adds 20 connections or more, got"
                                 f" {values['compressed_subscribers']}")
        if values["memory_points"] * 25 > values["subscribers"]:
            raise ParameterError(f"subscribers must be at least 25 × memory_points ({values['memory_points'] * 25})"
                                 f" so each step of the fit adds 25 connections or more, got {values['subscribers']}")
        if values["slow_message_kib"] >= values["max_buffer_kib"]:
            raise ParameterError(f"slow_message_kib must be below max_buffer_kib ({values['max_buffer_kib']}) so a"
                                 f" stopped subscriber is dropped only after messages pile up, got"
                                 f" {values['slow_message_kib']}")
        limits = limits or machine_limits()
        check_limits(values, limits)
        return cls(**values, **cls.flags(cell, quick),
                   limits=limits)

    def memory_steps(self, largest=None):
        """The N of section 1's fit: `memory_points` even steps up to `largest` (subscribers by default)."""
        largest = largest or self.subscribers
        return [round(largest * (i + 1) / self.memory_points) for i in range(self.memory_points)]

    def describe(self):
        return (f"Section 1: up to N = {self.subscribers} idle subscribers in {self.memory_points} steps"
                f" ({self.compressed_subscribers} with compression on). Section 3: {self.fanout_subscribers}"
                f" subscribers per transport, each broadcast {self.repeats} times, B = {self.message_bytes} bytes."
                f" Section 5: {self.slow_rate} messages a second of {self.slow_message_kib} KiB for"
                f" {self.slow_seconds:g} s, a cap of {self.max_buffer_kib} KiB.")


def check_limits(values, limits):
    """Refuse a size this machine cannot hold, naming the limit: a server and a client each hold one socket per
    subscriber, so each needs that many open files; and a server's predicted memory must fit what is left."""
    most = max(values["subscribers"], values["compressed_subscribers"], values["fanout_subscribers"])
    files = most + FILES_PER_PROCESS_MARGIN
    if files > limits.files_hard:
        raise ParameterError(
            f"{most} subscribers need about {files} open files in the server and as many in the client, but this"
            f" machine's hard RLIMIT_NOFILE is {limits.files_hard} (ulimit -Hn). Use at most"
            f" {limits.files_hard - FILES_PER_PROCESS_MARGIN} subscribers, or raise the hard limit as root.")
    budget = limits.memory_available_bytes * MEMORY_SHARE
    for name, compressed in (("subscribers", False), ("compressed_subscribers", True)):
        need = values[name] * WORST_KIB_PER_CONNECTION[compressed] * 1024
        if need > budget:
            raise ParameterError(
                f"{name} = {values[name]} could take {need / 2**20:.0f} MiB in one server"
                f" ({WORST_KIB_PER_CONNECTION[compressed]} KiB a connection at worst), more than half the"
                f" {limits.memory_available_bytes / 2**20:.0f} MiB this machine has available. Use at most"
                f" {int(budget / (WORST_KIB_PER_CONNECTION[compressed] * 1024))}.")
