"""`memflow serve` keeps its database connections: a hook does not start a
Postgres backend of its own (a backend start and its cold catalog caches were
~50 ms of every `user-prompt`), and a burst of hooks never opens more
connections than the web processes' pools hold."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
from django.conf import settings
from django.db import connection

from tests.reliability.conftest import WEB_WORKERS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sessions_started() -> Iterator[Callable[[], int]]:
    """How many sessions this database has started since the fixture began.

    A login event trigger counts each as it starts, on a sequence (outside any
    transaction): exact at once, where the statistics views hear of a session
    only when its backend gets round to reporting.
    """
    with connection.cursor() as cursor:
        cursor.execute("CREATE SEQUENCE public.test_sessions_started")
        cursor.execute(
            "CREATE FUNCTION public.test_count_session() RETURNS event_trigger"
            " LANGUAGE plpgsql AS $$ BEGIN PERFORM nextval('public.test_sessions_started'); END $$"
        )
        cursor.execute(
            "CREATE EVENT TRIGGER test_count_session ON login"
            " EXECUTE FUNCTION public.test_count_session()"
        )

    def count() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT last_value, is_called FROM public.test_sessions_started")
            last_value, called = cursor.fetchone()
            return int(last_value) if called else 0

    try:
        # The counter counts: a session opened here is seen at once.
        psycopg.connect(**connection.get_connection_params()).close()
        assert count() == 1
        yield count
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP EVENT TRIGGER test_count_session")
            cursor.execute("DROP FUNCTION public.test_count_session()")
            cursor.execute("DROP SEQUENCE public.test_sessions_started")


def server_backends() -> set[int]:
    """The client backends of this database other than the test's own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return {int(pid) for (pid,) in cursor.fetchall()}


def test_hooks_reuse_the_servers_connections(live, acme, bob, make_key, sessions_started):
    client = httpx.Client(
        base_url=live.url, headers={"Authorization": f"Bearer {make_key(bob)}"}, timeout=60
    )

    def prompt(n: int) -> int:
        answer = client.post(
            "/api/v1/hooks/user-prompt",
            json={
                "session_id": f"pool-{n % 3}",
                "workspace": "acme",
                "prompt": f"Where did we leave the launch checklist, take {n}?",
            },
        )
        return answer.status_code

    for n in range(2 * WEB_WORKERS):  # every web process has opened its pool
        assert prompt(n) == 200
    before = sessions_started()
    assert [prompt(n) for n in range(20)] == [200] * 20
    # Twenty hooks one after another: served on the connections already open
    # (without a pool it was a session, and a backend start, each).
    after = sessions_started()
    assert after - before <= 2

    with ThreadPoolExecutor(max_workers=24) as pool:
        statuses = list(pool.map(prompt, range(48)))
    assert statuses == [200] * 48
    # A burst opens connections up to the pools' size, never one per request.
    assert len(server_backends()) <= WEB_WORKERS * settings.SERVE_DB_POOL  # what `serve` sets
