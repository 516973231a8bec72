"""Guessing is throttled: dashboard passwords per (username, address), API keys
per address, across every process of a `memflow serve`.

No test waits: the login cool-off is passed by ageing the recorded failures
in the database, the key window by moving the clock the limit reads
(`contexts.tenancy.auth._now`), and the live server's counts are cleared by hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import F
from django.test import Client

from contexts.tenancy import auth
from contexts.tenancy.auth import key_failures_clear

LOCKED = "Too many failed logins for this username from your address."


def _log_in(client: Client, username: str, password: str, **extra: Any) -> Any:
    return client.post("/login/", {"username": username, "password": password}, **extra)


def _logged_in(client: Client) -> bool:
    return client.get("/keys/").status_code == 200


def _pass_the_cool_off() -> None:
    """What the cool-off's passing looks like in the database."""
    cool_off = timedelta(seconds=settings.MEMFLOW_LOGIN_COOLOFF_S)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - cool_off - timedelta(seconds=1))


@pytest.fixture(autouse=True)
def no_earlier_failures(django_db_blocker: Any) -> None:
    """Counts an earlier test of this worker left (the cache table is no model, so
    no flush empties it) are not this test's."""
    from django.core.cache import caches

    with django_db_blocker.unblock():
        caches["key_failures"].clear()


# --- dashboard logins ------------------------------------------------------------------


def test_wrong_passwords_lock_the_login_and_the_page_says_until_when(alice):
    client = Client()
    limit = settings.MEMFLOW_LOGIN_FAILURES
    for _ in range(limit - 1):
        wrong = _log_in(client, "alice", "guess")
        assert wrong.status_code == 200
        assert "did not match" in wrong.content.decode()
    locked = _log_in(client, "alice", "guess")
    assert locked.status_code == 429
    page = locked.content.decode()
    assert LOCKED in page
    last = AccessAttempt.objects.get(username="alice").attempt_time
    until = last + timedelta(seconds=settings.MEMFLOW_LOGIN_COOLOFF_S)
    assert re.search(rf"Try again after <time [^>]*>{until:%H:%M} UTC</time>", page)
    assert 'name="password"' in page  # the login form, not a bare error page
    assert 0 < int(locked["Retry-After"]) <= settings.MEMFLOW_LOGIN_COOLOFF_S

    right = _log_in(client, "alice", "alice-password")
    assert right.status_code == 429
    assert LOCKED in right.content.decode()
    assert re.search(  # tries do not move it
        rf"Try again after <time [^>]*>{until:%H:%M} UTC</time>", right.content.decode()
    )
    assert not _logged_in(client)

    _pass_the_cool_off()
    after = _log_in(client, "alice", "alice-password")
    assert after.status_code == 302
    assert _logged_in(client)


def test_the_lock_holds_one_username_from_one_address(alice, bob):
    for _ in range(settings.MEMFLOW_LOGIN_FAILURES):
        _log_in(Client(), "alice", "guess")
    assert _log_in(Client(), "alice", "alice-password").status_code == 429
    # bob, from the same address, and alice from another, are not locked out.
    assert _log_in(Client(), "bob", "bob-password").status_code == 302
    elsewhere = Client()
    assert _log_in(elsewhere, "alice", "alice-password", REMOTE_ADDR="10.9.8.7").status_code == 302
    assert _logged_in(elsewhere)


def test_a_good_login_forgets_the_earlier_typos(alice):
    client = Client()
    for _ in range(2):
        for _ in range(settings.MEMFLOW_LOGIN_FAILURES - 1):
            assert _log_in(client, "alice", "typo").status_code == 200
        assert _log_in(client, "alice", "alice-password").status_code == 302
        client.logout()
    assert _log_in(client, "alice", "alice-password").status_code == 302


def test_force_login_needs_no_password_check(alice):
    client = Client()
    client.force_login(alice)
    assert _logged_in(client)


# --- API keys, in-process ---------------------------------------------------------------


@pytest.fixture
def few_failures(settings: Any) -> int:
    settings.MEMFLOW_KEY_FAILURES = 3
    return 3


def _workspaces(api: Any, raw: str, address: str = "127.0.0.1") -> Any:
    return api(raw).get("/api/v1/workspaces/", REMOTE_ADDR=address)


def test_wrong_keys_from_an_address_are_refused_until_the_window_passes_a_valid_key_never(
    alice, make_key, api, few_failures, monkeypatch
):
    valid = make_key(alice)
    for n in range(few_failures):
        wrong = _workspaces(api, f"mf_guess-{n}")
        assert (wrong.status_code, wrong.json()["code"]) == (401, "authentication_failed")

    refused = _workspaces(api, "mf_guess-next")
    assert refused.status_code == 429
    assert refused.json()["code"] == "too_many_failed_attempts"
    assert 0 < int(refused["Retry-After"]) <= settings.MEMFLOW_KEY_FAILURE_WINDOW_S
    # The agents on this address keep working: a valid key is never locked out.
    assert _workspaces(api, valid).status_code == 200
    # Another address is not held up either.
    assert _workspaces(api, "mf_guess-elsewhere", address="10.1.2.3").status_code == 401

    start = auth._now()
    monkeypatch.setattr(auth, "_now", lambda: start + settings.MEMFLOW_KEY_FAILURE_WINDOW_S + 1)
    assert _workspaces(api, "mf_guess-later").status_code == 401


def test_the_same_wrong_key_again_counts_once(alice, make_key, api, few_failures):
    for _ in range(3 * few_failures):
        assert _workspaces(api, "mf_a-stale-key-in-a-hook").status_code == 401
    assert _workspaces(api, "mf_one-more-guess").status_code == 401


def test_a_revoked_key_counts_and_clearing_unlocks(acme, alice, make_key, api, few_failures):
    from contexts.models import ApiKey
    from contexts.tenancy import services

    valid = make_key(alice)
    for _ in range(few_failures):
        created = services.apikey_create(user=alice)
        services.apikey_revoke(user=alice, key_id=created.key.pk)
        assert _workspaces(api, created.raw).status_code == 401
    assert _workspaces(api, "mf_guess").status_code == 429
    wrong_hook = api("mf_guess").post(
        "/api/v1/hooks/user-prompt",
        {"session_id": "s", "workspace": "acme", "prompt": "hi"},
        format="json",
    )
    assert (wrong_hook.status_code, wrong_hook.json()["code"]) == (429, "too_many_failed_attempts")
    hook = api(valid).post(
        "/api/v1/hooks/user-prompt",
        {"session_id": "s", "workspace": "acme", "prompt": "hi"},
        format="json",
    )
    assert hook.status_code == 200  # the agent's own hooks go on
    key_failures_clear("127.0.0.1")
    assert _workspaces(api, "mf_guess").status_code == 401
    assert ApiKey.objects.filter(revoked_at__isnull=True).count() == 1


# --- API keys and MCP, across the processes of a live server -------------------------------


@pytest.fixture
def cleared() -> Iterator[None]:
    """The live server's counts start empty and are left empty (they are not rows a
    transactional test's flush would remove)."""
    for address in ("127.0.0.1", "::1"):
        key_failures_clear(address)
    yield
    for address in ("127.0.0.1", "::1"):
        key_failures_clear(address)


LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.mark.django_db(transaction=True)
def test_the_limit_holds_across_web_processes_and_the_mcp_endpoint(
    live, cleared, acme, alice, make_key
):
    valid = make_key(alice)
    limit = 10  # the server's default MEMFLOW_KEY_FAILURES: its environment names none
    with httpx.Client(base_url=live.url, timeout=30) as http:
        for n in range(limit):
            # Alternate the REST API (either of the two processes) and /mcp.
            if n % 2:
                wrong = http.get(
                    "/api/v1/workspaces/", headers={"Authorization": f"Bearer mf_g{n}"}
                )
            else:
                wrong = http.post(
                    "/mcp/?workspace=acme",
                    json=LIST_TOOLS,
                    headers={
                        "Authorization": f"Bearer mf_g{n}",
                        "Accept": "application/json, text/event-stream",
                    },
                )
            assert (wrong.status_code, wrong.json()["code"]) == (401, "authentication_failed")

        for n in range(4):  # lands on both processes
            rest = http.get("/api/v1/workspaces/", headers={"Authorization": f"Bearer mf_h{n}"})
            assert rest.status_code == 429
            assert rest.json()["code"] == "too_many_failed_attempts"
            assert int(rest.headers["retry-after"]) > 0
        mcp = http.post(
            "/mcp/?workspace=acme",
            json=LIST_TOOLS,
            headers={
                "Authorization": "Bearer mf_h-mcp",
                "Accept": "application/json, text/event-stream",
            },
        )
        assert mcp.status_code == 429
        assert mcp.json()["code"] == "too_many_failed_attempts"
        assert int(mcp.headers["retry-after"]) > 0
        ok = http.get("/api/v1/workspaces/", headers={"Authorization": f"Bearer {valid}"})
        assert ok.status_code == 200  # a valid key is never locked out

        key_failures_clear("127.0.0.1")
        answer = http.get("/api/v1/workspaces/", headers={"Authorization": f"Bearer {valid}"})
        assert answer.status_code == 200
