"""What one wait costs as the watched descriptors grow.

select() and poll() rescan them all, epoll does not.

Read after multiplexing.py. Each measurement watches `n` descriptors of which
exactly one is ready, so every call returns at once and all we time is the
bookkeeping: building and scanning the set (select, poll) or handing back the
ready list the kernel already keeps (epoll).
"""

import fcntl
import os
import resource
import select
import statistics
import sys
import time

from iolab import environment, metrics

from .trace import ModelUnavailable

FD_SETSIZE = 1024  # glibc's fd_set: a fixed bitmap of 1024 bits, one per descriptor number

FD_SETSIZE_EXPLANATION = (
    "select() takes fd_set bitmaps, and in glibc an fd_set is a fixed array of FD_SETSIZE = 1024 bits, "
    "one bit per descriptor NUMBER. Descriptor 1024 would be bit 1024 of a 1024-bit array: past its end. "
    "C's FD_SET() writes there anyway and silently corrupts memory; CPython checks and raises ValueError "
    "instead. What matters is the number, not how many you watch: one descriptor numbered 1024 is enough. "
    "poll() takes an array of (fd, events) records and epoll keeps its interest list inside the kernel, "
    "so neither has this limit; a server with thousands of connections cannot use select() at all."
)


MOST_FILES = 1 << 20  # Linux's default fs.nr_open: no process may open more, whatever its limits say
MARGIN = 64  # descriptors left for whatever else the process opens while a count is held open (a plot, a log)


def fd_budget(margin=MARGIN):
    """How many more descriptors this process may open (RLIMIT_NOFILE's soft limit minus those open, minus a margin)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft - environment.files_open() - margin


def make_room(fd_counts, margin=MARGIN):
    """Room for the largest count, and for one descriptor numbered past FD_SETSIZE: returns (counts that fit, notes).

    Raises the soft RLIMIT_NOFILE to the hard limit if the counts need it (no privilege needed: a laptop's soft
    limit is often 1024, under a hard one in the tens of thousands). Counts the hard limit cannot hold are left
    out, and the largest count that fits takes their place. Each note is a sentence saying what changed.
    """
    soft_before, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = max(max(fd_counts), FD_SETSIZE + 1) + environment.files_open() + margin
    soft, hard = environment.raise_file_limit(needed)
    notes = []
    if soft != soft_before:
        notes.append(f"Your soft limit on open files (RLIMIT_NOFILE) was {soft_before:,}. This kernel raised it to the"
                     f" hard limit, {soft:,}; that needs no privilege.")
    budget = fd_budget(margin)
    fitting = [count for count in fd_counts if count <= budget]
    if len(fitting) < len(fd_counts):
        if budget > max(fitting, default=0):
            fitting.append(budget)
        notes.append(f"The hard limit on open files here is {hard:,}. So the scaling test stops at"
                     f" {max(fitting, default=0):,} descriptors, not {max(fd_counts):,}. Root can raise it (ulimit -Hn).")
    if len(fitting) < 2:
        raise ModelUnavailable(f"RLIMIT_NOFILE's hard limit is {hard} here: too few descriptors to time two counts")
    return fitting, notes


def _require_linux():
    if not (sys.platform.startswith("linux") and hasattr(select, "epoll") and hasattr(os, "eventfd")):
        raise ModelUnavailable(f"epoll and eventfd are Linux-only; this is {sys.platform} (BSD and macOS have kqueue)")


def _median_us(samples_ns):
    return statistics.median(samples_ns) / 1000


def wait_cost(fd_counts, repetitions=200, mechanisms=("select", "poll", "epoll")):
    """Median µs per wait for each count of watched descriptors: [{"fds": n, "select_us": x or None, ...}, ...].

    select is measured only while every descriptor number is below FD_SETSIZE.
    """
    _require_linux()
    if max(fd_counts) > fd_budget():
        raise ValueError(f"fd_counts up to {max(fd_counts)} exceed what RLIMIT_NOFILE leaves this process ({fd_budget()})")
    return [time_waits(count, repetitions, mechanisms) for count in fd_counts]


def time_waits(count, repetitions, mechanisms=("select", "poll", "epoll")):
    """Watch `count` descriptors, one of them ready, and time single waits: {"fds": count, "epoll_us": median, ...}."""
    # One eventfd per watched descriptor (a pipe or socketpair would cost two).
    # None is readable until written to, so exactly one is ready: the last one.
    fds = [os.eventfd(0) for _ in range(count)]
    poller, epoll = select.poll(), select.epoll()
    try:
        for fd in fds:
            poller.register(fd, select.POLLIN)
            epoll.register(fd, select.EPOLLIN)
        os.eventfd_write(fds[-1], 1)
        waits = {
            "select": lambda: select.select(fds, [], [], 0),  # the whole list, every call
            "poll": lambda: poller.poll(0),  # an array of every descriptor, every call
            "epoll": lambda: epoll.poll(0),  # the ready list the kernel already keeps
        }
        usable = [m for m in mechanisms if m != "select" or max(fds) < FD_SETSIZE]
        samples = {mechanism: [] for mechanism in usable}
        for _ in range(repetitions):  # interleaved, so a noisy moment hits every mechanism alike
            for mechanism in usable:
                start = time.perf_counter_ns()
                ready = waits[mechanism]()
                samples[mechanism].append(time.perf_counter_ns() - start)
                assert len(ready[0] if mechanism == "select" else ready) == 1
    finally:
        epoll.close()
        for fd in fds:
            os.close(fd)
    row = {"fds": count}
    for mechanism in mechanisms:
        row[f"{mechanism}_us"] = _median_us(samples[mechanism]) if mechanism in samples else None
    return row


def slope_us_per_1000_fds(rows, mechanism):
    """Least-squares slope of cost against descriptor count, in µs per 1000 descriptors (None rows skipped)."""
    points = [(row["fds"], row[f"{mechanism}_us"]) for row in rows if row.get(f"{mechanism}_us") is not None]
    if len(points) < 2:
        raise ValueError(f"need at least two measured counts for {mechanism}, got {len(points)}")
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return 1000 * sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def fit_noise(rows, mechanism):
    """The noise this run measured about that slope's line: (the slope's standard error in µs per 1000
    descriptors, the points' scatter about the line in µs).

    Two figures differ by more than noise when they lie further apart than a few of their errors added in
    quadrature; two points always lie on a line, so fewer than three measure no noise (inf).
    """
    points = [(row["fds"], row[f"{mechanism}_us"]) for row in rows if row.get(f"{mechanism}_us") is not None]
    if len(points) < 3:
        return float("inf"), float("inf")
    _, _, slope_error, scatter = metrics.line_fit(*zip(*points))
    return 1000 * slope_error, scatter


def select_past_fd_setsize():
    """Ask select() to watch a descriptor numbered >= FD_SETSIZE; return what it said, why, and that poll/epoll cope."""
    _require_linux()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= FD_SETSIZE:
        raise ModelUnavailable(f"RLIMIT_NOFILE is {soft} here, so no descriptor can be numbered {FD_SETSIZE} or more")
    low = os.eventfd(1)  # readable, so poll and epoll have something to report
    high = fcntl.fcntl(low, fcntl.F_DUPFD, FD_SETSIZE)  # the same eventfd under the lowest free number >= 1024
    epoll = select.epoll()
    try:
        try:
            select.select([high], [], [], 0)
            error = None
        except ValueError as exc:
            error = str(exc)
        poller = select.poll()
        poller.register(high, select.POLLIN)
        epoll.register(high, select.EPOLLIN)
        return {
            "fd": high,
            "select_error": error,
            "poll_ready": len(poller.poll(0)),
            "epoll_ready": len(epoll.poll(0)),
            "explanation": FD_SETSIZE_EXPLANATION,
        }
    finally:
        epoll.close()
        os.close(high)
        os.close(low)
