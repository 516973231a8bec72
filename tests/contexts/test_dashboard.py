from __future__ import annotations

import pytest

from contexts.models import ApiKey
from contexts.tenancy.selectors import hash_key


def test_pages_need_a_login(db, client):
    response = client.get("/w/acme/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_logging_in_lands_on_my_workspace(acme, client):
    response = client.post(
        "/login/", {"username": "alice", "password": "alice-password"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/w/acme/"
    assert b"Acme Rockets" in response.content


def test_a_wrong_password_is_explained(acme, client):
    response = client.post("/login/", {"username": "alice", "password": "nope"})
    assert b"did not match" in response.content


@pytest.mark.parametrize(
    "page", ["", "memories/", "core/", "sessions/", "declarations/", "skills/", "settings/"]
)
def test_every_workspace_page_renders_for_a_member(page, acme, bob, client):
    client.force_login(bob)
    response = client.get(f"/w/acme/{page}")
    assert response.status_code == 200
    assert b"Acme Rockets" in response.content  # the switcher names the current workspace


def test_the_switcher_lists_only_my_workspaces(acme, evil, bob, client):
    client.force_login(bob)
    html = client.get("/w/acme/").content.decode()
    assert "/w/acme/" in html
    assert "/w/evil/" not in html and "lair" not in html


def test_a_user_without_workspaces_is_asked_to_create_one(mallory, client):
    client.force_login(mallory)
    response = client.get("/", follow=True)
    assert response.redirect_chain[-1][0] == "/workspaces/new/"
    created = client.post("/workspaces/new/", {"slug": "lab", "name": "Lab"}, follow=True)
    assert created.redirect_chain[-1][0] == "/w/lab/"


def test_a_taken_slug_is_explained_on_the_form(acme, mallory, client):
    client.force_login(mallory)
    response = client.post("/workspaces/new/", {"slug": "acme"})
    assert b"is taken" in response.content


def test_a_created_key_is_shown_once(acme, alice, client):
    client.force_login(alice)
    response = client.post("/keys/", {"name": "ci", "scope": "read", "workspace": "acme"})
    html = response.content.decode()
    key = ApiKey.objects.get(name="ci")
    raw = html.split('<pre id="raw-key" tabindex="0">')[1].split("</pre>")[0]
    assert hash_key(raw) == key.key_hash
    assert key.workspace is not None and key.workspace.slug == "acme"
    assert raw not in client.get("/keys/").content.decode()


def test_the_key_panel_swaps_in_place_for_htmx(alice, client):
    client.force_login(alice)
    response = client.post("/keys/", {"name": "htmx", "scope": "write"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="key-panel">')
    assert "<html" not in html


def test_revoking_a_key_from_the_dashboard(alice, client, make_key, api):
    raw = make_key(alice)
    key = ApiKey.objects.get(key_hash=hash_key(raw))
    client.force_login(alice)
    client.post(f"/keys/{key.pk}/revoke/")
    assert api(raw).get("/api/v1/workspaces/").status_code == 401


def test_nobody_revokes_anothers_key_from_the_dashboard(alice, mallory, client, make_key, api):
    raw = make_key(alice)
    key = ApiKey.objects.get(key_hash=hash_key(raw))
    client.force_login(mallory)
    client.post(f"/keys/{key.pk}/revoke/")
    assert api(raw).get("/api/v1/workspaces/").status_code == 200


def test_logout_is_a_post_and_ends_the_session(alice, client):
    client.force_login(alice)
    client.post("/logout/")
    assert client.get("/keys/").status_code == 302
