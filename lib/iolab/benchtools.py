"""ApacheBench and wrk, run on loopback and parsed.

Each runs only where it is installed; its report comes back as numbers.
"""

import os
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from .children import run
from .contract import check_loopback, find_program

PACKAGES = {"ab": "apache2-utils", "wrk": "wrk"}


def missing_reason(tool: str) -> str | None:
    """None if `tool` is on PATH, else a sentence saying what is missing and how to get it."""
    if find_program(tool):
        return None
    return f"{tool} is not installed (Debian package {PACKAGES.get(tool, tool)}), so this comparison is skipped"


def _checked(url: str) -> str:
    check_loopback(urlsplit(url).hostname or "")
    return url


def _number(pattern: str, text: str, cast: Callable[[str], float] = float) -> float | None:
    match = re.search(pattern, text, re.MULTILINE)
    return cast(match.group(1)) if match else None


def parse_ab(text: str) -> dict[str, Any]:
    """ab's report as a dict with the same names as metrics.Summary where they mean the same thing."""
    percentiles = {int(p): int(ms) for p, ms in re.findall(r"^\s+(\d+)%\s+(\d+)", text, re.MULTILINE)}
    per_request = re.findall(r"^Time per request:\s+([\d.]+) \[ms\]", text, re.MULTILINE)
    return {
        "duration_s": _number(r"^Time taken for tests:\s+([\d.]+)", text),
        "completed": _number(r"^Complete requests:\s+(\d+)", text, int),
        "failed": _number(r"^Failed requests:\s+(\d+)", text, int),
        "non_2xx": _number(r"^Non-2xx responses:\s+(\d+)", text, int) or 0,
        "rps": _number(r"^Requests per second:\s+([\d.]+)", text),
        "ab_time_per_request_ms": float(per_request[0]) if per_request else None,
        "ab_time_per_request_all_ms": float(per_request[1]) if len(per_request) > 1 else None,
        "ab_percentiles": percentiles,
    }


def ab_output(
    url: str, requests: int, concurrency: int, keep_alive: bool = False, timeout_s: float = 30, deadline_s: float = 600
) -> str:
    """What `ab -q -n requests -c concurrency [-k] -s timeout url` prints, killed if it runs past `deadline_s`.

    The one place ab runs; a failure raises RuntimeError with the end of ab's stderr.
    """
    args = ["ab", "-q", "-n", str(requests), "-c", str(concurrency), "-s", str(max(1, round(timeout_s)))]
    if keep_alive:
        args.append("-k")
    completed = run(args + [_checked(url)], timeout_s=deadline_s)
    if completed.returncode != 0:
        raise RuntimeError(f"ab exited with code {completed.returncode}: {completed.stderr.strip()[-500:]}")
    return completed.stdout


def run_ab(
    url: str, requests: int, concurrency: int, keep_alive: bool = False, timeout_s: float = 30, deadline_s: float = 600
) -> dict[str, Any]:
    """ab's report (parse_ab) of a run of ab_output's arguments."""
    return parse_ab(ab_output(url, requests, concurrency, keep_alive, timeout_s, deadline_s))


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}


def parse_wrk(text: str) -> dict[str, Any]:
    """wrk's report: requests per second, request count, latency in ms (mean, max, percentiles with --latency), socket errors.

    `timeouts` counts answers that came slower than --timeout: wrk counts them in
    `requests` but leaves them out of every latency figure.
    """
    latency = re.search(r"^\s+Latency\s+([\d.]+)(us|ms|s|m)\s+[\d.]+(?:us|ms|s|m)\s+([\d.]+)(us|ms|s|m)\b",
                        text, re.MULTILINE)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    percentiles = re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s|m)\b", text, re.MULTILINE)
    return {
        "rps": _number(r"^Requests/sec:\s+([\d.]+)", text),
        "requests": _number(r"^\s+(\d+) requests in", text, int),
        "mean_ms": float(latency.group(1)) * _UNITS[latency.group(2)] if latency else None,
        "max_ms": float(latency.group(3)) * _UNITS[latency.group(4)] if latency else None,
        "percentiles_ms": {int(p): float(value) * _UNITS[unit] for p, value, unit in percentiles},
        "socket_errors": sum(map(int, errors.groups())) if errors else 0,
        "timeouts": int(errors.group(4)) if errors else 0,
        "non_2xx": _number(r"Non-2xx or 3xx responses:\s+(\d+)", text, int) or 0,
    }


def wrk_output(
    url: str,
    connections: int,
    duration_s: float,
    *,
    threads: int = 1,
    script: str | os.PathLike[str] | None = None,
    timeout_s: float = 10,
    latency: bool = False,
) -> str:
    """What `wrk -t threads -c connections -d duration [-s script] [--latency] --timeout timeout url` prints.

    The one place wrk runs, bounded in time; a failure raises RuntimeError with the end of wrk's stderr.
    """
    args = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration_s}s", f"--timeout={timeout_s}s"]
    if script:
        args += ["-s", str(script)]
    if latency:
        args.append("--latency")
    completed = run(args + [_checked(url)], timeout_s=duration_s + timeout_s + 30)
    if completed.returncode != 0:
        raise RuntimeError(f"wrk exited with code {completed.returncode}: {completed.stderr.strip()[-500:]}")
    return completed.stdout


def run_wrk(
    url: str,
    connections: int,
    duration_s: float,
    *,
    threads: int = 1,
    script: str | os.PathLike[str] | None = None,
    timeout_s: float = 10,
    latency: bool = False,
) -> dict[str, Any]:
    """wrk's report (parse_wrk) of a run of wrk_output's arguments."""
    return parse_wrk(wrk_output(url, connections, duration_s, threads=threads, script=script, timeout_s=timeout_s,
                                latency=latency))
