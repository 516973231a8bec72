"""`as_of`: recall and the list answer what was current at a past time."""

from __future__ import annotations

import pytest
from django.utils import timezone


@pytest.fixture
def client(acme, bob, make_key, api):
    return api(make_key(bob, workspace=acme))


def remember(client, text: str, value: str) -> dict:
    answer = client.post(
        "/api/v1/workspaces/acme/memories/",
        {"text": text, "state_key": "db.version", "state_value": value},
        format="json",
    )
    assert answer.status_code in (200, 201), answer.content
    return answer.json()


def test_recall_and_the_list_answer_what_was_current_then(client):
    old = remember(client, "The production database runs Postgres 15", "15")
    between = timezone.now().isoformat()
    new = remember(client, "The production database runs Postgres 16 since the upgrade", "16")
    before_any = "2001-01-01T00:00:00Z"

    def recalled(**extra):
        answer = client.post(
            "/api/v1/workspaces/acme/recall/",
            {"query": "which postgres version does production run?", **extra},
            format="json",
        )
        assert answer.status_code == 200, answer.content
        return [r["id"] for r in answer.json()["results"]]

    old_id, new_id = old["memory"]["id"], new["memory"]["id"]
    assert recalled() == [new_id]
    assert recalled(as_of=between) == [old_id]
    assert recalled(as_of=before_any) == []

    def listed(**params):
        answer = client.get("/api/v1/workspaces/acme/memories/", params)
        assert answer.status_code == 200, answer.content
        return [m["id"] for m in answer.json()["results"]]

    assert listed() == [new_id]
    assert listed(as_of=between) == [old_id]
    bad = client.get("/api/v1/workspaces/acme/memories/", {"as_of": "last tuesday"})
    assert bad.status_code == 400 and "code" in bad.json()


def test_the_memory_page_shows_the_value_at_a_date(client, bob):
    from django.test import Client

    old = remember(client, "The production database runs Postgres 15", "15")["memory"]
    between = timezone.now().isoformat()
    new = remember(client, "The production database runs Postgres 16 since the upgrade", "16")
    browser = Client()
    browser.force_login(bob)
    page = f"/w/acme/memories/{new['memory']['id']}/"
    then = browser.get(page, {"as_of": between}).content.decode()
    assert (
        "Current on" in then
        and f"#{old['id']}</a> The production database runs Postgres 15" in then
    )
    assert "Nothing of this memory" in browser.get(page, {"as_of": "2001-01-01"}).content.decode()
    assert "Give a date" in browser.get(page, {"as_of": "last tuesday"}).content.decode()
