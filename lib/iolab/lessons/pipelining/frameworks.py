"""Tornado's "about 4x the second fastest", and its synchronous claim, predicted from the ladder's measured D's.

The seed: hello world on Django, web.py and CherryPy, one process each, against Tornado behind nginx with four
processes; Tornado "about 4x the second-fastest", and "33% ahead on a single core". Here Django runs on gunicorn's
sync worker (WSGI, as under Apache's mod_wsgi), CherryPy on its own server; web.py is not maintained.
"""

import math
from dataclasses import asdict, dataclass

from . import runs

TORNADO = "tornado_app"
TORNADO_FOUR = "nginx + 4 tornado"
SEED_RIVALS = ("django_gunicorn", "cherrypy_app")  # the seed's Django and CherryPy, as the ladder labels them
SEED_RATIO = 4.0  # "about 4x the second-fastest"
SEED_SINGLE_LEAD = 1.33  # "33% ahead on a single core"
SEED_PROCESSES = 4
# "About 4x": a ratio that rounds to 4, 3.5 to 4.5.
ABOUT = (3.5, 4.5)
# The wait of the synchronous comparison, in ms: none (D decides), and waits long beside any D here.
SYNC_WAITS_MS = (0, 1, 10, 100)


@dataclass(frozen=True)
class FourTimes:
    """Tornado against the seed's second fastest framework, from one ladder's rows."""

    second: str  # the seed's rival with the least D
    tornado_us: float  # D of one Tornado process
    second_us: float
    lead: float  # D_second / D_tornado: one process each, each on a core of its own, Tornado serves this many times
    tornado_rps: float
    second_rps: float
    cores: float
    rivals: dict  # {label: D in µs} of every seed rival that ran
    four_us: float = math.nan  # D of nginx and four Tornado processes together, per request (the whole stack)
    four_rps: float = math.nan
    four_reach_rps: float = math.nan  # what the stack can reach here: the utilization law on its D, client, cores
    four_edges: float = 1.0

    @property
    def four_ran(self):
        return math.isfinite(self.four_rps)

    @property
    def predicted_on_four_cores(self):
        """The seed's setup from this run's D's: four processes on four free cores, against one of the rival's.

        Four cores give the stack at most 4 / D_stack (nginx's share included, where the stack ran; else Tornado's
        D alone), the rival at most 1 / D_second: their ratio. The client's CPU would lower it."""
        stack_us = self.four_us if self.four_ran else self.tornado_us
        return SEED_PROCESSES * self.second_us / stack_us

    @property
    def measured_ratio(self):
        """This machine's own: nginx and four Tornado processes against the second, on the cores this run had."""
        return self.four_rps / self.second_rps if self.four_ran else math.nan

    @property
    def most_ratio(self):
        """The most the measured ratio can be: the stack's reach from its D (times its window's edges) over the
        rival's measured rate."""
        return self.four_reach_rps * self.four_edges / self.second_rps if self.four_ran else math.nan

    @property
    def verdict(self):
        """The seed's 4x is within reach if four processes, perfectly spread on four cores, allow about 4x or more."""
        return "reproduced" if self.predicted_on_four_cores >= ABOUT[0] else "refuted"

    def row(self):
        return {**asdict(self), "predicted_on_four_cores": self.predicted_on_four_cores,
                "measured_ratio": self.measured_ratio, "most_ratio": self.most_ratio, "verdict": self.verdict}


def four_times(ladder_rows, cores):
    """FourTimes from the ladder's rows (Measured.row() with "server"), or None where Tornado or no rival ran."""
    by = {row["server"]: row for row in ladder_rows}
    rivals = {label: by[label]["demand_us"] for label in SEED_RIVALS if label in by}
    if TORNADO not in by or not rivals:
        return None
    second = min(rivals, key=rivals.get)
    tornado, rival = by[TORNADO], by[second]
    four = {}
    if TORNADO_FOUR in by:
        stack = by[TORNADO_FOUR]
        reach = runs.ceilings(stack["demand_us"], stack["client_us"], cores, stack["client_threads"], stack["thread_us"])
        four = {"four_us": stack["demand_us"], "four_rps": stack["rps"], "four_reach_rps": min(reach.values()),
                "four_edges": stack["edges"]}
    return FourTimes(second, tornado["demand_us"], rival["demand_us"], rival["demand_us"] / tornado["demand_us"],
                     tornado["rps"], rival["rps"], cores, rivals, **four)


def sentence(result, by):
    """The verdict in sentences, from this run's figures. `by`: {label: ladder row}, for the split of each D."""
    t, s = by[TORNADO], by[result.second]
    others = [f"{label} {us:.0f} µs" for label, us in result.rivals.items() if label != result.second]
    text = (
        f"Of the seed's rivals, {result.second} is second: D {result.second_us:.0f} µs"
        + (f" ({', '.join(others)})" if others else "") + "."
        f" Tornado's D is {result.tornado_us:.0f} µs. So one Tornado process serves {result.lead:.2f} times as"
        f" many requests as one of {result.second}'s, on a core each. The seed says 1.33 times on a single core."
        f" The gap is the CPU per request: {result.second} spends {s['user_us']:.0f} µs in user space and"
        f" {s['system_us']:.0f} µs in the kernel, Tornado {t['user_us']:.0f} µs and {t['system_us']:.0f} µs."
    )
    if result.four_ran:
        text += (
            f" Behind nginx, four Tornado processes cost {result.four_us:.0f} µs per request together, nginx"
            f" included. On four free cores they would serve {result.predicted_on_four_cores:.1f} times"
            f" {result.second}'s one process: four processes times the lead, less nginx's share."
            f" This machine has {result.cores:g} CPU(s): they measured {result.four_rps:,.0f} req/s,"
            f" {result.measured_ratio:.1f} times {result.second}'s {result.second_rps:,.0f}."
            f" Its D, the client and the cores allow at most {result.most_ratio:.1f} times."
        )
    else:
        text += (
            f" Four processes on four free cores multiply the lead by at most four:"
            f" {result.predicted_on_four_cores:.1f} times, nginx's share left out."
        )
    predicted = result.predicted_on_four_cores
    if result.verdict == "refuted":
        text += (f" So the seed's 4x is refuted here: even four perfect processes would give {predicted:.1f} times,"
                 f" under {ABOUT[0]:g}.")
    else:
        text += (f" So the seed's 4x is reproduced: four perfect processes would give {predicted:.1f} times."
                 " It is mostly the four processes, not Tornado's code. They fall short of four times one process"
                 " where nginx and the client share the cores.")
    return text


def sync_rate_rps(wait_ms, demand_us, workers=1, cores=math.inf):
    """A blocking server's throughput with every worker busy: each holds one request for the wait plus its CPU,
    and the workers share the cores for the CPU part."""
    return min(workers / (wait_ms / 1e3 + demand_us / 1e6), cores * 1e6 / demand_us)


def sync_table(tornado_us, django_us, waits_ms=SYNC_WAITS_MS):
    """[(wait ms, Tornado's req/s, Django's req/s, their ratio)] predicted for one blocking worker each."""
    rows = []
    for wait in waits_ms:
        tornado, django = sync_rate_rps(wait, tornado_us), sync_rate_rps(wait, django_us)
        rows.append((wait, tornado, django, tornado / django))
    return rows
