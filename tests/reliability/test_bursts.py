"""A burst of writes from one credential lands (issue 33, finding 6).

Thirty concurrent core-memory adds from one key: 26 were refused with 429 at
once, and a client honouring Retry-After still lost ten. Now a request past
the credential's concurrency waits its turn (MEMFLOW_KEY_WAIT_S) instead.
The contention is made by holding the core document's row lock from a
connection the test controls: the first requests provably wait in the
database while the rest wait for a slot, and none is answered until the
test lets go.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest

from memories.models import CoreMemory
from tests.memflow_site.helpers import Served, database_url_for_tests, env_for, serving

pytestmark = pytest.mark.django_db(transaction=True)

KEY_CONCURRENCY = 2
BURST = 30
# Guards against a hang turning into a stuck suite; never a measure of speed.
GUARD_S = 60


@pytest.fixture(scope="module")
def burst_server(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with django_db_blocker.unblock():
        url = database_url_for_tests()
    env = env_for(tmp_path_factory.mktemp("bursts") / "data", database_url=url)
    env.update(MEMFLOW_KEY_CONCURRENCY=str(KEY_CONCURRENCY), MEMFLOW_KEY_WAIT_S=str(GUARD_S))
    with serving(env, "--no-worker", "--web-workers", "1") as served:
        yield served


def waiting_on_locks(probe: psycopg.Connection[Any]) -> int:
    row = probe.execute(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'"
    ).fetchone()
    return int(row[0]) if row else 0


def until_waiting_on_locks(probe: psycopg.Connection[Any], n: int) -> None:
    deadline = time.monotonic() + GUARD_S
    while waiting_on_locks(probe) < n:
        assert time.monotonic() < deadline, "the first requests never reached the lock"
        time.sleep(0.05)


def test_thirty_concurrent_core_adds_from_one_key_all_land(burst_server, acme, bob, make_key):
    headers = {"Authorization": f"Bearer {make_key(bob, workspace=acme)}"}
    url = f"{burst_server.url}/api/v1/workspaces/acme/core/memory/"
    with httpx.Client(headers=headers, timeout=GUARD_S) as client:
        first = client.post(url, json={"action": "add", "content": "The burst starts here."})
        assert first.status_code == 200, first.text
        facts = [f"Burst fact number {n:02d}." for n in range(BURST)]
        with (
            psycopg.connect(database_url_for_tests(), autocommit=True) as probe,
            psycopg.connect(database_url_for_tests()) as holder,
            ThreadPoolExecutor(BURST) as pool,
        ):
            # Another session's edit holds the document while the burst arrives.
            holder.execute(
                "SELECT 1 FROM memories_corememory"
                f" WHERE workspace_id = {acme.pk} AND scope = 'memory' FOR UPDATE"
            )
            answers = [
                pool.submit(client.post, url, json={"action": "add", "content": fact})
                for fact in facts
            ]
            # The credential's first requests wait in the database, the others for a slot:
            # none is refused, though thirty are in flight against a limit of two.
            until_waiting_on_locks(probe, KEY_CONCURRENCY)
            assert waiting_on_locks(probe) == KEY_CONCURRENCY
            assert not any(answer.done() for answer in answers)
            holder.rollback()
            statuses = [answer.result().status_code for answer in answers]
    assert statuses == [200] * BURST, [a.result().text for a in answers if a.result().is_error]
    content = CoreMemory.objects.get(workspace=acme, scope=CoreMemory.Scope.WORKSPACE).content
    assert all(fact in content for fact in facts)
    assert "The burst starts here." in content
