"""Lesson 07's results and closing claims, each checked against this run's own figures, on a line of its own."""

from iolab import registry, servers
from iolab.claims import ClaimFirst

from . import exercises, limits, lineup

LESSON = "07 C10k"
ARENA_KB = 1024  # pymalloc's arena since Python 3.10
CORE_SERVERS = ("tornado_app", "step4_event_loop", "threaded_app")


def results(plan, *, held, probe, selector_runs, meetings, scenes, sieges, slow_lineup, slow_most):
    """The run's figures, as the results file keeps them and the claims read them: the headline rows, and each
    section's figures whole (unrounded) under "holding", "meetings", "selector_runs", "scenes" and "sieges"."""
    sync_ran = any(run.serves_at_once and not run.skipped for run in scenes)
    return {
        "held": [step.row() for result in held.values() for step in result.steps],
        "wrk_c1000": [run.row() for run in scenes],
        "selectors": {name: result.rows() for name, result in selector_runs.items()},
        "limits": [meeting.row() for meeting in meetings.values()],
        "oom_killer": ({"beside": meetings["memory"].details["beside"]["fates"],
                        "alone": meetings["memory"].details["alone"]["fates"]} if "memory" in meetings else None),
        "slow_clients": [siege.row() for siege in sieges.values()],
        "exercises": exercises.statuses(),
        # An exercise whose experiment could not run here stays "not attempted", and says why.
        "skipped_exercises": {} if sync_ran else {"q9": "gunicorn or wrk is not installed"},
        "holding": {label: _held_figures(result) for label, result in held.items()},
        "probe": {"baseline_rss_kb": probe.baseline.footprint.rss_kb, "kb_per_connection": probe.last.kb_per_connection},
        "stack_size_kb": limits.stack_size_kb(),
        "meetings": {what: _meeting_figures(meeting) for what, meeting in meetings.items()},
        "selector_runs": {name: _held_figures(result) for name, result in selector_runs.items()},
        "scenes": [_scene_figures(run) for run in scenes],
        "sieges": {label: {**siege.row(), "fresh": len(siege.fresh_ms)} for label, siege in sieges.items()},
        "slow_lineup": slow_lineup,
        "slow_most": slow_most,
        "sync_ran": sync_ran,
        "servers_left_running": servers.running(),
        "solutions": plan.solutions,
    }


def _held_figures(result):
    """A holding.HoldResult's figures for the claims: its last step unrounded, and the steps that fell short."""
    last = result.last
    return {
        "held_all": result.held_all, "message": result.message, "baseline_threads": result.baseline.threads,
        "most_held": max((step.held for step in result.steps), default=0), "rows": result.rows(),
        # A step that held fewer than asked and named no limit.
        "short": [step.row() for step in result.steps if not (step.held == step.target or step.limit)],
        "last": {"held": last.held, "target": last.target, "threads": last.threads, "limit": last.limit,
                 "message": last.message, "kb_per_connection": last.kb_per_connection,
                 "vsz_kb_per_connection": last.vsz_kb_per_connection, "rss_mb": last.rss_mb, "row": last.row()},
    }


def _meeting_figures(meeting):
    """A provoke.Meeting's figures for the claims: the run that met the limit, the run after the fix."""
    met, fixed, details = meeting.met, meeting.fixed, meeting.details
    found = {"limit": meeting.limit, "named": meeting.named, "fix_held": meeting.fix_held, "row": meeting.row(),
             "met": {"limit": met.limit, "message": met.message, "held": met.held, "target": met.target,
                     "errors": met.errors, "connect_ms": met.connect_ms},
             "fixed": {"held": fixed.held, "target": fixed.target, "message": fixed.message,
                       "connect_ms": fixed.connect_ms}}
    if "backlog" in details:
        found["details"] = {"backlog": details["backlog"], "block_ms": details["block_ms"]}
    elif "beside" in details:
        found["details"] = {"beside": {"fates": details["beside"]["fates"]}, "alone": details["alone"]}
    elif "predicted_threads" in details:
        found["details"] = {"predicted_threads": details["predicted_threads"]}
    return found


def _scene_figures(run):
    """A scene.Scene's figures for the claims: wrk's and the lab client's, against the bound w / Z."""
    wrk = run.wrk or {}
    return {"server": run.server, "skipped": run.skipped, "serves_at_once": run.serves_at_once,
            "timeout_s": run.timeout_s, "wrk_max_ms": wrk.get("max_ms"), "wrk_timeouts": wrk.get("timeouts"),
            "lab_rps": run.lab.rps if run.lab else None, "bound_rps": run.bound_rps,
            "lab_over_timeout": run.lab_over_timeout, "lab_requests": len(run.lab_latencies_ms), "row": run.row(),
            "neighbours": run.neighbours}


def check_claims(found):
    """Check every claim of lesson 07 against `found` (the results), print one line each, and raise
    iolab.claims.ClaimsFailed naming each that failed with its values."""
    claims = ClaimFirst(LESSON)
    _holding(claims, found["holding"], found["probe"], found["stack_size_kb"])
    _limits(claims, found["meetings"])
    _selectors(claims, found["selector_runs"])
    _scenes(claims, found["scenes"])
    _slow_clients(claims, found["sieges"], found["slow_lineup"], found["slow_most"])
    running = found["servers_left_running"]
    claims.check("no server left running", not running, str(running) if running else "none", message=str(running))
    if found["solutions"]:
        expected = {"correct"} if found["sync_ran"] else {"correct", "not attempted"}
        statuses = found["exercises"]
        claims.check("with the solutions, every exercise is correct", set(statuses.values()) <= expected,
                     ", ".join(f"{q} {s}" for q, s in statuses.items()), message=str(statuses))
    return claims.report()


def _holding(claims, held, probe, stack_kb):
    claims.check("every core server ran", set(CORE_SERVERS) <= set(held), ", ".join(sorted(held)),
                 message=f"a core server did not run: {sorted(held)}")
    short = [(label, row) for label, result in held.items() for row in result["short"]]
    # A server that fell short names the limit it met; nothing is left unexplained.
    claims.check("a server that held fewer than asked named the limit it met", not short,
                 f"{len(short)} unexplained", message=f"fell short and named no limit: {short}")
    event_loops = {label: result for label, result in held.items() if lineup.is_event_loop(label)}
    # The event loops and the thread server hold N: N was chosen so that they fit.
    for label in [*event_loops, "threaded_app"]:
        if label not in held:
            continue
        result = held[label]
        last = result["last"]
        claims.check(f"{label} held all N", result["held_all"], f"{last['held']:,} of {last['target']:,}",
                     message=f"{label} did not hold {last['target']:,}: {result['message']}")
    for label, result in event_loops.items():
        step, baseline_threads = result["last"], result["baseline_threads"]
        # One thread whatever N: the threads did not grow with the connections.
        claims.check(f"{label}: one thread whatever N", step["threads"] == baseline_threads,
                     f"{step['threads']} threads holding {step['held']:,}, {baseline_threads} with none",
                     message=str((label, step["threads"], baseline_threads)))
        # RSS moves in whole arenas of Python's allocator (1 MiB each), so over n connections the slope is known
        # to within 1 MiB / n: at N = 100, 10 KiB either way.
        granularity_kb = ARENA_KB / step["held"]
        kb = step["kb_per_connection"]
        claims.check(f"{label}: an idle connection costs at most {lineup.TARGET_KB} KiB of RSS",
                     -granularity_kb < kb <= lineup.TARGET_KB + granularity_kb, f"{kb:.1f} KiB",
                     f"({-granularity_kb:.1f}, {lineup.TARGET_KB + granularity_kb:.1f}] KiB", message=str((label, kb)))
    if "threaded_app" in held:
        loops_kb = max((r["last"]["kb_per_connection"] for r in event_loops.values()), default=float("-inf"))
        _thread_per_connection(claims, held["threaded_app"], loops_kb, probe, stack_kb)


def _thread_per_connection(claims, threaded, loops_kb, probe, stack_kb):
    step = threaded["last"]
    grew = step["threads"] - threaded["baseline_threads"]
    claims.check("threaded_app: one thread per connection held", grew == step["held"],
                 f"{grew:,} more threads for {step['held']:,} connections", message=str(step["row"]))
    # Each thread reserves its whole stack as address space, and costs more RSS than an event loop's connection.
    vsz_kb = step["vsz_kb_per_connection"]
    claims.check("threaded_app: each connection reserves a whole thread stack of address space",
                 vsz_kb >= 0.9 * stack_kb, f"{vsz_kb:,.0f} KiB",
                 f"[{0.9 * stack_kb:,.0f}, ∞) KiB, 0.9 of a stack", message=str(vsz_kb))
    claims.check("threaded_app: a connection costs more RSS than on any event loop",
                 step["kb_per_connection"] > loops_kb, f"{step['kb_per_connection']:.1f} KiB",
                 f"({loops_kb:.1f}, ∞) KiB",
                 message=f"threaded_app {step['kb_per_connection']:.1f} KiB, event loops up to {loops_kb:.1f} KiB")
    # The probe's slope predicts the RSS at N (exercise 3's answer, judged by the same rule as the exercise).
    base_mb = probe["baseline_rss_kb"] / 1024
    predicted_mb = base_mb + step["held"] * probe["kb_per_connection"] / 1024
    claims.check("the probe's slope predicts threaded_app's RSS at N",
                 exercises.ThreadServerRss.holds(predicted_mb, step["rss_mb"]), f"{step['rss_mb']:.1f} MiB",
                 f"predicted {predicted_mb:.1f} MiB ± {exercises.ThreadServerRss.rel_tol:.0%} of the measured",
                 message=str((step["rss_mb"], predicted_mb)))


def _limits(claims, meetings):
    # Every limit run met the limit it was built for, named it, and the fix held every connection.
    for what, meeting in meetings.items():
        met, fixed = meeting["met"], meeting["fixed"]
        claims.check(f"{what}: met and named {meeting['limit']}", meeting["named"], met["limit"] or "none",
                     message=f"{what}: expected {meeting['limit']}, the lab said {met['limit']}: {met['message']}")
        claims.check(f"{what}: fell short before the fix", met["held"] < met["target"] or what == "backlog",
                     f"{met['held']:,} of {met['target']:,}", message=str((what, meeting["row"])))
        claims.check(f"{what}: the fix held every connection", meeting["fix_held"],
                     f"{fixed['held']:,} of {fixed['target']:,}",
                     message=str((what, meeting["row"], fixed["message"])))
    # With a spare descriptor the loop closed every connection it could not keep: none was left queued, unanswered.
    errors = meetings["server files, reserve"]["met"]["errors"]
    claims.check("with a spare descriptor, no connection was left unanswered", "no answer" not in errors, str(errors),
                 message=str(errors))
    _backlog(claims, meetings["backlog"])
    if "memory" in meetings:  # the cgroup run (the address-space run where no cgroup could be made)
        _oom_killer(claims, meetings["memory"]["details"])
    stacks = meetings["stacks"]
    predicted, held = stacks["details"]["predicted_threads"], stacks["met"]["held"]
    claims.check("the address space held no more threads than predicted", held <= predicted + 2,
                 f"{held} threads", f"[0, {predicted + 2}], {predicted} predicted + 2", message=str(stacks["row"]))


def _backlog(claims, backlog):
    block_ms, queue = backlog["details"]["block_ms"], backlog["details"]["backlog"]
    met_ms, fixed_ms = backlog["met"]["connect_ms"], backlog["fixed"]["connect_ms"]
    # While the loop sleeps, the queue holds at most backlog + 1; the rest wait for a SYN retry, a second or more.
    if queue is not None:  # read with ss; without it (iproute2) the queue's size is not known
        instant = sum(1 for ms in met_ms if ms < block_ms)
        claims.check("the accept queue held at most backlog + 1 connects at once",
                     instant <= queue + 1, f"{instant}",
                     f"[0, {queue + 1}]", message=str(backlog["row"]))
    else:
        claims.skip("the accept queue held at most backlog + 1 connects at once",
                    "ss (Debian package iproute2) is missing, so the queue's size is not known")
    slowest, fixed_slowest = max(met_ms), max(fixed_ms)
    claims.check("a full backlog costs a connect a second; the larger one does not",
                 slowest >= 900 and fixed_slowest < 900,
                 f"slowest {slowest:.0f} ms, then {fixed_slowest:.0f} ms with the larger backlog",
                 "[900, ∞) ms, then [0, 900) ms", message=str(backlog["row"]))


def _oom_killer(claims, details):
    fates = details["beside"]["fates"]
    # The OOM killer chose the bystander first (the highest oom_score), not the server that crossed the line;
    # the kernel's log says in which order it killed (None where it cannot be read: then the death is checked).
    claims.check("the OOM killer killed the bystander", fates["bystander"]["killed"],
                 "killed" if fates["bystander"]["killed"] else "alive", message=str(fates))
    claims.check("the bystander was its first victim, not the server",
                 fates["bystander"]["killed_order"] in (1, None) and fates["server"]["killed_order"] != 1,
                 f"bystander {fates['bystander']['killed_order']}, server {fates['server']['killed_order']}",
                 message=str(fates))
    alone = details["alone"]
    claims.check("alone in its group, the server was the one killed", alone["fates"]["server"]["killed"],
                 "killed" if alone["fates"]["server"]["killed"] else "alive", message=str(alone))


def _selectors(claims, selector_runs):
    select_run = selector_runs["select"]
    last = select_run["last"]
    # select() cannot watch a descriptor numbered FD_SETSIZE or above: the loop died there, and never held more.
    claims.check("select() died at descriptor FD_SETSIZE",
                 last["limit"] == limits.DIED and "out of range" in last["message"], last["limit"] or "no limit",
                 message=str(last["row"]))
    most = select_run["most_held"]
    claims.check("select() never held more than FD_SETSIZE", most <= limits.FD_SETSIZE, f"{most:,}",
                 f"[0, {limits.FD_SETSIZE:,}]", message=str(select_run["rows"]))
    for name in ("poll", "epoll"):
        claims.check(f"the loop on {name}() held every step", selector_runs[name]["held_all"],
                     f"{selector_runs[name]['last']['held']:,}", message=str(selector_runs[name]["message"]))


def _scenes(claims, scenes):
    for run in scenes:
        if run["skipped"]:
            claims.skip(f"wrk scene on {run['server']}", run["skipped"])
            continue
        # wrk leaves every answer slower than its timeout out of its latency figures.
        most_ms = run["timeout_s"] * 1000 * 1.01  # the timeout + 1%
        claims.timing(f"{run['server']}: wrk's max latency stays within its timeout", run["wrk_max_ms"], 0.0, most_ms,
                      neighbours=run.get("neighbours"), unit="ms", digits=0, message=str(run["row"]))
        if not run["serves_at_once"]:
            continue
        # Four blocking workers waiting Z each: at most w / Z requests a second, so most requests wait past wrk's
        # timeout; wrk counts those as timeouts, the lab's client measures them.
        # A ceiling (w / Z + 2%): others can only slow a run, so a run above it is never theirs to explain.
        claims.timing(f"{run['server']}: the lab's X stays under w / Z", run["lab_rps"], 0.0, 1.02 * run["bound_rps"],
                      neighbours=run.get("neighbours"), unit="req/s", digits=1, message=str(run["row"]), slower="below")
        over, total = run["lab_over_timeout"], run["lab_requests"]
        claims.check(f"{run['server']}: most requests waited past wrk's timeout", over >= 0.5 * total,
                     f"{over:,} of {total:,}", f"[{0.5 * total:,.0f}, {total:,}]", message=str(run["row"]))
        claims.check(f"{run['server']}: wrk counted timeouts", run["wrk_timeouts"] > 0, f"{run['wrk_timeouts']:,}",
                     "[1, ∞)", message=str(run["row"]))


def _slow_clients(claims, sieges, slow_lineup, slow_most):
    for label, siege in sieges.items():
        info, options = registry.get(label.split(",")[0]), slow_lineup[label]
        row = {key: value for key, value in siege.items() if key != "fresh"}  # slowloris.Siege.row()
        # Blocked once every thread that reads requests waits on a slow client; an event loop, or a thread per
        # connection, never is.
        predicted = None if info.waits_without_blocking else info.at_once(**options)
        said = f"blocked at {predicted}" if predicted else "never blocked"
        seen = f"blocked at {siege['blocked_at']}" if siege["blocked_at"] else "never blocked"
        claims.check(f"slow clients: {label} {said}", siege["blocked_at"] == predicted, seen,
                     message=str((label, row, predicted)))
        if predicted is None:
            claims.check(f"slow clients: {label} answered a fresh client beside all {slow_most}",
                         siege["served_beside"] == slow_most and bool(siege["fresh"]),
                         f"beside {siege['served_beside']}", message=str(row))
