from __future__ import annotations

from contexts.models import Membership, Workspace


def test_it_lists_only_my_workspaces_with_my_role(acme, evil, bob, make_key, api):
    response = api(make_key(bob)).get("/api/v1/workspaces/")
    assert response.status_code == 200
    assert [(w["slug"], w["role"]) for w in response.json()["results"]] == [("acme", "editor")]


def test_it_makes_the_creator_the_owner(alice, make_key, api):
    response = api(make_key(alice)).post(
        "/api/v1/workspaces/", {"slug": "rockets", "name": "Rockets"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["role"] == "owner"
    assert Membership.objects.get(workspace__slug="rockets").user == alice


def test_it_refuses_a_taken_slug_with_a_stable_code(acme, bob, make_key, api):
    response = api(make_key(bob)).post("/api/v1/workspaces/", {"slug": "acme"}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "slug_taken"


def test_it_refuses_a_slug_with_spaces(alice, make_key, api):
    response = api(make_key(alice)).post(
        "/api/v1/workspaces/", {"slug": "Not A Slug"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_slug"


def test_it_reports_missing_fields_by_name(alice, make_key, api):
    response = api(make_key(alice)).post("/api/v1/workspaces/", {}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert body["detail"].startswith("slug:")
    assert "slug" in body["errors"]


def test_it_answers_malformed_json_with_parse_error(alice, make_key, api):
    response = api(make_key(alice)).post(
        "/api/v1/workspaces/", data="{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"


def test_the_owner_renames_and_deletes(acme, alice, make_key, api):
    client = api(make_key(alice, scope="admin"))
    response = client.patch("/api/v1/workspaces/acme/", {"name": "Acme Inc"}, format="json")
    assert response.status_code == 200
    assert response.json()["name"] == "Acme Inc"
    assert client.delete("/api/v1/workspaces/acme/").status_code == 204
    assert not Workspace.objects.filter(slug="acme").exists()


def test_an_editor_cannot_delete_the_workspace(acme, bob, make_key, api):
    response = api(make_key(bob, scope="admin")).delete("/api/v1/workspaces/acme/")
    assert response.status_code == 403
    assert response.json()["code"] == "owner_required"
    assert Workspace.objects.filter(slug="acme").exists()


def test_a_write_key_of_the_owner_cannot_delete(acme, alice, make_key, api):
    response = api(make_key(alice, scope="write")).delete("/api/v1/workspaces/acme/")
    assert response.status_code == 403
    assert response.json()["code"] == "key_scope"


def test_a_viewer_reads_but_cannot_write(acme, victor, make_key, api):
    client = api(make_key(victor, scope="admin"))
    assert client.get("/api/v1/workspaces/acme/").json()["role"] == "viewer"
    response = client.post(
        "/api/v1/workspaces/acme/members/", {"username": "victor"}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["code"] == "read_only_role"


def test_a_read_only_key_cannot_create_a_workspace(alice, make_key, api):
    response = api(make_key(alice, scope="read")).post(
        "/api/v1/workspaces/", {"slug": "x"}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["code"] == "key_scope"


def test_a_workspace_restricted_key_sees_only_its_workspace(acme, alice, make_key, api):
    other = api(make_key(alice)).post("/api/v1/workspaces/", {"slug": "other"}, format="json")
    assert other.status_code == 201
    restricted = api(make_key(alice, workspace=Workspace.objects.get(slug="other")))
    assert [w["slug"] for w in restricted.get("/api/v1/workspaces/").json()["results"]] == ["other"]
    response = restricted.get("/api/v1/workspaces/acme/")
    assert response.status_code == 404
    assert response.json()["code"] == "workspace_not_found"


def test_slugs_match_case_insensitively(acme, alice, make_key, api):
    assert api(make_key(alice)).get("/api/v1/workspaces/ACME/").json()["slug"] == "acme"
