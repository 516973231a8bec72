"""CSRF on every form: each route is found in the URL configuration, so a page
added later is covered without editing this file. A logged-in owner's POST
without the token is refused (403) by every dashboard route and every API
route reached with the session cookie, and nothing changes; with the token the
same POST gets through to the view, so the refusal is the CSRF check and not
something else."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import resolve

from contexts.models import AgentSession, ApiKey, Membership, Workspace
from memories.models import CoreMemory, Memory
from skills.models import Skill
from tests.api.routes import Route, all_routes

# Routes that are not the dashboard's: the API has its own test below, the
# static files are served by whitenoise before any view.
NOT_PAGES = ("api/", "static/")


def page_routes() -> list[Route]:
    return [r for r in all_routes() if not r.pattern.startswith(NOT_PAGES)]


def api_routes() -> list[Route]:
    return [r for r in all_routes() if r.pattern.startswith("api/v1/")]


def snapshot() -> tuple[int, ...]:
    models: tuple[Any, ...] = (
        User,
        Workspace,
        Membership,
        ApiKey,
        AgentSession,
        Memory,
        CoreMemory,
        Skill,
    )
    return tuple(model.objects.count() for model in models)


@pytest.fixture
def world(acme, alice, make_key, api) -> dict[str, str]:
    """Real rows, so each URL names something that exists."""
    client = api(make_key(alice))
    memory = client.post(
        "/api/v1/workspaces/acme/memories/", {"text": "Deploys go out on Tuesdays"}, format="json"
    ).json()
    key = ApiKey.objects.get(user=alice)
    return {"slug": "acme", "memory_id": str(memory["id"]), "key_id": str(key.pk)}


def owner_client(user: User) -> tuple[Client, str]:
    """A logged-in browser that enforces CSRF, and its token."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    browser.get("/login/")  # sets the csrftoken cookie
    return browser, browser.cookies["csrftoken"].value


def test_no_page_is_exempt_from_csrf():
    exempt = [
        r.pattern
        for r in page_routes()
        if getattr(resolve(r.fill(slug="acme")).func, "csrf_exempt", False)
    ]
    assert exempt == []


def test_every_dashboard_post_without_the_token_is_refused(world, alice):
    browser, token = owner_client(alice)
    before = snapshot()
    refused = []
    for route in page_routes():
        url = route.fill(**world)
        answer = browser.post(url, {"text": "x", "name": "x", "content": "x"})
        assert answer.status_code == 403, (route.pattern, answer.status_code)
        assert b"CSRF" in answer.content, route.pattern
        refused.append(route.pattern)
    assert snapshot() == before
    assert len(refused) >= 20

    # With the token the same POSTs reach the views: the ones that take a POST
    # (every form) answer something other than 405. They are all among the refused.
    accepting = []
    for route in page_routes():
        answer = browser.post(route.fill(**world), {}, HTTP_X_CSRFTOKEN=token)
        assert answer.status_code != 403 or b"CSRF" not in answer.content, route.pattern
        if answer.status_code != 405:
            accepting.append(route.pattern)
        if route.name == "logout":
            browser, token = owner_client(alice)
    print(f"{len(refused)} routes refuse a tokenless POST; {len(accepting)} take a POST")
    for name in ("apikey-revoke", "workspace-create", "memory-edit", "core-action", "login"):
        assert any(r.name == name for r in page_routes() if r.pattern in accepting), name


def test_the_api_refuses_a_cookie_post_without_the_token(world, alice):
    browser, _ = owner_client(alice)
    before = snapshot()
    for route in api_routes():
        for method in ("post", "put", "patch", "delete"):
            answer = getattr(browser, method)(
                route.fill(**world, event="user-prompt"), {}, content_type="application/json"
            )
            if answer.status_code == 405 and route.name in ("api-health", "api-schema", "api-docs"):
                continue  # read-only and open to all: nothing to forge
            assert answer.status_code == 403, (method, route.pattern, answer.status_code)
            if answer["Content-Type"].startswith("application/json"):
                assert "CSRF" in answer.json()["detail"], (method, route.pattern)
    assert snapshot() == before
