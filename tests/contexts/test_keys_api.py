from __future__ import annotations

from contexts.models import ApiKey
from contexts.tenancy.selectors import hash_key


def test_a_created_key_is_shown_once_and_stored_hashed(alice, make_key, api):
    response = api(make_key(alice, scope="admin")).post(
        "/api/v1/keys/", {"name": "laptop", "scope": "read"}, format="json"
    )
    assert response.status_code == 201
    raw = response.json()["key"]
    stored = ApiKey.objects.get(name="laptop")
    assert stored.key_hash == hash_key(raw)
    assert raw not in {stored.key_hash, stored.prefix}
    assert raw.startswith(stored.prefix)
    listed = api(raw).get("/api/v1/keys/").json()["results"]
    assert all("key" not in item for item in listed)
    assert {"laptop"} <= {item["name"] for item in listed}


def test_a_revoked_key_is_refused_at_once(alice, make_key, api):
    raw = make_key(alice)
    key_id = ApiKey.objects.get(key_hash=hash_key(raw)).pk
    admin = api(make_key(alice, scope="admin"))
    assert api(raw).get("/api/v1/workspaces/").status_code == 200
    assert admin.delete(f"/api/v1/keys/{key_id}/").status_code == 204
    response = api(raw).get("/api/v1/workspaces/")
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_nobody_revokes_someone_elses_key(alice, mallory, make_key, api):
    raw = make_key(alice)
    key_id = ApiKey.objects.get(key_hash=hash_key(raw)).pk
    response = api(make_key(mallory, scope="admin")).delete(f"/api/v1/keys/{key_id}/")
    assert response.status_code == 404
    assert api(raw).get("/api/v1/workspaces/").status_code == 200


def test_a_key_cannot_mint_a_stronger_key(alice, make_key, api):
    response = api(make_key(alice, scope="write")).post(
        "/api/v1/keys/", {"scope": "admin"}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["code"] == "key_scope"


def test_a_restricted_key_cannot_mint_an_unrestricted_one(acme, alice, make_key, api):
    response = api(make_key(alice, scope="admin", workspace=acme)).post(
        "/api/v1/keys/", {"scope": "read"}, format="json"
    )
    assert response.status_code == 403


def test_a_key_for_a_foreign_workspace_is_refused(evil, alice, make_key, api):
    response = api(make_key(alice)).post("/api/v1/keys/", {"workspace": "evil"}, format="json")
    assert response.status_code == 404


def test_requests_without_or_with_a_bad_key_are_401(db, api):
    from rest_framework.test import APIClient

    anonymous = APIClient().get("/api/v1/workspaces/")
    assert anonymous.status_code == 401
    assert anonymous.json()["code"] == "not_authenticated"
    bad = api("mf_not-a-real-key").get("/api/v1/workspaces/")
    assert bad.status_code == 401
    assert bad.json()["code"] == "authentication_failed"


def test_using_a_key_records_when_it_was_last_used(alice, make_key, api):
    raw = make_key(alice)
    assert ApiKey.objects.get(key_hash=hash_key(raw)).last_used_at is None
    api(raw).get("/api/v1/workspaces/")
    assert ApiKey.objects.get(key_hash=hash_key(raw)).last_used_at is not None
