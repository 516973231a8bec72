"""An expiry set at write, and forgetting everything a filter matches."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from contexts.models import AuditEvent
from memories import services
from memories.models import Memory

BASE = "/api/v1/workspaces/acme"


@pytest.fixture
def bob_api(acme, bob, make_key, api):
    return api(make_key(bob))


def remember(client, **body):
    return client.post(f"{BASE}/memories/", body, format="json")


# --- expiry ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ttl", "seconds"), [("3600", 3600), ("90m", 5400), ("12h", 43200), ("7d", 604800)]
)
def test_a_ttl_sets_the_expiry(bob_api, ttl, seconds):
    before = timezone.now()
    response = remember(bob_api, text=f"The staging password rotates soon ({ttl}).", ttl=ttl)
    assert response.status_code == 201, response.content
    expires = parse_datetime(response.json()["memory"]["expires_at"])
    assert expires is not None
    assert before + timedelta(seconds=seconds) <= expires
    assert expires <= timezone.now() + timedelta(seconds=seconds)


def test_an_iso_expiry_is_kept_and_shown(bob_api):
    when = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    created = remember(
        bob_api, text="The demo server is up until Friday.", expires_at=when.isoformat()
    )
    assert created.status_code == 201
    shown = bob_api.get(f"{BASE}/memories/{created.json()['id']}/").json()
    assert parse_datetime(shown["expires_at"]) == when


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"ttl": "soon"}, "invalid_ttl"),
        ({"ttl": "0"}, "expiry_in_past"),
        ({"expires_at": "next tuesday"}, "invalid_expiry"),
        ({"expires_at": "2001-01-01T00:00:00Z"}, "expiry_in_past"),
        ({"expires_at": "2999-01-01T00:00:00Z", "ttl": "1d"}, "invalid_expiry"),
    ],
)
def test_a_bad_expiry_is_refused_with_its_code(bob_api, body, code):
    response = remember(bob_api, text="This fact has a bad expiry.", **body)
    assert response.status_code == 400 and response.json()["code"] == code
    assert not Memory.objects.exists()


def test_an_expired_memory_leaves_every_read_then_the_cleanup_tombstones_it(acme, bob_api):
    created = remember(bob_api, text="The office wifi password hint is 'blue kangaroo'.", ttl="1h")
    memory_id = created.json()["id"]
    # An hour later (moved in the database, not waited for).
    Memory.objects.filter(pk=memory_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert bob_api.get(f"{BASE}/memories/{memory_id}/").json()["code"] == "memory_expired"
    assert bob_api.get(f"{BASE}/memories/").json()["count"] == 0
    recall = bob_api.post(f"{BASE}/recall/", {"query": "wifi password hint"}, format="json")
    assert memory_id not in recall.json()["ids"]
    pack = bob_api.get(f"{BASE}/session-pack/?minutes=60").content.decode()
    assert "kangaroo" not in pack
    report = services.memory_cleanup(workspace=acme, dry_run=False)
    assert report.removed == 1
    tomb = Memory.objects.get(pk=memory_id)
    assert tomb.forgotten_at is not None and tomb.forgotten_reason == "expired"


# --- bulk forget ----------------------------------------------------------------------


@pytest.fixture
def library(bob_api):
    ids = {}
    for name, body in {
        "ci1": {"text": "CI caches wheels under ~/.cache/pip.", "compartment": "ci"},
        "ci2": {"text": "CI runs the slow tests nightly at 02:00.", "compartment": "ci"},
        "ops": {"text": "The on-call rotation changes every Monday.", "compartment": "ops"},
    }.items():
        ids[name] = remember(bob_api, **body).json()["id"]
    return ids


def test_a_dry_run_counts_and_samples_and_changes_nothing(bob_api, library):
    answer = bob_api.post(
        f"{BASE}/memories/forget/", {"compartment": "ci", "dry_run": True}, format="json"
    )
    assert answer.status_code == 200
    body = answer.json()
    assert body["dry_run"] is True and body["matched"] == 2 and body["forgotten"] == []
    assert {m["id"] for m in body["sample"]} == {library["ci1"], library["ci2"]}
    assert not Memory.objects.filter(forgotten_at__isnull=False).exists()


def test_a_run_tombstones_each_with_its_own_audit_row_and_each_restores(bob_api, library):
    body = bob_api.post(
        f"{BASE}/memories/forget/", {"compartment": "ci", "reason": "CI moved"}, format="json"
    ).json()
    assert sorted(body["forgotten"]) == sorted([library["ci1"], library["ci2"]])
    assert body["remaining"] == 0
    listed = bob_api.get(f"{BASE}/memories/").json()
    assert [m["id"] for m in listed["results"]] == [library["ops"]]
    # "Who removed #N" is in #N's own history, with the run it was part of.
    row = AuditEvent.objects.get(action="memory.forget", target=f"memory:{library['ci1']}")
    assert (
        row.user is not None and row.user.username == "bob" and row.detail["bulk"] == body["bulk"]
    )
    assert row.detail["filter"] == {"compartment": "ci"} and row.detail["reason"] == "CI moved"
    restored = bob_api.post(f"{BASE}/memories/{library['ci1']}/restore/")
    assert restored.status_code == 200 and restored.json()["forgotten"] is None


def test_filters_combine_tags_contains_and_dates(bob_api, library):
    tagged = remember(
        bob_api, text="The nightly job posts to #ci-alerts.", metadata={"tags": ["alerts"]}
    ).json()["id"]
    by_tag = bob_api.post(
        f"{BASE}/memories/forget/", {"tags": ["alerts"], "dry_run": True}, format="json"
    ).json()
    assert [m["id"] for m in by_tag["sample"]] == [tagged]
    by_text = bob_api.post(
        f"{BASE}/memories/forget/",
        {"contains": "nightly", "compartment": "ci", "dry_run": True},
        format="json",
    ).json()
    assert [m["id"] for m in by_text["sample"]] == [library["ci2"]]
    future = (timezone.now() + timedelta(days=1)).isoformat()
    none_yet = bob_api.post(
        f"{BASE}/memories/forget/", {"since": future, "dry_run": True}, format="json"
    ).json()
    assert none_yet["matched"] == 0


def test_an_empty_filter_is_refused(bob_api, library):
    for body in ({}, {"dry_run": True}, {"reason": "spring cleaning"}):
        response = bob_api.post(f"{BASE}/memories/forget/", body, format="json")
        assert response.status_code == 400 and response.json()["code"] == "empty_filter"
    assert not Memory.objects.filter(forgotten_at__isnull=False).exists()


def test_a_viewer_cannot_bulk_forget(acme, victor, make_key, api, library):
    response = api(make_key(victor)).post(
        f"{BASE}/memories/forget/", {"compartment": "ci"}, format="json"
    )
    assert response.status_code == 403
    assert not Memory.objects.filter(forgotten_at__isnull=False).exists()
