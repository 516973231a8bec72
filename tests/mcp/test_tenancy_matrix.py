"""The tenancy matrix for MCP tools, over a real server.

The tools are taken from the server's own `tools/list`, and each one's
arguments are built from its input schema, so a tool added later is tried
without editing this file (an argument the matrix has no value for fails the
first test, which says which one to add).

- alice, an owner of `acme`, names mallory's `evil` rows in every argument
  (memory ids, state keys, a compression hash, a summary node, a session, a
  skill, a core line, her texts as queries): nothing of evil's comes back,
  and nothing of evil's changes.
- victor (a viewer) and alice's read-only key try every tool: the writing
  ones are refused with `read_only_role` / `key_scope`, and acme is unchanged.
- a key revoked between two calls of one MCP session is refused at once.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession

from contexts.flowctx.services import compression_store, scratchpad_edit
from contexts.models import AgentSession, ApiKey, Scratchpad, SessionEvent, SummaryNode
from contexts.tenancy import services
from memories import core
from memories.models import CoreMemory, Memory
from memories.services import RememberInput, memory_remember
from skills.models import Skill
from skills.services import skill_create
from tests.mcp.client import Mcp, text_of

pytestmark = pytest.mark.django_db(transaction=True)

MARK = "MALLORYONLY"  # in every text of evil's; must never reach alice

# The tools that write, and so are refused to viewers and read-only keys.
WRITE_TOOLS = {
    "flymemory_remember",
    "flymemory_auto",
    "flymemory_supersede",
    "flymemory_consolidate",
    "conflict_settle",
    "flymemory_forget",
    "flymemory_cleanup",
    "memory",
    "archive_move",
    "flowctx_scratch_append",
    "flowctx_scratch_replace",
    "flowctx_scratch_rethink",
}


def list_tools(client: Mcp) -> list[dict[str, Any]]:
    async def tools(session: ClientSession) -> list[dict[str, Any]]:
        listed = await session.list_tools()
        return [{"name": t.name, "schema": t.inputSchema} for t in listed.tools]

    return client._run(tools)


def arguments_for(tool: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Every argument of the tool, taken from `values` by name."""
    properties = tool["schema"].get("properties", {})
    missing = sorted(set(properties) - set(values))
    assert not missing, f"the matrix has no value for {tool['name']}({', '.join(missing)})"
    return {name: values[name] for name in properties}


@pytest.fixture
def evil_world(evil, mallory) -> dict[str, Any]:
    """Mallory's rows of every kind the tools can name."""

    first = memory_remember(
        workspace=evil,
        user=mallory,
        item=RememberInput(text=f"{MARK} the vault code is kept in the blue binder"),
    ).memory
    second = memory_remember(
        workspace=evil,
        user=mallory,
        item=RememberInput(
            text=f"{MARK} the heist is planned for the new moon",
            state_key="evil.plan",
            state_value=f"{MARK}-moon",
        ),
    ).memory
    session = AgentSession.objects.create(workspace=evil, user=mallory, external_id="evil-s")
    scratchpad_edit(session=session, op="append", text=f"{MARK} scratch notes")
    ref = compression_store(
        workspace=evil, content=(f"{MARK} tool output line\n" * 400).encode(), session=session
    ).ref
    SummaryNode.objects.create(
        session=session,
        node_id="d0-1-2",
        depth=0,
        start_turn=1,
        end_turn=2,
        text=f"{MARK} handoff note",
        builder=SummaryNode.Builder.EXTRACTIVE,
    )
    core.core_edit(
        scope="memory",
        action="add",
        workspace=evil,
        user=None,
        content=f"{MARK} core line about the vault",
    )
    skill_create(
        workspace=evil,
        user=mallory,
        name="evil-skill",
        description=f"{MARK} how to crack the vault",
        body=f"{MARK} step one",
    )
    return {
        "ids": [first.pk, second.pk],
        "sha256": ref.sha256,
        "session": session.external_id,
    }


def evil_values(world: dict[str, Any]) -> dict[str, Any]:
    a, b = world["ids"]
    return {
        "text": "alice notes where the vault code is kept",
        "query": "where is the vault code kept",
        "context": "where is the vault code kept",
        "response": "",
        "memory_id": a,
        "old_memory_id": a,
        "new_memory_id": b,
        "memory_ids": [a, b],
        "conclusion": "the vault is not ours",
        "decision": "supersede",
        "keep": b,
        "state_key": "evil.plan",
        "state_value": "mine",
        "private": False,
        "ttl": "",
        "tags": "",
        "compartment": "",
        "session_id": world["session"],
        "hash": world["sha256"],
        "node": "",  # asked for separately below: `hash` and `node` exclude each other
        "name": "evil-skill",
        "status": "all",
        "action": "replace",
        "target": "memory",
        "content": "alice's line",
        "old_text": "core line about the vault",  # a substring of evil's line
        "new_text": "alice's line",
        "category": "facts",
        "top_k": 5,
        "include_superseded": True,
        "inject": True,
        "project": "",
        "as_of": "",
        "budget_chars": 4000,
        "min_sim": 0.5,
        "limit": 50,
        "decay_threshold": 1.0,
        "min_retention": 1.0,
        "protect_model_stored": False,
        "dry_run": True,
        "minutes": 100000,
    }


def evil_snapshot(evil) -> tuple[Any, ...]:
    return (
        sorted(Memory.objects.filter(workspace=evil).values_list("id", "text", "valid_to")),
        sorted(CoreMemory.objects.filter(workspace=evil).values_list("content", "version")),
        sorted(Scratchpad.objects.filter(session__workspace=evil).values_list("text", "version")),
        sorted(SummaryNode.objects.filter(session__workspace=evil).values_list("node_id", "text")),
        sorted(Skill.objects.filter(workspace=evil).values_list("name", "status", "version")),
        SessionEvent.objects.filter(session__workspace=evil).count(),
    )


def acme_snapshot(acme) -> tuple[Any, ...]:
    return (
        sorted(Memory.objects.filter(workspace=acme).values_list("id", "text", "valid_to")),
        sorted(CoreMemory.objects.filter(workspace=acme).values_list("content", "version")),
        sorted(Scratchpad.objects.filter(session__workspace=acme).values_list("text", "version")),
        sorted(Skill.objects.filter(workspace=acme).values_list("name", "status", "version")),
    )


def answer_of(result: Any) -> str:
    return text_of(result) + json.dumps(result.structuredContent or {}, ensure_ascii=False)


def test_another_workspaces_rows_are_not_found_by_any_tool(
    served, acme, scratchpad_on, alice, evil, evil_world, make_key
):
    client = Mcp(f"{served.url}/mcp/?workspace=acme", make_key(alice))
    tools = list_tools(client)
    values = evil_values(evil_world)
    before = evil_snapshot(evil)
    answers: dict[str, str] = {}
    for tool in tools:
        result = client.call(tool["name"], **arguments_for(tool, values))
        answer = answer_of(result)
        assert MARK not in answer, (tool["name"], answer)
        answers[tool["name"]] = (
            (result.structuredContent or {}).get("code", "error") if result.isError else "ok"
        )
    # The tools that name one row say it does not exist here, as for a missing one.
    for name in ("flymemory_get_memory", "flymemory_forget", "flymemory_supersede", "skill_get"):
        assert answers[name].endswith("not_found"), (name, answers[name])
    assert answers["flowctx_retrieve"].endswith("not_found")
    node = client.call("flowctx_retrieve", node="d0-1-2", session_id=evil_world["session"])
    assert node.isError and MARK not in answer_of(node)
    assert evil_snapshot(evil) == before
    print("answers to alice naming evil's rows:", answers)


@pytest.mark.parametrize("who", ["viewer", "read-only key"])
def test_a_viewer_and_a_read_only_key_write_nothing(
    served, acme, scratchpad_on, alice, victor, make_key, api, who
):
    writer = api(make_key(alice))
    made = writer.post(
        "/api/v1/workspaces/acme/memories/",
        {"text": "Release branches are cut every second Tuesday"},
        format="json",
    ).json()
    other = writer.post(
        "/api/v1/workspaces/acme/memories/",
        {"text": "Release notes are written by the captain"},
        format="json",
    ).json()
    writer.post(
        "/api/v1/workspaces/acme/core/memory/",
        {"action": "add", "content": "The captain signs the release"},
        format="json",
    )
    writer.post(
        "/api/v1/workspaces/acme/sessions/s1/scratchpad/",
        {"op": "append", "text": "first note"},
        format="json",
    )
    if who == "viewer":
        key, refusal = make_key(victor), "read_only_role"
    else:
        key, refusal = make_key(alice, scope=ApiKey.Scope.READ), "key_scope"
    client = Mcp(f"{served.url}/mcp/?workspace=acme", key)
    values = {
        **evil_values({"ids": [made["id"], other["id"]], "sha256": "0" * 64, "session": "s1"}),
        "text": "A viewer tries to write this",
        "old_text": "The captain signs the release",
        "state_key": "release.day",
        "name": "nothing",
        "inject": False,
        "dry_run": False,
    }
    before = acme_snapshot(acme)
    refused = set()
    for tool in list_tools(client):
        result = client.call(tool["name"], **arguments_for(tool, values))
        if result.isError and (result.structuredContent or {}).get("code") == refusal:
            refused.add(tool["name"])
    assert refused == WRITE_TOOLS
    assert acme_snapshot(acme) == before


def test_a_revoked_key_is_refused_at_the_next_call_of_the_same_session(
    served, acme, alice, make_key
):
    created = services.apikey_create(user=alice)
    client = Mcp(f"{served.url}/mcp/?workspace=acme", created.raw)

    def revoke() -> None:
        services.apikey_revoke(user=alice, key_id=created.key.pk)

    async def call_revoke_call(session: ClientSession) -> tuple[bool, BaseException | None]:
        first = await session.call_tool("flymemory_stats", {})
        await anyio.to_thread.run_sync(revoke)
        try:
            await session.call_tool("flymemory_stats", {})
        except BaseException as exc:  # the SDK raises the transport's 401
            return first.isError, exc
        return first.isError, None

    with pytest.raises(BaseExceptionGroup) as raised:
        client._run(call_revoke_call)
    statuses = [
        error.response.status_code
        for error in _leaves(raised.value)
        if isinstance(error, httpx.HTTPStatusError)
    ]
    assert statuses == [401]


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        found += _leaves(error) if isinstance(error, BaseExceptionGroup) else [error]
    return found
