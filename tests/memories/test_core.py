"""Core memory: bounded USER / MEMORY documents, snapshots, revisions, archive."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from contexts.tenancy import services as context_services
from memories import core
from memories.models import CoreMemory, Memory

MEMORY = CoreMemory.Scope.WORKSPACE
USER = CoreMemory.Scope.USER
BASE = "/api/v1/workspaces/acme"


def add(workspace, text, scope=MEMORY, user=None):
    return core.core_edit(scope=scope, action="add", workspace=workspace, user=user, content=text)


def test_facts_are_lines_ending_in_the_mark(acme):
    add(acme, "This machine runs Ubuntu 22.04, has Docker and Podman installed")
    add(acme, "API keys are stored in ~/.env, never commit them to git §")
    view = core.core_view(scope=MEMORY, user=None, workspace=acme)
    assert view.content == (
        "This machine runs Ubuntu 22.04, has Docker and Podman installed §\n"
        "API keys are stored in ~/.env, never commit them to git §"
    )
    assert (
        view.rendered.splitlines()[1]
        == f"MEMORY [{round(100 * view.chars / 2584)}% — {view.chars}/2,584 chars]"
    )


def test_the_limit_is_exact_and_a_full_add_is_refused_not_truncated(acme):
    core.core_set_limit(scope=MEMORY, workspace=acme, user=None, limit=100)
    first = "a" * 46  # 46 + " §" = 48 chars
    add(acme, first)
    second = "b" * 49  # 48 + 1 newline + 49 + 2 = 100: exactly at the limit
    assert add(acme, second).view.chars == 100
    with pytest.raises(core.CoreFull) as refused:
        add(acme, "c")
    assert refused.value.extra["would_be"] == 104
    assert [c["line"] for c in refused.value.extra["candidates"]][:1] == [first + " §"]
    assert core.core_view(scope=MEMORY, user=None, workspace=acme).chars == 100


def test_replace_and_remove_need_exactly_one_matching_line(acme):
    add(acme, "Deploys run from the release branch")
    add(acme, "Deploys need a green CI run")
    with pytest.raises(core.Ambiguous) as ambiguous:
        core.core_edit(
            scope=MEMORY,
            action="replace",
            workspace=acme,
            user=None,
            old_text="Deploys",
            content="x",
        )
    assert len(ambiguous.value.extra["matches"]) == 2
    with pytest.raises(core.LineNotFound):
        core.core_edit(
            scope=MEMORY, action="remove", workspace=acme, user=None, old_text="nothing like this"
        )
    core.core_edit(
        scope=MEMORY,
        action="replace",
        workspace=acme,
        user=None,
        old_text="green CI",
        content="Deploys need green CI and a review",
    )
    core.core_edit(
        scope=MEMORY, action="remove", workspace=acme, user=None, old_text="release branch"
    )
    assert core.core_view(scope=MEMORY, user=None, workspace=acme).lines == [
        "Deploys need green CI and a review §"
    ]


def test_adding_a_present_fact_changes_nothing_but_marks_it_used(acme):
    add(acme, "Use pnpm")
    edit = add(acme, "Use pnpm §")
    assert edit.outcome == "unchanged"
    doc = CoreMemory.objects.get(workspace=acme)
    assert doc.content == "Use pnpm §" and doc.line_meta["Use pnpm"]["uses"] == 1


def test_a_secret_is_never_written_to_core(acme):
    from memories.services import SecretDetected

    with pytest.raises(SecretDetected):
        add(acme, "Deploy token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB")
    assert core.core_view(scope=MEMORY, user=None, workspace=acme).content == ""


def test_user_memory_follows_the_user_across_workspaces(acme, alice):
    other = context_services.workspace_create(user=alice, slug="side", name="Side project")
    add(acme, "Prefers answers in English, code comments in Chinese", scope=USER, user=alice)
    assert core.core_view(scope=USER, user=alice, workspace=other).lines == [
        "Prefers answers in English, code comments in Chinese §"
    ]
    assert core.core_view(scope=MEMORY, user=None, workspace=other).content == ""


def test_sessions_see_the_documents_frozen_at_their_start(acme, alice):
    add(acme, "Fact one")
    first = context_services.agent_session_get_or_create(
        workspace=acme, external_id="s1", user=alice
    )
    never_started = context_services.agent_session_get_or_create(
        workspace=acme, external_id="s0", user=alice
    )
    core.core_freeze(session=first)
    add(acme, "Fact two, written during the first session")
    first.refresh_from_db()
    assert core.core_snapshot_views(session=first, viewer=None)[MEMORY].lines == ["Fact one §"]
    core.core_freeze(session=first)  # a second freeze keeps the first
    assert core.core_snapshot_views(session=first, viewer=None)[MEMORY].lines == ["Fact one §"]
    second = context_services.agent_session_get_or_create(
        workspace=acme, external_id="s2", user=alice
    )
    core.core_freeze(session=second)
    assert len(core.core_snapshot_views(session=second, viewer=None)[MEMORY].lines) == 2
    assert core.core_snapshot_views(session=never_started, viewer=None) == {}


def test_revisions_record_everything_and_revert_restores(acme, alice):
    session = context_services.agent_session_get_or_create(
        workspace=acme, external_id="s1", user=alice
    )
    core.core_edit(
        scope=MEMORY, action="add", workspace=acme, user=alice, content="Version A", session=session
    )
    core.core_edit(
        scope=MEMORY,
        action="replace",
        workspace=acme,
        user=alice,
        old_text="A",
        content="Version B",
    )
    revisions = core.core_revisions(scope=MEMORY, workspace=acme, user=None)
    assert [(r.version, r.action) for r in revisions] == [(2, "replace"), (1, "add")]
    assert (
        revisions[1].session == session
        and revisions[1].before == ""
        and revisions[1].after == "Version A §"
    )
    core.core_revert(scope=MEMORY, workspace=acme, user=alice, version=1)
    assert core.core_view(scope=MEMORY, user=None, workspace=acme).content == "Version A §"
    assert core.core_revisions(scope=MEMORY, workspace=acme, user=None)[0].action == "revert"


def test_a_well_formed_file_round_trips_byte_for_byte(acme):
    text = (
        "User's project is a Rust web service at ~/code/myapi using Axum + SQLx §\n"
        "This machine runs Ubuntu 22.04, has Docker and Podman installed §\n"
        "API keys are stored in ~/.env, never commit them to git §\n"
        "项目使用 pnpm 管理依赖 §\n"
    )
    core.core_import_text(scope=MEMORY, workspace=acme, user=None, text=text)
    assert core.core_export_text(core.core_view(scope=MEMORY, user=None, workspace=acme)) == text


def test_importing_into_a_document_adds_only_missing_lines(acme):
    add(acme, "Existing fact")
    core.core_import_text(
        scope=MEMORY, workspace=acme, user=None, text="Existing fact §\nNew fact §\n"
    )
    assert core.core_view(scope=MEMORY, user=None, workspace=acme).lines == [
        "Existing fact §",
        "New fact §",
    ]


def test_moving_a_line_to_the_archive(acme):
    add(acme, "The old CI ran on Jenkins at ci.internal")
    add(acme, "Never force-push to main")
    memory = core.core_move_to_archive(
        scope=MEMORY, workspace=acme, user=None, old_text="Jenkins", category="facts"
    )
    assert (
        memory.compartment == "facts" and memory.text == "The old CI ran on Jenkins at ci.internal"
    )
    assert memory.metadata["from_core"] == "MEMORY" and "added" in memory.metadata["core_history"]
    assert memory.expires_at is not None
    assert abs((memory.expires_at - timezone.now()) - timedelta(days=90)) < timedelta(minutes=1)
    lesson = core.core_move_to_archive(
        scope=MEMORY, workspace=acme, user=None, old_text="force-push", category="lessons"
    )
    assert lesson.expires_at is None
    assert core.core_view(scope=MEMORY, user=None, workspace=acme).content == ""


def test_expired_archive_entries_are_cleaned_up(acme):
    from memories import services

    add(acme, "A transient fact about this week's outage")
    memory = core.core_move_to_archive(
        scope=MEMORY, workspace=acme, user=None, old_text="outage", category="facts"
    )
    assert memory.pk not in {i for i, _, _ in services.memory_cleanup(workspace=acme).candidates}
    later = timezone.now() + timedelta(days=91)
    assert memory.pk in {
        i for i, _, _ in services.memory_cleanup(workspace=acme, now=later).candidates
    }


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_lose_no_update(acme):
    def write(i: int) -> None:
        try:
            add(acme, f"Concurrent fact number {i:02d}")
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(write, range(40)))
    doc = CoreMemory.objects.get(workspace=acme)
    assert sorted(core.parse_lines(doc.content)) == [
        f"Concurrent fact number {i:02d} §" for i in range(40)
    ]
    assert doc.version == 40


def test_the_api_edits_and_reports_errors(acme, bob, victor, make_key, api):
    client = api(make_key(bob))
    added = client.post(
        f"{BASE}/core/memory/", {"action": "add", "content": "Staging is eu-west-1"}, format="json"
    )
    assert added.status_code == 200 and added.json()["outcome"] == "added"
    body = client.get(f"{BASE}/core/").json()
    assert body["memory"]["lines"] == ["Staging is eu-west-1 §"]
    assert "MEMORY [" in body["memory"]["rendered"] and "USER [" in body["user"]["rendered"]
    missing = client.post(
        f"{BASE}/core/memory/", {"action": "remove", "old_text": "prod"}, format="json"
    )
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert (
        client.post(f"{BASE}/core/nope/", {"action": "add", "content": "x"}, format="json").json()[
            "code"
        ]
        == "unknown_target"
    )
    assert (
        client.patch(f"{BASE}/core/memory/", {"char_limit": 100}, format="json").json()["code"]
        == "owner_required"
    )
    viewer = api(make_key(victor)).post(
        f"{BASE}/core/memory/", {"action": "add", "content": "x"}, format="json"
    )
    assert viewer.status_code == 403


def test_the_api_refuses_a_full_add_with_candidates(acme, alice, make_key, api):
    client = api(make_key(alice, scope="admin"))
    assert (
        client.patch(f"{BASE}/core/memory/", {"char_limit": 100}, format="json").status_code == 200
    )
    client.post(f"{BASE}/core/memory/", {"action": "add", "content": "x" * 90}, format="json")
    full = client.post(
        f"{BASE}/core/memory/", {"action": "add", "content": "one more fact"}, format="json"
    )
    assert full.status_code == 409
    assert full.json()["code"] == "core_full"
    assert full.json()["candidates"][0]["line"] == "x" * 90 + " §"
    moved = client.post(
        f"{BASE}/core/memory/move/", {"old_text": "xxx", "category": "methods"}, format="json"
    )
    assert moved.status_code == 200 and moved.json()["document"]["content"] == ""
    assert Memory.objects.get(pk=moved.json()["memory"]["id"]).compartment == "methods"
    found = client.post(f"{BASE}/archive/recall/", {"query": "xxxx"}, format="json").json()
    assert found["results"][0]["id"] == moved.json()["memory"]["id"]


def test_the_api_shows_a_sessions_frozen_view(acme, bob, make_key, api):
    client = api(make_key(bob))
    client.post(
        f"{BASE}/core/memory/", {"action": "add", "content": "Before the session"}, format="json"
    )
    client.post(f"{BASE}/core/freeze/", {"session": "sess-1"}, format="json")
    client.post(
        f"{BASE}/core/memory/", {"action": "add", "content": "During the session"}, format="json"
    )
    frozen = client.get(f"{BASE}/core/?session=sess-1").json()
    assert frozen["frozen"] is True and frozen["memory"]["lines"] == ["Before the session §"]
    assert client.get(f"{BASE}/core/?session=unknown").json()["frozen"] is False
    revisions = client.get(f"{BASE}/core/memory/revisions/").json()["results"]
    reverted = client.post(
        f"{BASE}/core/memory/revert/", {"version": revisions[-1]["version"]}, format="json"
    )
    assert reverted.json()["document"]["lines"] == ["Before the session §"]
