"""Every workspace-scoped route, tried by someone who is not a member.

The routes are discovered from the URL configuration, so an endpoint added
later is covered without touching this file. An outsider must get 404 (not
403, not 405: the workspace's existence is not revealed), the JSON body must
carry nothing of the workspace, and nothing may change.
"""

from __future__ import annotations

import pytest
from django.test import Client

from contexts.models import AgentSession, ApiKey, Membership, SessionEvent, Workspace
from tests.api.routes import workspace_api_routes, workspace_page_routes

METHODS = ["get", "post", "put", "patch", "delete"]


def _snapshot() -> tuple[int, ...]:
    return tuple(
        model.objects.count()
        for model in (Workspace, Membership, ApiKey, AgentSession, SessionEvent)
    )


def test_the_matrix_finds_the_workspace_routes():
    patterns = {route.pattern for route in workspace_api_routes()}
    assert "api/v1/workspaces/<slug:slug>/" in patterns
    assert "api/v1/workspaces/<slug:slug>/members/" in patterns
    assert len(workspace_page_routes()) >= 5


@pytest.mark.parametrize("route", workspace_api_routes(), ids=lambda r: r.pattern)
def test_an_outsiders_key_sees_nothing(route, acme, evil, mallory, make_key, api):
    client = api(make_key(mallory, scope="admin"))
    before = _snapshot()
    for method in METHODS:
        response = getattr(client, method)(route.fill(slug="acme"), {}, format="json")
        assert response.status_code == 404, (method, route.pattern, response.content)
        body = response.json()
        assert body["code"] == "workspace_not_found"
        text = response.content.decode()
        assert "Acme Rockets" not in text and "alice" not in text
    assert _snapshot() == before


@pytest.mark.parametrize("route", workspace_api_routes(), ids=lambda r: r.pattern)
def test_a_key_restricted_to_another_workspace_sees_nothing(route, acme, alice, make_key, api):
    own = Workspace.objects.create(slug="alice-solo", name="Solo")
    Membership.objects.create(user=alice, workspace=own, role="owner")
    client = api(make_key(alice, scope="admin", workspace=own))
    before = _snapshot()
    for method in METHODS:
        response = getattr(client, method)(route.fill(slug="acme"), {}, format="json")
        assert response.status_code == 404, (method, route.pattern)
    assert _snapshot() == before


@pytest.mark.parametrize("route", workspace_api_routes(), ids=lambda r: r.pattern)
def test_without_a_key_nothing_is_answered(route, acme):
    client = Client()
    for method in METHODS:
        response = getattr(client, method)(route.fill(slug="acme"))
        assert response.status_code == 401, (method, route.pattern)


@pytest.mark.parametrize("route", workspace_page_routes(), ids=lambda r: r.pattern)
def test_an_outsider_cannot_open_a_dashboard_page(route, acme, evil, mallory, client):
    client.force_login(mallory)
    response = client.get(route.fill(slug="acme"))
    assert response.status_code == 404
    assert b"Acme Rockets" not in response.content


def _page_snapshot() -> tuple[int, ...]:
    from contexts.models import ContextDocument, Declaration
    from memories.models import CoreMemory, Memory
    from skills.models import Skill

    return (
        *_snapshot(),
        *(m.objects.count() for m in (Memory, CoreMemory, Declaration, ContextDocument, Skill)),
    )


@pytest.mark.parametrize("route", workspace_page_routes(), ids=lambda r: r.pattern)
def test_a_dashboard_post_by_an_outsider_or_a_viewer_changes_nothing(
    route, acme, evil, mallory, victor, alice, make_key, api
):
    memory = api(make_key(alice)).post(
        "/api/v1/workspaces/acme/memories/", {"text": "Deploys go out on Tuesdays"}, format="json"
    )
    url = route.fill(
        slug="acme", memory_id=str(memory.json()["id"]), target="memory", action="edit"
    )
    form = {"text": "x", "content": "x", "action": "add", "name": "x", "source_text": "x"}
    before = _page_snapshot()
    outsider = Client()
    outsider.force_login(mallory)
    answer = outsider.post(url, form)
    assert answer.status_code == 404, (route.pattern, answer.status_code)
    assert b"Acme Rockets" not in answer.content
    viewer = Client()
    viewer.force_login(victor)
    answer = viewer.post(url, form)
    # Refused, or a read-only page that renders whatever the method (200): either
    # way nothing may have changed.
    assert answer.status_code in (200, 403, 404, 405), (route.pattern, answer.status_code)
    assert _page_snapshot() == before
