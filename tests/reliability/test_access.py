"""Who may write a session's log, and who may manage which API keys.

Session logs: `contexts/assemble/` and `contexts/record/` write the session,
its assembly event and its one preload delivery, so like every other write
they need an editor (or owner) and a write key; a viewer or a read key gets
403 and nothing is written, and keeps every read.

Keys: a dashboard login manages all of its user's keys; a key manages itself
always, and other keys only when it has no workspace restriction and a scope
at least as wide (a read key revokes none but itself).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from contexts.declarations import DiskSource, assemble
from contexts.models import AgentSession, ApiKey, SessionEvent
from contexts.tenancy.selectors import hash_key
from tests.contexts.trees import HOSTNAME, store_tree, write_tree

BASE = "/api/v1/workspaces/acme"


# --- session logs --------------------------------------------------------------------


@pytest.fixture
def project(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            "proj/.dsh/context.yaml": "systemPrompt:\n  - AGENT.md\npreload:\n  - NOTES.md\n",
            "proj/AGENT.md": "You are the rocket agent.\n",
            "proj/NOTES.md": "day 1: launched\n",
        },
    )
    store_tree(acme, root)
    return root / "proj"


def _assemble_body(project: Any, session: str = "s-1") -> dict[str, Any]:
    return {"directory": str(project), "session_id": session, "hostname": HOSTNAME}


def _record_body(project: Any, session: str = "s-1") -> dict[str, Any]:
    local = assemble(source=DiskSource(), directory=str(project), hostname=HOSTNAME)
    return {"session_id": session, "assembly": local.to_json()}


def _write_session_log(client: APIClient, project: Any) -> list[tuple[int, str]]:
    answers = [
        client.post(f"{BASE}/contexts/assemble/", _assemble_body(project), format="json"),
        client.post(f"{BASE}/contexts/record/", _record_body(project), format="json"),
    ]
    return [(a.status_code, a.json().get("code", "")) for a in answers]


def test_a_viewer_cannot_write_a_session_log_through_either_route(
    acme, victor, make_key, api, project
):
    viewer = api(make_key(victor, scope="write"))  # even with a write key: the role decides
    assert _write_session_log(viewer, project) == [(403, "read_only_role")] * 2
    assert not AgentSession.objects.filter(workspace=acme).exists()
    assert not SessionEvent.objects.exists()


def test_a_read_key_cannot_write_a_session_log_even_an_owners(acme, alice, make_key, api, project):
    read_key = api(make_key(alice, scope="read"))
    assert _write_session_log(read_key, project) == [(403, "key_scope")] * 2
    assert not AgentSession.objects.filter(workspace=acme).exists()
    assert not SessionEvent.objects.exists()


def test_an_editor_with_a_write_key_still_writes_both(acme, bob, make_key, api, project):
    editor = api(make_key(bob))
    assemble_answer = editor.post(
        f"{BASE}/contexts/assemble/", _assemble_body(project, "a"), format="json"
    )
    assert assemble_answer.status_code == 200, assemble_answer.content
    assert "day 1: launched" in assemble_answer.json()["preload"]["text"]
    record_answer = editor.post(
        f"{BASE}/contexts/record/", _record_body(project, "b"), format="json"
    )
    assert record_answer.status_code == 200, record_answer.content
    assert set(AgentSession.objects.values_list("external_id", flat=True)) == {"a", "b"}


def test_viewers_and_read_keys_keep_every_read(acme, victor, alice, make_key, api, project):
    for client in (api(make_key(victor, scope="read")), api(make_key(alice, scope="read"))):
        for path in ("declarations/", "documents/", "contexts/config/"):
            response = client.get(f"{BASE}/{path}")
            assert response.status_code == 200, (path, response.content)
        assert any(
            d["directory"] == str(project)
            for d in client.get(f"{BASE}/declarations/").json()["results"]
        )
    # What a directory is given, seen without writing a session log: the
    # dashboard's preview, for a viewer too.
    page = Client()
    page.force_login(victor)
    preview = page.get("/w/acme/declarations/", {"directory": str(project), "hostname": HOSTNAME})
    assert preview.status_code == 200
    assert "You are the rocket agent." in preview.content.decode()
    assert not SessionEvent.objects.exists()


# --- API keys ------------------------------------------------------------------------


@pytest.fixture
def keys(acme, alice, make_key) -> dict[str, str]:
    """alice's keys: unrestricted admin, write and read, and a write key for acme only."""
    return {
        "admin": make_key(alice, scope="admin"),
        "write": make_key(alice, scope="write"),
        "read": make_key(alice, scope="read"),
        "acme": make_key(alice, scope="write", workspace=acme),
    }


def _id(raw: str) -> int:
    return ApiKey.objects.get(key_hash=hash_key(raw)).pk


def _works(api: Any, raw: str) -> bool:
    return api(raw).get("/api/v1/workspaces/").status_code == 200


def _listed(api: Any, raw: str) -> set[int]:
    response = api(raw).get("/api/v1/keys/")
    assert response.status_code == 200, response.content
    return {item["id"] for item in response.json()["results"]}


def test_a_restricted_key_sees_and_manages_only_itself(api, keys):
    restricted = api(keys["acme"])
    assert _listed(api, keys["acme"]) == {_id(keys["acme"])}

    refused = restricted.delete(f"/api/v1/keys/{_id(keys['admin'])}/")
    assert refused.status_code == 403
    assert refused.json()["code"] == "key_scope"
    assert _works(api, keys["admin"])  # the unrestricted admin key survives

    for body in ({"scope": "read"}, {"scope": "read", "workspace": "acme"}):
        created = restricted.post("/api/v1/keys/", body, format="json")
        assert created.status_code == 403, body
        assert created.json()["code"] == "key_scope"

    assert restricted.delete(f"/api/v1/keys/{_id(keys['acme'])}/").status_code == 204
    assert not _works(api, keys["acme"])


def test_an_unrestricted_key_manages_keys_of_no_wider_scope(api, keys):
    writer = api(keys["write"])
    assert _listed(api, keys["write"]) == {_id(keys[name]) for name in ("write", "read", "acme")}

    stronger = writer.post("/api/v1/keys/", {"scope": "admin"}, format="json")
    assert (stronger.status_code, stronger.json()["code"]) == (403, "key_scope")
    weaker = writer.post("/api/v1/keys/", {"scope": "read", "name": "ci"}, format="json")
    assert weaker.status_code == 201
    assert _works(api, weaker.json()["key"])

    refused = writer.delete(f"/api/v1/keys/{_id(keys['admin'])}/")
    assert (refused.status_code, refused.json()["code"]) == (403, "key_scope")
    assert _works(api, keys["admin"])
    assert writer.delete(f"/api/v1/keys/{_id(keys['read'])}/").status_code == 204
    assert not _works(api, keys["read"])

    admin = api(keys["admin"])
    assert _id(keys["admin"]) in _listed(api, keys["admin"])
    assert admin.delete(f"/api/v1/keys/{_id(keys['write'])}/").status_code == 204
    assert not _works(api, keys["write"])


def test_a_read_key_lists_read_keys_and_revokes_only_itself(alice, api, keys, make_key):
    other_read = make_key(alice, scope="read")
    assert _listed(api, keys["read"]) == {_id(keys["read"]), _id(other_read)}
    reader = api(keys["read"])
    for target in (keys["write"], other_read):
        refused = reader.delete(f"/api/v1/keys/{_id(target)}/")
        assert (refused.status_code, refused.json()["code"]) == (403, "key_scope")
        assert _works(api, target)
    assert reader.delete(f"/api/v1/keys/{_id(keys['read'])}/").status_code == 204
    assert not _works(api, keys["read"])


def test_another_users_key_is_not_found_whatever_the_key(alice, mallory, api, keys, make_key):
    mallorys = make_key(mallory, scope="admin")
    for raw in keys.values():
        response = api(raw).delete(f"/api/v1/keys/{_id(mallorys)}/")
        assert (response.status_code, response.json()["code"]) == (404, "key_not_found")
        assert _id(mallorys) not in _listed(api, raw)
    assert _works(api, mallorys)


def test_the_dashboard_login_still_manages_every_key(alice, keys, api):
    page = Client()
    page.force_login(alice)
    listing = page.get("/keys/").content.decode()
    for raw in keys.values():
        assert ApiKey.objects.get(key_hash=hash_key(raw)).prefix in listing
    created = page.post("/keys/", {"name": "laptop", "scope": "admin"})
    assert created.status_code == 200
    assert ApiKey.objects.filter(name="laptop", scope="admin").exists()
    page.post(f"/keys/{_id(keys['admin'])}/revoke/")
    assert not _works(api, keys["admin"])
    # The same login through the REST API (session authentication) too.
    session_api = APIClient()
    session_api.force_login(alice)
    listed = {item["id"] for item in session_api.get("/api/v1/keys/").json()["results"]}
    assert {_id(raw) for raw in keys.values()} <= listed
