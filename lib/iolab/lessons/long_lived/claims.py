"""Lesson 12's closing claims, one printed line each.

Each is checked against this run's bounds.
"""

import importlib
import statistics

from iolab.claims import Claims

LESSON = "12-long-lived-connections"
MIB = 2**20
# The hand-built broadcaster is the floor's loop plus a lookup and a check per subscriber: that bookkeeping costs less
# than the send itself (measured on one CPU: 0.25-0.57 of it), so it stays under twice the floor.
FRAME_WITHIN = 2.0
# Sections 2, 6 and 7: each module's add_claims(claims, result), with the results key it reads.
OTHERS = (("long_poll_workers", "workers", "long polls on sync workers"), ("proxy", "proxy", "through a proxy"),
          ("browser", "browser", "the browser as a subscriber"))


def results(plan, *, memory_rows, workers, fanouts, ladder, slow, proxy, browser, exercises):
    """The lesson's results, as the results file keeps them (each delivery's time left out: the figures drew them)."""
    def kept(row):
        return {key: value for key, value in row.items() if key not in ("deliveries", "timeline")}

    return {"memory": [kept(row) for row in memory_rows], "long_poll_workers": workers,
            "fanout": [kept(row) for row in fanouts], "ladder": ladder, "slow_consumer": slow, "proxy": proxy,
            "browser": browser, "exercises": exercises,
            "plan": {"subscribers": plan.subscribers, "compressed_subscribers": plan.compressed_subscribers,
                     "fanout_subscribers": plan.fanout_subscribers, "repeats": plan.repeats,
                     "message_bytes": plan.message_bytes, "budget_gib": plan.budget_gib, "quick": plan.quick,
                     "cpus": plan.limits.cpus if plan.limits else None}}


def check_claims(found):
    """Check every claim of lesson 12 against `found` (the results), print one line each, and raise
    iolab.claims.ClaimsFailed naming each that failed with its values."""
    claims = Claims(LESSON)
    for row in found.get("memory") or []:
        memory(claims, row)
    if not found.get("memory"):
        claims.skip("memory per connection", "section 1 did not run")
    other(claims, found, *OTHERS[0])
    for row in found.get("fanout") or []:
        fanout(claims, row)
    if found.get("fanout"):
        long_poll(claims, found["fanout"])
    else:
        claims.skip("the last delivery at N × D", "section 3 did not run")
    if found.get("ladder"):
        ladder(claims, found["ladder"])
    else:
        claims.skip("the ladder and its floor", "section 4 did not run")
    for run in (found.get("slow_consumer") or {}).get("runs", []):
        slow_consumer(claims, run)
    if not (found.get("slow_consumer") or {}).get("runs"):
        claims.skip("a slow consumer", "section 5 did not run")
    for entry in OTHERS[1:]:
        other(claims, found, *entry)
    claims.report()
    return claims


def other(claims, found, key, module, title):
    """Sections 2, 6 and 7 check their own claims (their modules' add_claims), or say why they did not run."""
    result = found.get(key)
    if not result:
        claims.skip(title, f"section {dict(workers=2, proxy=6, browser=7)[module]} did not run")
        return
    importlib.import_module(f"{__package__}.{module}").add_claims(claims, result)


def name(row):
    deflate = ", deflate" if row.get("compression") else ""
    return f"{row['server']} {row['kind']}{deflate}"


def memory(claims, row):
    """1. RSS(N) = M0 + N·m: the fit over the smaller N predicts the RSS at the largest, within the fit's 99 %
    prediction interval (how far its own points lie off the line). 2. Uncompressed, the fit puts 10,000
    subscribers inside the budget (Binder's 2 GiB)."""
    n = row["ns"][-1]
    claims.within(f"{name(row)}: RSS at N = {n} as the fit of the smaller N predicts",
                  row["measured_last_bytes"] / MIB, row["last_low_bytes"] / MIB, row["last_high_bytes"] / MIB,
                  unit="MiB", digits=2,
                  message=f"{name(row)}: RSS at N = {n} was {row['measured_last_bytes'] / MIB:.2f} MiB; the fit of"
                          f" the smaller N ({row['kib_per_connection']:.1f} KiB a connection) predicted"
                          f" {row['predicted_last_bytes'] / MIB:.2f} MiB, within [{row['last_low_bytes'] / MIB:.2f},"
                          f" {row['last_high_bytes'] / MIB:.2f}] MiB")
    if not row.get("compression") and row["kind"] == "ws":
        budget = row["budget_bytes"]
        claims.within(f"{name(row)}: 10,000 subscribers fit in {budget / 2**30:g} GiB, predicted",
                      row["predicted_rss_10000_bytes"] / MIB, 0, budget / MIB, unit="MiB", digits=0,
                      message=f"{name(row)}: M0 + 10,000 × {row['kib_per_connection']:.1f} KiB ="
                      f" {row['predicted_rss_10000_bytes'] / MIB:.0f} MiB, more than {budget / MIB:.0f} MiB")


def fanout(claims, row):
    """3. Every subscriber got every broadcast; the last one at N × the bottleneck's CPU per delivery on the delivery
    path, measured in the same broadcast, within TOLERANCE and the repeats' own disagreement (model.fanout)."""
    label = f"{row['server']} {row['transport']}"
    if row["received"] != row["expected"]:
        claims.check(f"{label}: every subscriber got every message", False,
                     f"{row['received']} of {row['expected']}", "",
                     f"{label}: {row['received']} of {row['expected']} deliveries arrived")
        return
    # A band wider than ±50% no longer predicts: the claim then says it is a bound, and why. Beside other programs
    # the waits for the CPUs they held widen its top, where they may or may not have fallen on the delivery path.
    whole = (row["high_ms"] - row["low_ms"]) / (row["high_ms"] + row["low_ms"]) if row["high_ms"] > 0 else 0.0
    kind = (f"a bound: k from {row['cpus']:g} to {row['burst_cpus']:g} CPUs, as a quota lets a burst this short"
            if row["is_bound"] else f"a bound: the repeats disagree by {row['noise']:.0%}" if row["width"] > 0.5
            else f"a bound: ±{whole:.0%} with {row['excess_wait_ms']:.1f} ms of waits for CPUs others held"
            if whole > 0.5 else f"±{row['width']:.0%}")
    within = "within a bound of" if kind.startswith("a bound") else "at"
    claims.timing(f"{label}: the last of {row['subscribers']} {within} N × max(D_server, D_client, ΣD / CPUs)",
                  row["last_ms"], row["low_ms"], row["high_ms"], neighbours=row.get("neighbours"), unit="ms", digits=1,
                  message=f"{label}: the last subscriber got it after {row['last_ms']:.1f} ms; predicted"
                  f" {row['predicted_last_ms']:.1f} ms: the first's {row['first_ms']:.1f} ms, then"
                  f" {row['path_us_per_delivery']:.1f} µs (server, up to its last send) and"
                  f" {row['client_cpu_us_per_delivery']:.1f} µs (client) per delivery on {row['cpus']:g} CPU(s),"
                  f" {row['excess_wait_ms']:.1f} ms waiting for CPUs others held; within"
                  f" [{row['low_ms']:.1f}, {row['high_ms']:.1f}] ms ({kind}; the repeats' ratios"
                  f" {', '.join(f'{r:.2f}' for r in row['ratios'])})")


def long_poll(claims, rows):
    """4. Long polling pays a whole HTTP exchange per message (its answer and the re-poll): more server CPU per
    delivery than SSE or WebSocket."""
    tornado = {row["transport"]: row.get("exchange_us_per_delivery", row["cpu_us_per_delivery"])
               for row in rows if row["server"] == "tornado_push"}
    if "poll" not in tornado or len(tornado) < 2:
        claims.skip("long polling's CPU per delivery above SSE's and WebSocket's", "Tornado's three did not all run")
        return
    others = {t: d for t, d in tornado.items() if t != "poll"}
    dearest = max(others.values())
    claims.within("tornado_push: a long poll's CPU per delivery above SSE's and WebSocket's", tornado["poll"],
                  dearest, float("inf"), unit="µs", digits=1,
                  message=f"a long poll cost {tornado['poll']:.1f} µs per delivery, not more than "
                  + ", ".join(f"{t} {d:.1f} µs" for t, d in others.items()))


def ladder(claims, found):
    """5. No library's broadcaster spends less than the floor (one send per subscriber): its highest run is not
    below the floor's lowest. The hand-built one that frames once adds less per subscriber than one more send:
    under twice the floor (the rounds' median ratio, each round's two met the same subscribers at the same moment).
    Both are CPU time, not time waited, and each ratio's two met the same neighbours: judged whatever they were."""
    floor = found["floor"]
    lowest = min(floor["runs_us"])
    for rung in found["rungs"]:
        label = rung["label"]
        # Each side's repeats scatter; a broadcaster is below the floor only if every run of it is below every run
        # of the floor. The hand-built one is the floor's own loop with a check per subscriber, in the same server
        # and to the same subscribers: it is held to the floor from above.
        highest = max(rung["runs_us"])
        if rung["how"] != "frame":
            claims.within(f"{label}: no less than the floor's one send per subscriber", highest, lowest, float("inf"),
                          unit="µs", digits=2,
                          message=f"{label}: its runs ({', '.join(f'{r:.2f}' for r in rung['runs_us'])} µs per"
                                  f" delivery) all lie below the floor's lowest run, {lowest:.2f} µs: its CPU was not"
                                  " all counted")
        if rung["how"] == "frame":
            # Round by round: the two took turns over the same subscribers, so each pair met the same moment.
            ratio = statistics.median(ours / theirs for ours, theirs in zip(rung["runs_us"], floor["runs_us"]))
            claims.within(f"{label}: adds less than one more send(): within {FRAME_WITHIN:g}× the floor", ratio, 0,
                          FRAME_WITHIN, unit="× the floor", digits=2,
                          message=f"{label}: {rung['cpu_us_per_delivery']:.2f} µs per delivery is {ratio:.2f}× the"
                                  f" floor's {floor['cpu_us_per_send']:.2f} µs (the median of the rounds' ratios), more"
                                  f" than {FRAME_WITHIN:g}×")


def slow_consumer(claims, run):
    """6. With a broadcaster that awaits each send, the others' worst delivery is nearer the stall (less the time the
    kernel's buffers took to fill) than their delivery with no one stopped; with one that does not, nearer the
    latter. 7. The one that does not await
    buffers the stopped one's messages at the message rate × size, and drops it at its cap where the stall piles up
    more than the cap. A stall the kernel's buffers hold whole makes no one wait, and drops no one."""
    label = f"{run['server']} how={run['how']}"
    right, wrong = run["predicted_ms"], run["opposite_ms"]
    filled = run["buffers_filled"]
    verb = "wait behind" if run["blocking"] and filled else "stay on time beside"
    # A time: others holding the CPUs can only lengthen it, and excuse a miss only when staying on time was predicted.
    claims.nearer(f"{label}: the others {verb} a stopped subscriber", run["others_worst_ms"], right, wrong, "ms",
                  neighbours=run.get("neighbours"), slower="above")
    if run["blocking"]:
        return
    if run.get("growth_bytes_per_s") is not None:
        claims.nearer(f"{label}: the stopped one's unsent bytes grow at rate × size", run["growth_bytes_per_s"] / 1024,
                      run["predicted_growth_bytes_per_s"] / 1024, 0.0, "KiB/s")
    cap_kib, held_kib = run["cap_bytes"] // 1024, run["buffered_peak_bytes"] / 1024
    piled = run["piled_bytes"]
    if piled > run["cap_bytes"] + run["message_bytes"]:
        claims.check(f"{label}: the stopped subscriber is dropped at its cap of {cap_kib} KiB",
                     run["dropped"] >= 1, f"{run['dropped']} dropped, at most {held_kib:.0f} KiB held", "≥ 1 dropped",
                     f"{label}: no subscriber dropped; the server held up to {held_kib:.0f} KiB for it against a cap"
                     f" of {cap_kib} KiB")
    elif piled < run["cap_bytes"] - run["message_bytes"]:
        why = "its kernel buffers never filled" if not filled else f"{piled / 1024:.0f} KiB piled up in the server"
        claims.check(f"{label}: the stopped subscriber is kept: {why}, under its cap of {cap_kib} KiB",
                     run["dropped"] == 0, f"{run['dropped']} dropped, at most {held_kib:.0f} KiB held", "0 dropped",
                     f"{label}: {run['dropped']} dropped, though only {piled / 1024:.0f} KiB should have piled up"
                     f" against a cap of {cap_kib} KiB")
    else:
        claims.skip(f"{label}: dropped at its cap of {cap_kib} KiB, or not",
                    f"the stall piles up {piled / 1024:.0f} KiB, within a message of the cap")
