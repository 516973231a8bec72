"""Load answers 503, never 500 (issue 33, finding 5).

Two bulk imports of 1,000 and a forget-by-filter, at once, answered 500 from
the statement timeout; the overview, where login lands, answered a bare 500
while a large import ran (its conflict scan hit the time limit). The
contention is made here by holding a lock from a connection the test
controls, never by timing: a request that needs it waits until its
statement timeout, whatever the machine's speed, and the test releases the
lock once it has the answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import psycopg
import pytest
from django.conf import settings
from django.db import OperationalError, connection
from django.test import Client

from memories.models import CoreMemory, Memory
from tests.mcp.client import Mcp
from tests.memflow_site.helpers import (
    Served,
    database_url_for_tests,
    env_for,
    serving,
    wait_for_embeddings,
)

pytestmark = pytest.mark.django_db(transaction=True)

# Guards against a hang turning into a stuck suite; never a measure of speed.
GUARD_S = 120
# The advisory lock memories.services.writes._workspace_lock takes for every write.
WRITE_LOCK = 0x6D66_0002


@pytest.fixture(scope="module")
def busy_server(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """`memflow serve` with short time limits; it shares the tests' secret key, so a session
    made here (`force_login`) is a dashboard login there."""
    with django_db_blocker.unblock():
        url = database_url_for_tests()
    env = env_for(tmp_path_factory.mktemp("busy") / "data", database_url=url)
    env.update(
        MEMFLOW_SECRET_KEY=settings.SECRET_KEY,
        MEMFLOW_STATEMENT_TIMEOUT_MS="3000",
        MEMFLOW_HEAVY_STATEMENT_MS="500",
    )
    with serving(env, "--no-worker", "--web-workers", "1") as served:
        wait_for_embeddings(served)
        yield served


@contextmanager
def held(*statements: str) -> Iterator[None]:
    """Run `statements` in a transaction of another connection, kept open until exit."""
    with psycopg.connect(database_url_for_tests()) as other, other.transaction():
        for statement in statements:
            other.execute(statement)
        yield
    # The transaction wrote nothing: it only held locks, released as it ends.


# Three memories that mean nothing alike: no conflict to show once the scan can run.
UNALIKE = (
    "Deploys go out on Tuesday mornings after the standup.",
    "The office cat is called Rook and is fed at noon.",
    "Python code here is formatted with ruff, never black.",
)


def _bulk(n: int, tag: str) -> dict[str, Any]:
    return {"items": [{"text": f"{tag} fact number {i} about the build"} for i in range(n)]}


def test_a_bulk_import_that_waits_past_the_time_limit_is_503_and_writes_nothing(
    busy_server, acme, bob, make_key
):
    key = make_key(bob, workspace=acme)
    headers = {"Authorization": f"Bearer {key}"}
    url = f"{busy_server.url}/api/v1/workspaces/acme/memories/bulk/"
    # Another large write holds the workspace's write lock for longer than the time limit.
    with held(f"SELECT pg_advisory_xact_lock({WRITE_LOCK}, {acme.pk})"):
        answer = httpx.post(url, json=_bulk(200, "blocked"), headers=headers, timeout=GUARD_S)
        assert answer.status_code == 503, answer.text
        assert answer.json()["code"] == "statement_timeout"
        assert int(answer.headers["Retry-After"]) >= 1
    assert not Memory.objects.filter(workspace=acme).exists()  # nothing half-written
    # What the client is told to do works: the same import, sent again, lands whole.
    again = httpx.post(url, json=_bulk(200, "blocked"), headers=headers, timeout=GUARD_S)
    assert again.status_code == 200, again.text
    assert Memory.objects.filter(workspace=acme, text__startswith="blocked fact").count() == 200


def test_a_forget_by_filter_that_waits_past_the_time_limit_is_503_and_forgets_nothing(
    busy_server, acme, bob, make_key
):
    headers = {"Authorization": f"Bearer {make_key(bob, workspace=acme)}"}
    base = f"{busy_server.url}/api/v1/workspaces/acme/memories"
    made = httpx.post(f"{base}/bulk/", json=_bulk(20, "old"), headers=headers, timeout=GUARD_S)
    assert made.status_code == 200, made.text
    with held(f"SELECT pg_advisory_xact_lock({WRITE_LOCK}, {acme.pk})"):
        answer = httpx.post(
            f"{base}/forget/", json={"contains": "old fact"}, headers=headers, timeout=GUARD_S
        )
        assert answer.status_code == 503, answer.text
        assert answer.json()["code"] == "statement_timeout"
        assert answer.headers["Retry-After"]
    assert Memory.objects.filter(workspace=acme, forgotten_at__isnull=False).count() == 0


def test_an_mcp_tool_that_waits_past_the_time_limit_is_a_retryable_error(
    busy_server, acme, bob, make_key
):
    client = Mcp(f"{busy_server.url}/mcp/?workspace=acme", make_key(bob, workspace=acme))
    client.ok("memory", action="add", target="memory", content="CI runs on Buildkite agents")
    # Another session's edit holds the core document.
    with held(
        "SELECT 1 FROM memories_corememory"
        f" WHERE workspace_id = {acme.pk} AND scope = 'memory' FOR UPDATE"
    ):
        refused = client.error("memory", action="add", target="memory", content="Deploys on Friday")
    assert refused["code"] == "statement_timeout" and refused["retry_after"] >= 1
    doc = CoreMemory.objects.get(workspace=acme, scope=CoreMemory.Scope.WORKSPACE)
    assert "Deploys on Friday" not in doc.content


def _dashboard(served: Served, user: Any) -> httpx.Client:
    login = Client()
    login.force_login(user)
    cookies = {settings.SESSION_COOKIE_NAME: login.cookies[settings.SESSION_COOKIE_NAME].value}
    return httpx.Client(base_url=served.url, cookies=cookies, timeout=GUARD_S)


def test_the_overview_shows_what_it_could_compute_when_its_conflict_scan_runs_out_of_time(
    busy_server, acme, bob, make_key
):
    headers = {"Authorization": f"Bearer {make_key(bob, workspace=acme)}"}
    made = httpx.post(
        f"{busy_server.url}/api/v1/workspaces/acme/memories/bulk/",
        json={"items": [{"text": text} for text in UNALIKE]},
        headers=headers,
        timeout=GUARD_S,
    )
    assert made.status_code == 200, made.text
    browser = _dashboard(busy_server, bob)
    # The conflict scan (and the fading list) read the triage decisions; a
    # writer holding that table makes them wait until their time limit.
    with held("LOCK TABLE memories_triagedecision IN ACCESS EXCLUSIVE MODE"):
        page = browser.get("/w/acme/")
    assert page.status_code == 200, page.text[:500]
    html = page.text
    waiting = html.split("Possible conflicts")[1]
    assert "Couldn&#x27;t compute this now" in waiting.split("Fading insights")[0]
    assert "No conflicting memories found." not in html  # not a false "all clear"
    # The panels that could be computed are there.
    assert "<strong>3</strong> current memories" in html
    assert 'id="created-chart-title"' in html
    assert "Nothing has been injected yet" in html
    # Once the lock is gone the page is whole again.
    whole = browser.get("/w/acme/").text
    assert "Couldn&#x27;t compute this now" not in whole
    assert "No conflicting memories found." in whole


def test_a_dashboard_page_whose_read_runs_out_of_time_is_a_readable_503(busy_server, acme, bob):
    browser = _dashboard(busy_server, bob)
    with held("LOCK TABLE memories_injectionevent IN ACCESS EXCLUSIVE MODE"):
        page = browser.get("/w/acme/ledger/")
        fragment = browser.get("/w/acme/ledger/", headers={"HX-Request": "true"})
    assert page.status_code == 503, page.text[:500]
    assert int(page.headers["Retry-After"]) >= 1
    assert "The server is busy" in page.text and "<html" in page.text
    assert fragment.status_code == 503
    assert fragment.text.startswith('<div class="busy"')
    assert browser.get("/w/acme/ledger/").status_code == 200


def test_a_dashboard_page_stopped_by_the_statement_time_limit_is_a_readable_503(
    busy_server, acme, bob
):
    """Not a heavy read: the web process's own ceiling on every statement."""
    browser = _dashboard(busy_server, bob)
    with held("LOCK TABLE memories_memory IN ACCESS EXCLUSIVE MODE"):
        page = browser.get("/w/acme/memories/")
    assert page.status_code == 503, page.text[:500]
    assert page.headers["Retry-After"] == "5"
    assert "ran past its time limit" in page.text and "Reload this page" in page.text
    assert browser.get("/w/acme/memories/").status_code == 200


def test_a_lock_wait_past_lock_timeout_is_a_busy_refusal(db):
    """Postgres's own error for a lock wait that ran out (`lock_timeout`), classified."""
    from contexts.errors import busy_from_database  # here: the module runs on older code too

    with (
        held("LOCK TABLE memories_memory IN ACCESS EXCLUSIVE MODE"),
        pytest.raises(OperationalError) as raised,
        connection.cursor() as cursor,
    ):
        cursor.execute("SET lock_timeout = '100ms'")
        try:
            cursor.execute("SELECT count(*) FROM memories_memory")
        finally:
            cursor.execute("RESET lock_timeout")
    busy = busy_from_database(raised.value)
    assert busy is not None and busy.code == "busy" and busy.status_code == 503
    assert busy.headers["Retry-After"] == "1"
    assert busy_from_database(OperationalError("the server closed the connection")) is None


def test_no_database_connection_to_be_had_is_a_busy_refusal(db):
    """The web processes' pool had no connection free within its wait (psycopg_pool's error)."""
    from psycopg_pool import ConnectionPool, PoolTimeout

    from contexts.errors import busy_from_database

    with (
        ConnectionPool(database_url_for_tests(), min_size=1, max_size=1, open=True) as pool,
        pool.connection(),
        pytest.raises(PoolTimeout) as raised,
    ):
        pool.getconn(timeout=0.1)  # the only connection is taken
    busy = busy_from_database(raised.value)
    assert busy is not None and busy.code == "busy" and busy.status_code == 503
