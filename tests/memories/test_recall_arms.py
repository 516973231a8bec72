"""Recall's two arms side by side: on a second connection of the pool when one
is free, on the request's own connection otherwise, the same answer either way."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.utils import timezone

from memflow_site.runtime.db import bound_rows
from memories import selectors, services
from memories.services import RememberInput

pytestmark = pytest.mark.django_db(transaction=True)

BACKEND = "SELECT pg_backend_pid()"


def pid_here() -> int:
    return int(bound_rows(BACKEND, {})[0][0])


def test_with_a_pool_the_second_statement_runs_on_another_backend(pooled):
    here, side = selectors.beside(pid_here, BACKEND, {})
    assert here == pid_here()
    assert side[0][0] != here


def test_without_a_pool_or_in_a_transaction_both_run_here(pooled):
    with transaction.atomic():  # another connection would not see this transaction's writes
        here, side = selectors.beside(pid_here, BACKEND, {})
    assert side[0][0] == here


def test_no_pool_no_second_connection():
    here, side = selectors.beside(pid_here, BACKEND, {})
    assert side[0][0] == here


def test_a_busy_pool_runs_the_arms_one_after_the_other(pooled):
    pool = connection.pool  # type: ignore[attr-defined]
    pid_here()  # this connection is checked out
    pool.wait()
    taken = [pool.getconn() for _ in range(2)]  # the rest of the pool, max_size 3
    try:
        here, side = selectors.beside(pid_here, BACKEND, {})
    finally:
        for conn in taken:
            pool.putconn(conn)
    assert side[0][0] == here


def test_a_failing_side_statement_raises_here_and_returns_its_connection(pooled):
    from django.db import ProgrammingError

    with pytest.raises(ProgrammingError):
        selectors.beside(pid_here, "SELECT no_such_column FROM memories_memory", {})
    stats = connection.pool.get_stats()  # type: ignore[attr-defined]
    assert stats["pool_available"] >= 1
    assert pid_here() > 0  # this connection is still usable


def test_recall_answers_the_same_with_the_arms_side_by_side(acme, pooled):
    texts = [
        "Deploys run from the release/2026.12 branch through deploy.sh",
        "The staging database is reset every Monday at 06:00",
        "Use uv, not pip, to manage the project's Python environments",
        "Rocket telemetry lands in s3://acme-telemetry/raw/",
        "The launch checklist lives in docs/launch/CHECKLIST.md",
    ]
    for text in texts:
        services.memory_remember(workspace=acme, item=RememberInput(text=text))
    queries = ["where is the launch checklist", "deploy.sh", "python environments", "telemetry"]
    now = timezone.now()  # retention, part of the score, moves with the clock

    def answers() -> list[list[tuple[int, float]]]:
        return [
            [
                (h.memory.pk, round(h.score, 9))
                for h in selectors.memory_recall(workspace=acme, query=q, k=3, now=now).hits
            ]
            for q in queries
        ]

    side_by_side = answers()
    with transaction.atomic():
        one_after_the_other = answers()
    assert side_by_side == one_after_the_other
    assert side_by_side[0][0][0] != side_by_side[1][0][0]  # the queries find different entries


@pytest.mark.parametrize("pooled", [6], indirect=True)  # room for one more connection below
def test_every_pooled_connection_searches_with_the_settings_set_once(pooled):
    from django.test.utils import CaptureQueriesContext

    def shown() -> tuple[str, str]:
        with connection.cursor() as cursor:
            cursor.execute("SHOW hnsw.ef_search")
            ef = cursor.fetchone()[0]
            cursor.execute("SHOW hnsw.iterative_scan")
            return ef, cursor.fetchone()[0]

    assert shown() == ("64", "relaxed_order")
    connection.close()  # back to the pool; the next request checks it out again
    with CaptureQueriesContext(connection) as queries:
        assert shown() == ("64", "relaxed_order")
    assert not [q for q in queries.captured_queries if q["sql"].startswith("SET ")]
    # A connection the pool opens later is set up too.
    first = pid_here()
    connection.close()
    pool = connection.pool  # type: ignore[attr-defined]
    taken = [pool.getconn() for _ in range(pool.get_stats()["pool_available"])]
    try:
        assert shown() == ("64", "relaxed_order")
        assert pid_here() not in {first, *(c.info.backend_pid for c in taken)}
    finally:
        connection.close()
        for conn in taken:
            pool.putconn(conn)
