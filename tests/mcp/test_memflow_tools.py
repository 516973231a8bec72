"""memflow's own tools: core memory, the archive, flowctx retrieve and the scratchpad."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from contexts.models import AgentSession, Scratchpad, SummaryNode
from memories.models import CoreMemory, Memory
from tests.mcp.client import Mcp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def key(acme, alice, make_key) -> str:
    return make_key(alice)


@pytest.fixture
def client(served, key) -> Mcp:
    return Mcp(f"{served.url}/mcp/?workspace=acme", key)


def test_memory_adds_replaces_and_removes_core_lines(client, acme, alice):
    text, added = client.ok(
        "memory", action="add", target="memory", content="CI runs on Buildkite agents"
    )
    assert added["outcome"] == "added" and text.startswith("added\n")
    assert "CI runs on Buildkite agents §" in text and "MEMORY [" in text
    client.ok("memory", action="add", target="user", content="Prefers terse answers")
    _, replaced = client.ok(
        "memory",
        action="replace",
        target="memory",
        old_text="Buildkite",
        content="CI runs on GitHub Actions",
    )
    assert replaced["document"]["lines"] == ["CI runs on GitHub Actions §"]
    workspace_doc = CoreMemory.objects.get(scope="memory", workspace=acme)
    user_doc = CoreMemory.objects.get(scope="user", user=alice)
    assert workspace_doc.content == "CI runs on GitHub Actions §"
    assert user_doc.content == "Prefers terse answers §"

    full = client.error("memory", action="add", target="memory", content="word " * 700)
    assert full["code"] == "core_full" and full["limit"] == 2584
    assert full["candidates"][0]["line"] == "CI runs on GitHub Actions §"
    assert client.error("memory", action="remove", target="memory", old_text="nope")["code"] == (
        "not_found"
    )
    assert client.error("memory", action="add", target="team", content="x")["code"] == (
        "unknown_target"
    )

    _, removed = client.ok("memory", action="remove", target="user", old_text="terse")
    assert removed["outcome"] == "removed" and removed["document"]["content"] == ""


def test_archive_move_demotes_a_line_into_the_library(client, acme):
    client.ok("memory", action="add", target="memory", content="Staging DB is restored nightly")
    text, moved = client.ok("archive_move", old_text="Staging DB", category="facts")
    memory = Memory.objects.get(pk=moved["memory"]["id"])
    assert (memory.text, memory.compartment) == ("Staging DB is restored nightly", "facts")
    assert text.startswith(f"[ARCHIVED #{memory.pk} as facts]")
    assert moved["document"]["content"] == ""
    assert client.error("archive_move", old_text="x", category="gossip")["code"] == "invalid"


def test_flowctx_retrieve_gives_back_what_rest_stored(served, client, key, acme):
    original = "".join(f"line {i}: résultat ✓ — 日志 {i * 7}\n" for i in range(400))
    stored = httpx.post(
        f"{served.url}/api/v1/workspaces/acme/compression/",
        json={"text": original, "tool_name": "Bash"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    assert stored.status_code == 201, stored.text
    sha = stored.json()["ref"]["sha256"]
    assert sha == hashlib.sha256(original.encode()).hexdigest()

    text, ref = client.ok("flowctx_retrieve", hash=sha)
    assert text == original
    assert ref["size"] == len(original.encode()) and ref["sha256"] == sha
    prefix_text, _ = client.ok("flowctx_retrieve", hash=sha[:24])  # flowctx-dsh's length
    assert prefix_text == original

    assert client.error("flowctx_retrieve", hash="0" * 64)["code"] == "not_found"
    assert client.error("flowctx_retrieve", hash="xyz")["code"] == "invalid_hash"
    assert client.error("flowctx_retrieve")["code"] == "retrieve_target"


def test_flowctx_retrieve_reads_a_handoff_note(client, acme, alice):
    session = AgentSession.objects.create(workspace=acme, user=alice, external_id="dsh-42")
    SummaryNode.objects.create(
        session=session,
        node_id="d0-1-12",
        depth=0,
        start_turn=1,
        end_turn=12,
        text="## TASK\nMigrate the billing worker\n## OPEN STATE\nretry queue not drained",
        builder=SummaryNode.Builder.EXTRACTIVE,
    )
    text, node = client.ok("flowctx_retrieve", node="d0-1-12", session_id="dsh-42")
    assert text.startswith("## TASK\nMigrate the billing worker")
    assert node["node"] == "d0-1-12" and node["active"] is True
    assert client.error("flowctx_retrieve", node="d0-1-12")["code"] == "session_required"
    missing = client.error("flowctx_retrieve", node="d9-9-9", session_id="dsh-42")
    assert missing["code"] == "node_not_found"


def test_the_scratchpad_tools_edit_the_sessions_working_memory(served, key, acme, scratchpad_on):
    client = Mcp(f"{served.url}/mcp/?workspace=acme&session=dsh-7", key)
    client.ok("flowctx_scratch_append", text="Goal: ship the importer")
    text, pad = client.ok("flowctx_scratch_append", text="TODO: pickle fixture")
    assert text.startswith('<working_memory chars_current="')
    assert pad["text"] == "Goal: ship the importer\nTODO: pickle fixture"
    _, pad = client.ok("flowctx_scratch_replace", old_text="TODO", new_text="DONE")
    assert pad["text"].endswith("DONE: pickle fixture") and pad["version"] == 3
    _, pad = client.ok("flowctx_scratch_rethink", content="Goal: review")
    assert pad == {
        "text": "Goal: review",
        "chars_current": 12,
        "chars_limit": 8000,
        "version": 4,
        "enabled": True,
    }
    stored = Scratchpad.objects.get(session__workspace=acme, session__external_id="dsh-7")
    assert stored.text == "Goal: review"

    missing = client.error("flowctx_scratch_replace", old_text="nope", new_text="x")
    assert missing["code"] == "old_text_not_found"
    full = client.error("flowctx_scratch_rethink", content="x" * 9000)
    assert full["code"] == "scratchpad_full"
    no_session = Mcp(f"{served.url}/mcp/?workspace=acme", key)
    assert no_session.error("flowctx_scratch_append", text="x")["code"] == "session_required"


def test_the_skill_tools_list_the_catalogue_and_load_a_body_recording_the_use(served, key, acme):
    from skills import services as skill_services
    from skills.models import Skill, SkillUse

    skill_services.skill_create(
        workspace=acme,
        user=None,
        name="release-checklist",
        description="Cut a release of the payments service",
        body="1. Tag\n2. Build\n3. Announce",
        why="written by hand",
    )
    client = Mcp(f"{served.url}/mcp/?workspace=acme&session=dsh-9", key)
    text, catalogue = client.ok("skill_list")
    assert text == "release-checklist: Cut a release of the payments service"
    assert "body" not in catalogue["skills"][0]
    text, skill = client.ok("skill_get", name="release-checklist")
    assert text.endswith("1. Tag\n2. Build\n3. Announce") and skill["version"] == 1
    assert SkillUse.objects.filter(skill__name="release-checklist").count() == 1
    assert Skill.objects.get(name="release-checklist").use_count == 1
    assert client.error("skill_get", name="nope")["code"] == "skill_not_found"
