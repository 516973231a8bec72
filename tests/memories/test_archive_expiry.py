"""An archive entry past its expiry is gone for every reader before the cleanup deletes it."""

from __future__ import annotations

import re
from datetime import timedelta

from django.utils import timezone

from memories.models import Memory

BASE = "/api/v1/workspaces/acme"


def _move(client, text: str, category: str) -> int:
    client.post(f"{BASE}/core/memory/", {"action": "add", "content": text}, format="json")
    moved = client.post(
        f"{BASE}/core/memory/move/", {"old_text": text[:20], "category": category}, format="json"
    )
    assert moved.status_code == 200, moved.content
    return moved.json()["memory"]["id"]


def test_an_expired_archive_entry_is_not_returned_anywhere(acme, bob, make_key, api, client):
    rest = api(make_key(bob))
    stale = _move(rest, "The staging database lives on pg-staging-7 this week", "facts")
    kept = _move(rest, "The staging database migration method uses pg_dump", "methods")
    lesson = _move(rest, "The staging database must never be restored over prod", "lessons")
    # The entry's own field says when it goes: 90 days for facts, never for lessons.
    shown = rest.get(f"{BASE}/memories/{stale}/").json()
    assert shown["expires_at"] is not None
    assert rest.get(f"{BASE}/memories/{lesson}/").json()["expires_at"] is None
    found = rest.post(f"{BASE}/archive/recall/", {"query": "staging database"}, format="json")
    assert stale in [r["id"] for r in found.json()["results"]]

    Memory.objects.filter(pk=stale).update(expires_at=timezone.now() - timedelta(seconds=1))

    found = rest.post(f"{BASE}/archive/recall/", {"query": "staging database"}, format="json")
    ids = [r["id"] for r in found.json()["results"]]
    assert stale not in ids and kept in ids and lesson in ids
    general = rest.post(
        f"{BASE}/recall/", {"query": "staging database pg-staging-7"}, format="json"
    )
    assert stale not in [r["id"] for r in general.json()["results"]]
    gone = rest.get(f"{BASE}/memories/{stale}/")
    assert gone.status_code == 404 and gone.json()["code"] == "memory_expired"
    listed = rest.get(f"{BASE}/memories/?compartment=facts&status=all").json()
    assert stale not in [m["id"] for m in listed["results"]] and listed["count"] == 0

    client.force_login(bob)
    assert client.get(f"/w/acme/memories/{stale}/").status_code == 404
    page = client.get(f"/w/acme/memories/{kept}/").content.decode()
    expires = Memory.objects.get(pk=kept).expires_at
    assert re.search(rf"Expires</dt><dd><time [^>]*>{expires:%Y-%m-%d} ", page)
