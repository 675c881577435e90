"""Lesson 13's runs against a real PostgreSQL, at small sizes.

Against tornado_db too; skipped where PostgreSQL is missing.
"""

import asyncio

import pytest

from iolab import postgres, servers
from iolab.lessons.database import claims, front, lab, model

pytestmark = pytest.mark.skipif(lab.missing() is not None, reason=f"{lab.missing()}")


@pytest.fixture(scope="module")
def db():
    with servers.serve("postgres", max_connections=20) as server:
        postgres.make_table(server.port, 500)
        yield server


def test_the_database_parts_keep_their_claims(db, capsys):
    from iolab.lessons.database import direct

    found = {"backends": {"processes": direct.backends(db, 3), "too_many": direct.too_many(db, 20)},
             "rows": asyncio.run(direct.row_costs(db, 500, 3)),
             "round_trips": asyncio.run(direct.round_trips(db, 50)),
             "faults": {"timeout": asyncio.run(direct.client_timeout(db, 300, 100))}}
    assert found["backends"]["too_many"]["refused"]["number"] == 21
    checked = claims.check_claims(found)
    assert not checked.failed() and "✗" not in capsys.readouterr().out


def test_a_pool_past_p_is_read_by_the_pool_itself(db):
    """Little's law on the pool: L from psycopg_pool's usage_ms between X·T and P, with 6 users on a pool of 2."""
    if front.missing():
        pytest.skip(front.missing())
    T = 0.03
    with servers.serve("tornado_db", db_port=db.port, pool=2) as server:
        run = front.closed_run(server, f"/query?ms={T * 1000:.0f}&how=pool", 6, 24, T, db, "pool")
    stats = run["pool_stats"]
    assert run["errors"] == 0 and stats["requests_num"] == 24
    L = model.pool_in_use(stats["usage_ms"], run["duration_s"])
    assert run["rps"] * T <= L <= 2
    assert run["rps"] <= model.most_rps(24, 2, T)
