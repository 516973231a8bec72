"""No request can starve the hooks (finding 2 of the security review).

Eight slow conflicts reads from a read-only key once held every web thread,
and prompt hooks in every workspace timed out. Now the hooks run on threads
of their own, a credential may hold only a few web threads, heavy reads take
turns under a statement timeout. Threads are held here by requests whose
bodies never finish arriving, so what is asserted is order, not speed: a
hook answers while the web threads are provably taken.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection

from contexts import fairness
from contexts.errors import Busy
from contexts.tenancy import services
from tests.memflow_site.helpers import env_for, serving
from tests.reliability.conftest import database_url_for_tests

pytestmark = pytest.mark.django_db(transaction=True)

WEB_THREADS = 2
# Guards against a hang turning into a stuck suite; never a measure of speed.
GUARD_S = 60


@pytest.fixture
def server(acme: Any, tmp_path: Path) -> Iterator[Any]:
    env = env_for(tmp_path / "data", database_url=database_url_for_tests())
    env.update(
        MEMFLOW_WEB_THREADS=str(WEB_THREADS),
        MEMFLOW_HOOK_THREADS="2",
        MEMFLOW_KEY_CONCURRENCY="2",
        # A request past the limit waits this long for a slot, then is refused.
        MEMFLOW_KEY_WAIT_S="1",
    )
    with serving(env, "--no-worker", "--web-workers", "1") as served:
        yield served


def key_for(user: Any, workspace: Any, scope: str = "write") -> str:
    return services.apikey_create(user=user, workspace=workspace, scope=scope).raw


@contextmanager
def held_thread(url: str, raw_key: str) -> Iterator[socket.socket]:
    """A web thread taken by a POST whose body stops short; released on exit."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=GUARD_S)
    head = (
        "POST /api/v1/workspaces/acme/memories/ HTTP/1.1\r\n"
        f"Host: {host}\r\nAuthorization: Bearer {raw_key}\r\n"
        "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
    )
    sock.sendall(head.encode() + b'{"text": "held')
    try:
        yield sock
    finally:
        sock.close()


def wait_until_held(url: str, raw_key: str) -> None:
    """The held requests have arrived once a request of the same credential, having waited
    MEMFLOW_KEY_WAIT_S for one of them to finish, is refused."""
    with httpx.Client(timeout=GUARD_S) as client:
        for _ in range(1000):  # the held requests may still be on their way
            answer = client.get(
                f"{url}/api/v1/workspaces/acme/memories/",
                headers={"Authorization": f"Bearer {raw_key}"},
            )
            if answer.status_code == 429:
                break
    assert answer.status_code == 429, answer.text
    body = answer.json()
    assert body["code"] == "too_many_concurrent_requests"
    assert "none finished within 1 s" in body["detail"]
    assert int(answer.headers["Retry-After"]) >= 1


def test_a_hook_answers_while_every_web_thread_is_taken(server, acme, alice, bob):
    holder = key_for(bob, acme, "write")
    hook_key = key_for(alice, acme, "write")
    pool = ThreadPoolExecutor(1)
    with held_thread(server.url, holder), held_thread(server.url, holder):
        # Both of the process's web threads now wait for bodies that never come:
        # the holder's next request is refused by its concurrency limit…
        wait_until_held(server.url, holder)
        # …and another credential's ordinary read queues behind them.
        queued = pool.submit(
            httpx.get,
            f"{server.url}/api/v1/workspaces/acme/memories/",
            headers={"Authorization": f"Bearer {hook_key}"},
            timeout=GUARD_S,
        )
        hook = httpx.post(
            f"{server.url}/api/v1/hooks/session-start",
            json={"session_id": "fair-1", "cwd": "/tmp", "hook_event_name": "SessionStart"},
            headers={"Authorization": f"Bearer {hook_key}"},
            timeout=GUARD_S,
        )
        assert hook.status_code == 200, hook.text
        assert not queued.done()  # it cannot finish before a held thread is let go
    # The held threads are let go; the queued read then answers.
    assert queued.result().status_code == 200
    pool.shutdown()


def test_a_credential_past_its_limit_is_refused_and_others_are_served(server, acme, alice, bob):
    greedy = key_for(bob, acme, "write")
    other = key_for(alice, acme, "read")
    with held_thread(server.url, greedy), held_thread(server.url, greedy):
        wait_until_held(server.url, greedy)
    # Once released, the same credential is served again: as soon as the
    # server has seen the held connections close, which happens after the
    # client closed them (on a busy machine, after its next request or two).
    with httpx.Client(timeout=GUARD_S) as client:
        for _ in range(1000):
            answer = client.get(
                f"{server.url}/api/v1/workspaces/acme/memories/",
                headers={"Authorization": f"Bearer {greedy}"},
            )
            if answer.status_code != 429:
                break
    assert answer.status_code == 200, answer.text
    assert (
        httpx.get(
            f"{server.url}/api/v1/workspaces/acme/memories/",
            headers={"Authorization": f"Bearer {other}"},
            timeout=GUARD_S,
        ).status_code
        == 200
    )


def test_heavy_reads_take_turns_and_one_that_cannot_start_is_told_to_retry(
    acme, bob, make_key, api, settings
):
    settings.MEMFLOW_HEAVY_WAIT_S = 0
    client = api(make_key(bob, scope="read", workspace=acme))
    started, finish = threading.Event(), threading.Event()

    def a_long_read() -> None:
        with fairness.heavy_read("conflicts"):
            started.set()
            finish.wait(GUARD_S)

    runner = threading.Thread(target=a_long_read)
    runner.start()
    try:
        assert started.wait(GUARD_S)
        for path in ("conflicts/", "insights/", "stats/"):
            answer = client.get(f"/api/v1/workspaces/acme/{path}")
            assert answer.status_code == 503, (path, answer.content)
            assert answer.json()["code"] == "busy"
            assert answer["Retry-After"]
    finally:
        finish.set()
        runner.join(GUARD_S)
    assert client.get("/api/v1/workspaces/acme/conflicts/").status_code == 200


def test_a_heavy_read_past_its_statement_timeout_is_stopped_with_a_clear_code(settings, db):
    settings.MEMFLOW_HEAVY_STATEMENT_MS = 100
    with (
        pytest.raises(Busy) as refused,
        fairness.heavy_read("conflicts"),
        connection.cursor() as cursor,
    ):
        cursor.execute("SELECT pg_sleep(5)")
    assert refused.value.code == "statement_timeout"
    # The connection is usable afterwards, without the timeout.
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"


def test_web_processes_connect_under_a_statement_timeout(tmp_path):
    """`memflow serve` gives its web processes MEMFLOW_STATEMENT_TIMEOUT_MS; it reaches Postgres."""
    env = env_for(tmp_path / "data", database_url=database_url_for_tests())
    env["MEMFLOW_STATEMENT_TIMEOUT_MS"] = "1234"
    probe = (
        "import django; django.setup(); from django.db import connection; "
        "c = connection.cursor(); c.execute('SHOW statement_timeout'); print(c.fetchone()[0])"
    )
    env["DJANGO_SETTINGS_MODULE"] = "memflow_site.settings"
    shown = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=GUARD_S
    )
    assert shown.stdout.strip() == "1234ms", shown.stderr
