"""ab and wrk decoded.

Their report lines derived from the run's own numbers, ab's lone first request, wrk's 2 s cap, a run of errors.
"""

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from iolab import benchtools, registry, servers

# The write-ups' own wrk outputs (section 7 of the seeds): what their latency and rate lines describe.
SEED_FIRE_AND_FORGET = {"requests": 14_627, "timeouts": 11_849, "server": "Tornado, fire and forget, wrk -t10 -c1000 -d60s"}
SEED_ERRORS = {"rps": 124.63, "non_2xx": 7_486, "server": "gevent + Bottle, POST to a GET-only route"}


@dataclass
class AbRun:
    """One ab run's report, its own two "Time per request" lines, and what they imply."""

    requests: int
    concurrency: int
    report: str
    figures: dict
    keep_alive_requests: int

    @property
    def duration_s(self):
        return self.figures["duration_s"]

    @property
    def line_one_ms(self):
        """ab's "Time per request (mean)": concurrency × time taken / requests done."""
        return self.concurrency * self.duration_s * 1000 / self.figures["completed"]

    @property
    def line_two_ms(self):
        """ab's "(mean, across all concurrent requests)": time taken / requests done, that is 1 / throughput."""
        return self.duration_s * 1000 / self.figures["completed"]

    @property
    def implied_concurrency(self):
        """Little's law between the two lines: L = X × R = line one / line two."""
        return self.figures["ab_time_per_request_ms"] / self.figures["ab_time_per_request_all_ms"]


def run_ab(url, requests, concurrency, keep_alive=False, timeout_s=30):
    """ab's whole report (benchtools parses the common part; this lesson reads a few lines more)."""
    report = benchtools.ab_output(url, requests, concurrency, keep_alive, timeout_s, deadline_s=timeout_s + 60)
    kept = re.search(r"^Keep-Alive requests:\s+(\d+)", report, re.MULTILINE)
    return AbRun(requests, concurrency, report, benchtools.parse_ab(report), int(kept.group(1)) if kept else 0)


def report_lines(run, *starts):
    """The lines of ab's report that begin with any of `starts`, to quote them."""
    return "\n".join(line for line in run.report.splitlines() if line.strip().startswith(starts))


def post_script(body="amount=1"):
    """Lua for wrk: every request is a POST with a small form body, as the write-up's scripts sent."""
    return "\n".join([
        'wrk.method = "POST"',
        f'wrk.body = "{body}"',
        'wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"',
    ]) + "\n"


def wrk_post(url, connections, duration_s):
    """wrk POSTing to `url` for `duration_s`: benchtools.parse_wrk's figures, or the reason wrk cannot run."""
    reason = benchtools.missing_reason("wrk")
    if reason:
        return reason
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "post.lua"
        script.write_text(post_script())
        report = benchtools.wrk_output(url, connections=connections, duration_s=duration_s, script=script)
    return benchtools.parse_wrk(report) | {"report": report}


def wrk_post_to(name, connections, duration_s):
    """wrk POSTing to server `name`'s GET-only `/`, started for the run: wrk_post's figures, or why it cannot run."""
    reason = registry.missing(name)
    if reason:
        return f"{name} cannot start here: {reason}"
    with servers.serve(name) as server:
        return wrk_post(server.url + "/", connections, duration_s)
