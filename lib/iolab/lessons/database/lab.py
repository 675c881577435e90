"""Lesson 13's database and runs, one call per section.

Each is skipped with its reason.

Lesson 13's runs as the notebook calls them: PostgreSQL started once, each section's run kept for the claims, and a
part this machine cannot run (PostgreSQL missing, a front end missing) skipped with the reason.
"""


from iolab import params, postgres, registry, servers

from . import direct, front, model


def missing():
    """Why PostgreSQL cannot run here (not installed, or not part of the lab), or None."""
    return registry.missing("postgres")


class Lab:
    """PostgreSQL for the whole lesson, and what each section measured."""

    def __init__(self, plan):
        self.plan = plan
        self.found = {}
        self.skipped = {}
        self.db = None
        self.reason = missing()
        if self.reason is None:
            self.db = servers.start("postgres", max_connections=plan.max_connections)
            postgres.make_table(self.db.port, plan.rows)

    def why_not(self, key, needs_front=False):
        """The reason section `key` cannot run here, noted for the claims; None if it can."""
        reason = self.reason or (front.missing() if needs_front else None)
        if reason:
            self.skipped[key] = reason
            print(f"Skipped: {reason}.")
        return reason

    # --- 1 and 2 ---

    def drivers(self):
        if self.why_not("drivers", needs_front=True):
            return []
        plan = self.plan
        rows = front.drivers(self.db, plan.users, plan.pool, plan.query_ms, plan.run_s, plan.max_connections)
        self.found["drivers"] = rows
        return rows

    async def acquire(self):
        if self.why_not("acquire", needs_front=True):
            return None
        plan = self.plan
        timeout_s = plan.hold_ms / 10_000  # a tenth of the hold: far from both 0 and the hold
        found = {"forever": await front.acquire_wait(self.db, plan.pool, plan.hold_ms),
                 "bounded": await front.acquire_wait(self.db, plan.pool, plan.hold_ms, timeout_s)}
        self.found["acquire"] = found
        return found

    # --- 3 ---

    def held_across(self):
        if self.why_not("held_across", needs_front=True):
            return []
        plan = self.plan
        rows = front.held_across(self.db, plan.users, plan.pool, plan.held_db_ms, plan.held_other_ms, plan.run_s)
        self.found["held_across"] = rows
        return rows

    # --- 4 ---

    def backends(self):
        if self.why_not("backends"):
            return None
        plan = self.plan
        found = {"processes": direct.backends(self.db, plan.backend_connections),
                 "too_many": direct.too_many(self.db, plan.max_connections)}
        self.found["backends"] = found
        return found

    async def bouncer(self):
        reason = self.why_not("bouncer") or registry.missing("pgbouncer")
        if reason:
            self.skipped["bouncer"] = reason
            return None
        found = await direct.bouncer(self.db, self.plan.bouncer_clients, self.plan.bouncer_pool)
        self.found.setdefault("backends", {})["bouncer"] = found
        return found

    # --- 5 ---

    async def rows(self):
        if self.why_not("rows"):
            return []
        repeats = 5 if self.plan.quick else 20
        found = await direct.row_costs(self.db, self.plan.rows, repeats)
        self.found["rows"] = found
        return found

    def rows_on_the_loop(self):
        """Section 5 through tornado_db: needs section 1's CPU per query and the CPU per row just measured."""
        reason = self.why_not("rows_on_the_loop", needs_front=True)
        if not reason and not (self.found.get("drivers") and self.found.get("rows")):
            reason = "sections 1 and 5 did not both run"
            self.skipped["rows_on_the_loop"] = reason
        if reason:
            return []
        plan = self.plan
        per_row = {row["driver"]: row["cpu_us_per_row"] for row in self.found["rows"]}
        per_query = {row["how"]: row["front_cpu_ms"] for row in self.found["drivers"] if row["front_end"] == "tornado_db"}
        found = front.rows_runs(self.db, plan.users, plan.pool, plan.rows, per_row, per_query, plan.run_s)
        self.found["rows_on_the_loop"] = found
        return found

    # --- 6 ---

    async def round_trips(self):
        if self.why_not("round_trips"):
            return None
        found = await direct.round_trips(self.db, self.plan.statements)
        self.found["round_trips"] = found
        return found

    # --- 7 ---

    async def timeout(self):
        if self.why_not("faults"):
            return None
        found = await direct.client_timeout(self.db, self.plan.slow_ms, self.plan.timeout_ms)
        self.found.setdefault("faults", {})["timeout"] = found
        return found

    async def killed(self):
        if self.why_not("killed", needs_front=True):
            return None
        self.db, found = await front.killed(self.db, self.plan.pool, self.plan.query_ms, self.plan.users)
        self.found.setdefault("faults", {})["killed"] = found
        return found

    def stop(self):
        if self.db is not None:
            self.db.stop()
            self.db = None

    def results(self, exercises):
        """The lesson's results, in the shape the results file keeps."""
        plan = self.plan
        little = [pool_figures(row) for row in self.found.get("drivers", []) if pool_figures(row)]
        return {**self.found, "pool": {"little": little, "acquire": self.found.get("acquire")},
                "exercises": exercises, "skipped": self.skipped,
                "plan": {name: getattr(plan, name) for name in plan.__dataclass_fields__}}

    def save(self, exercises):
        return params.write_results(self.plan.results_path, self.results(exercises), default=str)


# --- What the notebook prints ------------------------------------------------------------------------------

def pool_figures(row):
    """Little's law on a row's pool, and its wait past P; None for a way with no pool."""
    pool = row.get("pool_stats")
    if not isinstance(pool, dict) or not pool.get("requests_num"):
        return None
    held_ms = pool["usage_ms"] / pool["requests_num"]
    return {"driver": row["driver"], "front_end": row["front_end"], "pool": row["pool"], "users": row["users"],
            "L": model.pool_in_use(pool["usage_ms"], row["duration_s"]), "X_T": row["rps"] * row["T_ms"] / 1000,
            "held_ms": held_ms, "wait_ms": pool["requests_wait_ms"] / pool["requests_num"],
            "predicted_wait_ms": model.pool_wait_s(row["users"], row["pool"], held_ms / 1000) * 1000}


def pool_lines(rows):
    """Little's law on each pool, and the wait past P: what the pool measured against the client's X · Z."""
    for row in rows:
        found = pool_figures(row)
        if found:
            print(f"{found['driver']} ({found['front_end']}): the pool says L = {found['L']:.2f} connections in use;"
                  f" the client's X · Z = {found['X_T']:.2f}. The mean wait for a connection was"
                  f" {found['wait_ms']:.1f} ms; a closed system with P = {found['pool']} servers predicts"
                  f" {found['predicted_wait_ms']:.1f} ms.")
