"""Who changed what, through REST: the audit trail, forget's tombstone, restore and purge."""

from __future__ import annotations

from datetime import timedelta

import pytest

from contexts.models import AuditEvent
from memories.models import Memory

BASE = "/api/v1/workspaces/acme"


@pytest.fixture
def bob_key(acme, bob, make_key):
    return make_key(bob)


@pytest.fixture
def bob_api(bob_key, api):
    return api(bob_key)


@pytest.fixture
def alice_api(acme, alice, make_key, api):
    return api(make_key(alice, scope="admin"))


def post(client, path, body=None):
    return client.post(f"{BASE}/{path}", body or {}, format="json")


def remember(client, text, **extra):
    return post(client, "memories/", {"text": text, **extra}).json()["id"]


def test_an_edit_through_a_key_records_the_user_the_key_and_the_text_before_and_after(
    bob_api, bob_key, bob
):
    memory_id = remember(bob_api, "The logo is blue")
    response = bob_api.patch(
        f"{BASE}/memories/{memory_id}/", {"text": "The logo is green"}, format="json"
    )
    assert response.status_code == 200
    [event] = AuditEvent.objects.filter(action="memory.edit")
    assert (event.user, event.origin, event.target) == (bob, "rest", f"memory:{memory_id}")
    assert event.key is not None and bob_key.startswith(event.key.prefix)
    assert (event.before, event.after) == ("The logo is blue", "The logo is green")


def test_forget_leaves_a_tombstone_that_nothing_else_sees_and_restore_undoes_it(bob_api, bob):
    remember(bob_api, "Node version is 20", state_key="node", state_value="20")
    wrong = remember(bob_api, "Node version is 99", state_key="node", state_value="99")
    response = bob_api.delete(f"{BASE}/memories/{wrong}/?reason=a typo")
    assert response.status_code == 204
    # gone for every reader: the entry, the state, recall, lists (even with history), counts
    assert bob_api.get(f"{BASE}/memories/{wrong}/").status_code == 404
    assert bob_api.get(f"{BASE}/states/node/").json()["value"] == "20"
    recall = post(bob_api, "recall/", {"query": "Node version 99", "include_superseded": True})
    assert wrong not in recall.json()["ids"]
    history = bob_api.get(f"{BASE}/memories/?status=all").json()
    assert wrong not in [m["id"] for m in history["results"]]
    assert bob_api.get(f"{BASE}/stats/").json()["superseded"] == 0
    # but it is a tombstone, listed with who and why, restorable until purge_after
    [tomb] = bob_api.get(f"{BASE}/memories/?status=forgotten").json()["results"]
    assert tomb["id"] == wrong and tomb["text"] == "Node version is 99"
    assert tomb["forgotten"]["by"] == "bob" and tomb["forgotten"]["reason"] == "a typo"
    assert tomb["forgotten"]["purge_after"] > tomb["forgotten"]["at"]
    restored = post(bob_api, f"memories/{wrong}/restore/")
    assert restored.status_code == 200 and restored.json()["forgotten"] is None
    assert bob_api.get(f"{BASE}/states/node/").json()["value"] == "99"
    assert bob_api.get(f"{BASE}/memories/{wrong}/").status_code == 200
    actions = list(
        AuditEvent.objects.filter(target=f"memory:{wrong}").values_list("action", "user__username")
    )
    assert actions == [("memory.restore", "bob"), ("memory.forget", "bob")]


def test_a_second_forget_and_a_restore_of_a_live_memory_say_why_they_fail(bob_api):
    memory_id = remember(bob_api, "Staging runs on Hetzner")
    conflict = post(bob_api, f"memories/{memory_id}/restore/")
    assert conflict.status_code == 409 and conflict.json()["code"] == "not_forgotten"
    assert bob_api.delete(f"{BASE}/memories/{memory_id}/").status_code == 204
    again = bob_api.delete(f"{BASE}/memories/{memory_id}/")
    assert again.status_code == 404 and again.json()["code"] == "memory_not_found"


def test_purge_is_for_owners_and_leaves_history_without_the_text(bob_api, alice_api):
    memory_id = remember(bob_api, "The staging password hint is hunter-two")
    bob_api.patch(
        f"{BASE}/memories/{memory_id}/", {"text": "The hint is hunter-three"}, format="json"
    )
    bob_api.delete(f"{BASE}/memories/{memory_id}/")
    refused = post(bob_api, f"memories/{memory_id}/purge/")
    assert refused.status_code == 403 and refused.json()["code"] == "owner_required"
    assert post(alice_api, f"memories/{memory_id}/purge/").status_code == 204
    assert not Memory.objects.filter(pk=memory_id).exists()
    rows = AuditEvent.objects.filter(target=f"memory:{memory_id}")
    assert [r.action for r in rows] == ["memory.purge", "memory.forget", "memory.edit"]
    assert all(r.before == "" and r.after == "" for r in rows)
    assert rows[0].user is not None and rows[0].user.username == "alice"
    gone = post(alice_api, f"memories/{memory_id}/restore/")
    assert gone.status_code == 404 and gone.json()["code"] == "memory_not_found"


def test_the_daily_cleanup_purges_tombstones_past_the_window_only(bob_api, acme):
    old = remember(bob_api, "Old wrong fact about the build cache")
    recent = remember(bob_api, "Recent wrong fact about the deploy key")
    for memory_id in (old, recent):
        bob_api.delete(f"{BASE}/memories/{memory_id}/")
    tomb = Memory.objects.get(pk=old)
    assert tomb.forgotten_at is not None
    Memory.objects.filter(pk=old).update(forgotten_at=tomb.forgotten_at - timedelta(days=31))
    report = post(bob_api, "cleanup/", {"dry_run": False}).json()
    assert report["purged"] == 1
    assert not Memory.objects.filter(pk=old).exists()
    assert Memory.objects.get(pk=recent).forgotten_at is not None
    purge = AuditEvent.objects.get(action="memory.purge", target=f"memory:{old}")
    assert purge.origin == "system" and purge.user is None


def test_a_replacement_keeps_the_app_whichever_interface_supersedes(bob_api, acme, bob):
    from memories import services

    first = remember(bob_api, "Builds use Python 3.11", app="claude-code")
    response = post(bob_api, f"memories/{first}/supersede/", {"text": "Builds use Python 3.12"})
    successor = response.json()["by"]
    assert (successor["source"], successor["app"]) == ("model", "claude-code")
    event = AuditEvent.objects.get(action="memory.supersede")
    assert event.detail["by"] == successor["id"] and event.origin == "rest"
    # a consolidation made with no app takes the one its evidence shares, never "dashboard"
    other = remember(bob_api, "Builds run on two cores", app="claude-code")
    conclusion = services.memory_consolidate(
        workspace=acme, ids=[successor["id"], other], conclusion="Builds: 3.12 on two cores"
    )
    assert (conclusion.source, conclusion.app) == ("consolidation", "claude-code")


def test_members_and_keys_are_in_the_trail_with_the_key_that_changed_them(
    alice_api, alice, mallory
):
    added = alice_api.post(
        f"{BASE}/members/", {"username": "mallory", "role": "viewer"}, format="json"
    )
    assert added.status_code == 201
    alice_api.patch(f"{BASE}/members/mallory/", {"role": "editor"}, format="json")
    alice_api.delete(f"{BASE}/members/mallory/")
    rows = AuditEvent.objects.filter(workspace__slug="acme", target="member:mallory")
    assert [(r.action, r.before, r.after) for r in rows] == [
        ("member.remove", "editor", ""),
        ("member.role", "viewer", "editor"),
        ("member.add", "", "viewer"),
    ]
    assert {r.key_id for r in rows} != {None} and {r.user for r in rows} == {alice}
    made = alice_api.post(
        "/api/v1/keys/", {"name": "ci", "scope": "read", "workspace": "acme"}, format="json"
    ).json()
    alice_api.delete(f"/api/v1/keys/{made['id']}/")
    key_rows = AuditEvent.objects.filter(target=f"key:{made['id']}")
    assert [r.action for r in key_rows] == ["key.revoke", "key.create"]
    assert key_rows[0].workspace is not None and key_rows[0].workspace.slug == "acme"
    assert key_rows[0].detail["name"] == "ci"


def test_a_core_revision_records_who_made_it_even_in_the_shared_document(bob_api, bob, acme):
    post(bob_api, "core/memory/", {"action": "add", "content": "Deploys need a green CI"})
    revisions = bob_api.get(f"{BASE}/core/memory/revisions/").json()["results"]
    assert revisions[0]["user"] == "bob"
    event = AuditEvent.objects.get(action="core.add")
    assert (event.user, event.origin, event.target) == (bob, "rest", "core:memory")
    assert "Deploys need a green CI" in event.after


def test_another_workspaces_tombstones_stay_invisible(bob_api, evil, mallory, make_key, api):
    memory_id = remember(bob_api, "Acme's private fact")
    bob_api.delete(f"{BASE}/memories/{memory_id}/")
    mallory_api = api(make_key(mallory, scope="admin"))
    for path in (f"memories/{memory_id}/restore/", f"memories/{memory_id}/purge/"):
        response = mallory_api.post(f"/api/v1/workspaces/evil/{path}", {}, format="json")
        assert response.status_code == 404
    listed = mallory_api.get("/api/v1/workspaces/evil/memories/?status=forgotten").json()
    assert listed["results"] == []
    assert Memory.objects.get(pk=memory_id).forgotten_at is not None


def test_the_audit_api_lists_a_memorys_history_newest_first(bob_api, bob_key):
    memory_id = remember(bob_api, "The logo is blue")
    bob_api.patch(f"{BASE}/memories/{memory_id}/", {"text": "The logo is red"}, format="json")
    bob_api.delete(f"{BASE}/memories/{memory_id}/?reason=rebrand")
    page = bob_api.get(f"{BASE}/audit/?target=memory:{memory_id}").json()
    assert page["count"] == 2
    forget, edit = page["results"]
    assert (forget["action"], forget["user"], forget["origin"]) == ("memory.forget", "bob", "rest")
    assert forget["detail"]["reason"] == "rebrand" and bob_key.startswith(forget["key"])
    assert (edit["before"], edit["after"]) == ("The logo is blue", "The logo is red")
    assert bob_api.get(f"{BASE}/audit/?action=memory.edit").json()["count"] == 1
    bad = bob_api.get(f"{BASE}/audit/?origin=telepathy")
    assert bad.status_code == 400
