from __future__ import annotations

from contexts.models import Membership


def test_the_owner_adds_changes_and_removes_members(acme, alice, mallory, make_key, api):
    client = api(make_key(alice, scope="admin"))
    added = client.post(
        "/api/v1/workspaces/acme/members/", {"username": "mallory", "role": "viewer"}, format="json"
    )
    assert added.status_code == 201, added.content
    assert added.json()["role"] == "viewer"
    changed = client.patch(
        "/api/v1/workspaces/acme/members/mallory/", {"role": "editor"}, format="json"
    )
    assert changed.json()["role"] == "editor"
    assert client.delete("/api/v1/workspaces/acme/members/mallory/").status_code == 204
    assert not Membership.objects.filter(user=mallory, workspace=acme).exists()


def test_members_are_listed_for_any_member(acme, victor, make_key, api):
    response = api(make_key(victor, scope="read")).get("/api/v1/workspaces/acme/members/")
    assert {(m["username"], m["role"]) for m in response.json()["results"]} == {
        ("alice", "owner"),
        ("bob", "editor"),
        ("victor", "viewer"),
    }


def test_the_last_owner_cannot_leave_or_be_demoted(acme, alice, make_key, api):
    client = api(make_key(alice, scope="admin"))
    demoted = client.patch(
        "/api/v1/workspaces/acme/members/alice/", {"role": "editor"}, format="json"
    )
    assert demoted.status_code == 409
    assert demoted.json()["code"] == "last_owner"
    removed = client.delete("/api/v1/workspaces/acme/members/alice/")
    assert removed.json()["code"] == "last_owner"
    assert Membership.objects.get(user=alice, workspace=acme).role == "owner"


def test_adding_an_unknown_user_says_so(acme, alice, make_key, api):
    response = api(make_key(alice, scope="admin")).post(
        "/api/v1/workspaces/acme/members/", {"username": "nobody"}, format="json"
    )
    assert response.status_code == 404
    assert response.json()["code"] == "user_not_found"
