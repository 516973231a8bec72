"""Private memories: one author reads them, through every door; nobody else, owners included."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from typing import Any

import pytest

from contexts.models import AuditEvent
from memflow_site.porting.archive.export import workspace_export
from memories.models import Memory

BASE = "/api/v1/workspaces/acme"
SECRET = "The launch codename for the Q3 rocket is Bluebird, shared with nobody yet."
PUBLIC = "The Q3 rocket launch happens from pad 39A at Cape Canaveral."


@pytest.fixture
def bob_api(acme, bob, make_key, api):
    return api(make_key(bob))


@pytest.fixture
def alice_api(acme, alice, make_key, api):
    return api(make_key(alice))


@pytest.fixture
def written(bob_api) -> dict[str, int]:
    """bob (an editor) writes one private and one public memory; alice owns acme."""
    private = bob_api.post(f"{BASE}/memories/", {"text": SECRET, "private": True}, format="json")
    assert private.status_code == 201 and private.json()["memory"]["private"] is True
    public = bob_api.post(f"{BASE}/memories/", {"text": PUBLIC}, format="json")
    assert public.json()["memory"]["private"] is False
    return {"private": private.json()["id"], "public": public.json()["id"]}


def _text(response: Any) -> str:
    assert response.status_code in (200, 404), response.content
    return response.content.decode()


# Each read path, as (what it answers for a client). The author must find SECRET
# through it, the other member (the workspace's owner) must not.
READS: dict[str, Callable[[Any, dict[str, int]], str]] = {
    "list": lambda c, ids: _text(c.get(f"{BASE}/memories/")),
    "list contains": lambda c, ids: _text(c.get(f"{BASE}/memories/?contains=Bluebird")),
    "list all statuses": lambda c, ids: _text(c.get(f"{BASE}/memories/?status=all")),
    "get": lambda c, ids: _text(c.get(f"{BASE}/memories/{ids['private']}/")),
    "recall": lambda c, ids: _text(
        c.post(f"{BASE}/recall/", {"query": "rocket codename Bluebird"}, format="json")
    ),
    "recall index": lambda c, ids: _text(
        c.post(f"{BASE}/recall/", {"query": "rocket codename", "mode": "index"}, format="json")
    ),
    "recall block": lambda c, ids: _text(
        c.post(f"{BASE}/recall/", {"query": "Bluebird", "mode": "block"}, format="json")
    ),
    "session pack": lambda c, ids: _text(c.get(f"{BASE}/session-pack/?minutes=60")),
}


@pytest.mark.parametrize("path", sorted(READS))
def test_only_the_author_reads_a_private_memory(path, written, bob_api, alice_api):
    read = READS[path]
    assert "Bluebird" in read(bob_api, written)
    assert "Bluebird" not in read(alice_api, written)


def test_someone_elses_private_memory_is_a_plain_404(written, alice_api):
    response = alice_api.get(f"{BASE}/memories/{written['private']}/")
    assert response.status_code == 404 and response.json()["code"] == "memory_not_found"
    # Nor can it be edited, forgotten or superseded by id.
    memory_id = written["private"]
    assert alice_api.patch(f"{BASE}/memories/{memory_id}/", {"text": "x"}).status_code == 404
    assert alice_api.delete(f"{BASE}/memories/{memory_id}/").status_code == 404
    supersede = alice_api.post(f"{BASE}/memories/{memory_id}/supersede/", {"text": "y"})
    assert supersede.status_code == 404
    assert Memory.objects.get(pk=memory_id).forgotten_at is None


def test_the_author_toggles_it_and_nobody_else_can(written, bob_api, alice_api):
    public_id = written["public"]
    refused = alice_api.patch(f"{BASE}/memories/{public_id}/", {"private": True}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "not_author"
    shared = bob_api.patch(
        f"{BASE}/memories/{written['private']}/", {"private": False}, format="json"
    )
    assert shared.status_code == 200 and shared.json()["private"] is False
    assert "Bluebird" in alice_api.get(f"{BASE}/memories/?contains=Bluebird").content.decode()
    row = AuditEvent.objects.get(action="memory.visibility", target=f"memory:{written['private']}")
    assert row.user is not None and row.user.username == "bob" and row.detail == {"private": False}


def test_the_audit_trail_keeps_its_texts_from_other_readers(written, bob_api, alice_api):
    edited = bob_api.patch(
        f"{BASE}/memories/{written['private']}/",
        {"text": SECRET + " Launch is in July."},
        format="json",
    )
    assert edited.status_code == 200
    mine = bob_api.get(f"{BASE}/audit/?action=memory.edit").json()["results"]
    assert "Bluebird" in mine[0]["after"]
    theirs = alice_api.get(f"{BASE}/audit/?action=memory.edit").json()["results"]
    assert theirs[0]["target"] == f"memory:{written['private']}"  # who did what stays
    assert theirs[0]["before"] == "" and theirs[0]["after"] == ""


def test_an_export_holds_private_memories_for_their_author_only(
    written, acme, alice, bob, tmp_path
):
    def exported(user: Any) -> str:
        out = tmp_path / f"{user.username}.tar.gz"
        workspace_export(workspace=acme, out=out, user=user)
        with tarfile.open(out, mode="r:gz") as archive:
            member = archive.extractfile("memories.jsonl")
            assert member is not None
            return member.read().decode()

    assert "Bluebird" not in exported(alice)
    lines = [json.loads(line) for line in exported(bob).splitlines()]
    assert any(line["private"] and "Bluebird" in line["text"] for line in lines)


def test_a_public_remember_never_folds_into_a_private_one(written, bob_api, alice_api):
    # The same text, said publicly, is a new entry the team can see; said publicly
    # again (by its private author too), it strengthens that public one.
    public = alice_api.post(f"{BASE}/memories/", {"text": SECRET}, format="json")
    assert public.status_code == 201 and public.json()["id"] != written["private"]
    repeat = bob_api.post(f"{BASE}/memories/", {"text": SECRET}, format="json")
    assert repeat.json()["outcome"] == "strengthened"
    assert repeat.json()["id"] == public.json()["id"]
    # Said privately again by its author, it strengthens the private one.
    again = bob_api.post(f"{BASE}/memories/", {"text": SECRET, "private": True}, format="json")
    assert again.json()["outcome"] == "strengthened" and again.json()["id"] == written["private"]
    # Someone else's private copy is their own entry, not bob's.
    theirs = alice_api.post(f"{BASE}/memories/", {"text": SECRET, "private": True}, format="json")
    assert theirs.status_code == 201 and theirs.json()["id"] != written["private"]


def test_a_state_entry_cannot_be_private(bob_api):
    response = bob_api.post(
        f"{BASE}/memories/",
        {"text": "deploys run on fridays", "state_key": "deploy.day", "private": True},
        format="json",
    )
    assert response.status_code == 400 and response.json()["code"] == "private_state_key"


def test_bulk_forget_never_matches_someone_elses_private_memory(written, alice_api):
    answer = alice_api.post(
        f"{BASE}/memories/forget/", {"contains": "Bluebird"}, format="json"
    ).json()
    assert answer["matched"] == 0 and answer["forgotten"] == []
    assert Memory.objects.get(pk=written["private"]).forgotten_at is None


def test_hook_injection_gives_private_memories_to_their_author_only(
    written, acme, alice, bob, make_key, api
):
    def prompt(user: Any, session: str) -> str:
        client = api(make_key(user, workspace=acme))
        body = {
            "session_id": session,
            "cwd": "/src/acme",
            "hook_event_name": "user-prompt",
            "prompt": "what is the rocket's launch codename?",
        }
        response = client.post("/api/v1/hooks/user-prompt", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()["additionalContext"]

    def start(user: Any, session: str) -> str:
        client = api(make_key(user, workspace=acme))
        body = {"session_id": session, "cwd": "/src/acme", "source": "startup"}
        response = client.post("/api/v1/hooks/session-start", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()["additionalContext"]

    assert "Bluebird" in prompt(bob, "bob-1")
    assert "Bluebird" not in prompt(alice, "alice-1")
    # The restore pack a new session starts with, likewise.
    assert "Bluebird" in start(bob, "bob-0") and "pad 39A" in start(alice, "alice-0")
    assert "Bluebird" not in start(alice, "alice-0b")
    # bob's session log shows what it was given to bob, and withholds it from the others.
    log = f"{BASE}/sessions/bob-1/?kind=injection"
    assert "Bluebird" in api(make_key(bob)).get(log).content.decode()
    theirs = api(make_key(alice)).get(log)
    assert theirs.status_code == 200 and "Bluebird" not in theirs.content.decode()
    assert any(b["withheld"] for e in theirs.json()["events"] for b in e.get("blocks", []))


def test_folds_into_a_private_memory_are_not_listed_to_others(written, bob_api, alice_api):
    longer = SECRET + " The name was picked by the launch team."
    merged = bob_api.post(f"{BASE}/memories/", {"text": longer, "private": True}, format="json")
    assert merged.json()["outcome"] == "merged"
    assert "Bluebird" in bob_api.get(f"{BASE}/dedupe-events/").content.decode()
    theirs = alice_api.get(f"{BASE}/dedupe-events/").json()
    assert theirs["count"] == 0


def test_the_dashboard_shows_it_to_its_author_with_a_badge_and_to_nobody_else(
    written, bob_api, alice, bob, client
):
    bob_api.patch(
        f"{BASE}/memories/{written['private']}/", {"text": SECRET + " Soon."}, format="json"
    )
    client.force_login(bob)
    listing = client.get("/w/acme/memories/?q=rocket codename").content.decode()
    assert "Bluebird" in listing and 'class="tag private"' in listing
    detail = client.get(f"/w/acme/memories/{written['private']}/").content.decode()
    assert "Share with the workspace" in detail
    client.force_login(alice)
    for url in ("/w/acme/memories/", "/w/acme/memories/?q=rocket codename", "/w/acme/activity/"):
        page = client.get(url)
        assert page.status_code == 200 and "Bluebird" not in page.content.decode(), url
    assert client.get(f"/w/acme/memories/{written['private']}/").status_code == 404
    toggle = client.post(f"/w/acme/memories/{written['private']}/private/")
    assert toggle.status_code == 404
    assert Memory.objects.get(pk=written["private"]).private


def test_conflicts_and_insights_pair_a_private_memory_for_its_author_only(
    written, bob_api, alice_api
):
    near = "The launch codename for the Q3 rocket is Bluebird, and it is still unannounced."
    bob_api.post(f"{BASE}/memories/", {"text": near}, format="json")

    def paired(client: Any) -> set[int]:
        page = client.get(f"{BASE}/conflicts/?threshold=0.7").json()
        return {i for cluster in page["results"] for i in cluster["ids"]}

    assert written["private"] in paired(bob_api)
    assert written["private"] not in paired(alice_api)
    insights = alice_api.get(f"{BASE}/insights/").json()
    assert all(
        written["private"] not in (c["a"]["id"], c["b"]["id"]) for c in insights["conflicts"]
    )


def test_fading_and_settling_never_reach_someone_elses_private_memory(written, alice_api):
    fading = alice_api.get(f"{BASE}/fading/?below=1.0").json()
    assert written["private"] not in {m["id"] for m in fading["results"]}
    settled = alice_api.post(
        f"{BASE}/fading/{written['private']}/settle/", {"decision": "forget"}, format="json"
    )
    assert settled.status_code == 404
    cluster = f"{min(written.values())}-{max(written.values())}"
    refused = alice_api.post(
        f"{BASE}/conflicts/{cluster}/settle/", {"decision": "dismiss"}, format="json"
    )
    assert refused.status_code == 404
    assert Memory.objects.get(pk=written["private"]).forgotten_at is None
