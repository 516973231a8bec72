"""What the tool definitions cost: every listed tool is sent to the model with
every request, so the full set and the `?tools=lean` profile are measured
from a real `tools/list` over HTTP, and FlyMemory's names and arguments must
not change to get there."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.mcp.client import Mcp, text_of
from tests.mcp.test_endpoint import LIST_TOOLS, post_rpc, rpc_result

pytestmark = pytest.mark.django_db(transaction=True)

FULL_BUDGET = 9_000
LEAN_BUDGET = 3_000

# Every tool's arguments, as FlyMemory (and memflow's own tools) published them.
ARGUMENTS = {
    "flymemory_remember": {
        "text",
        "tags",
        "compartment",
        "state_key",
        "state_value",
        "session_id",
        "private",
        "ttl",
    },
    "flymemory_recall": {
        "query",
        "top_k",
        "include_superseded",
        "compartment",
        "session_id",
        "inject",
        "project",
        "as_of",
    },
    "flymemory_auto": {"context", "response", "top_k", "session_id"},
    "flymemory_recall_index": {
        "query",
        "top_k",
        "compartment",
        "budget_chars",
        "session_id",
        "inject",
        "project",
    },
    "flymemory_recall_block": {
        "query",
        "budget_chars",
        "top_k",
        "compartment",
        "include_superseded",
        "session_id",
        "inject",
        "project",
    },
    "flymemory_get_memory": {"memory_id", "session_id"},
    "flymemory_supersede": {
        "memory_id",
        "new_memory_id",
        "text",
        "session_id",
        "old_memory_id",
    },
    "flymemory_state_lookup": {"state_key"},
    "flymemory_state_history": {"state_key"},
    "flymemory_consolidate": {"memory_ids", "conclusion", "compartment", "session_id"},
    "flymemory_find_conflicts": {"min_sim", "limit"},
    "conflict_settle": {"memory_ids", "decision", "conclusion", "keep"},
    "flymemory_insights": {"decay_threshold", "limit"},
    "flymemory_forget": {"memory_id"},
    "flymemory_cleanup": {"min_retention", "protect_model_stored", "dry_run"},
    "flymemory_session_pack": {"minutes"},
    "flymemory_stats": set(),
    "memory": {"action", "target", "content", "old_text", "session_id"},
    "archive_move": {"old_text", "category", "target", "session_id"},
    "flowctx_retrieve": {"hash", "node", "session_id"},
    "flowctx_scratch_append": {"text", "session_id"},
    "flowctx_scratch_replace": {"old_text", "new_text", "session_id"},
    "flowctx_scratch_rethink": {"content", "session_id"},
    "skill_list": {"status"},
    "skill_get": {"name", "session_id"},
}
LEAN = {
    "flymemory_recall",
    "flymemory_get_memory",
    "flymemory_remember",
    "flymemory_supersede",
    "flowctx_retrieve",
}


def listed(url: str, key: str) -> list[dict[str, Any]]:
    response = post_rpc(url, LIST_TOOLS, key)
    assert response.status_code == 200, response.text
    tools: list[dict[str, Any]] = rpc_result(response)["result"]["tools"]
    return tools


def size(tool: dict[str, Any]) -> int:
    """A definition's characters: its name, description and input schema as JSON."""
    definition = {k: tool.get(k) for k in ("name", "description", "inputSchema")}
    return len(json.dumps(definition, ensure_ascii=False))


def test_the_full_set_keeps_its_names_and_arguments_within_budget(
    served, acme, scratchpad_on, alice, make_key
):
    tools = listed(f"{served.url}/mcp/?workspace=acme", make_key(alice))
    arguments = {t["name"]: set(t["inputSchema"].get("properties", {})) for t in tools}
    assert arguments == ARGUMENTS
    total = sum(size(t) for t in tools)
    print(f"full set: {len(tools)} tools, {total} characters of definitions")
    assert total <= FULL_BUDGET
    for tool in tools:  # each says what it is for, in a line or two
        assert 10 <= len(tool["description"]) <= 400, tool["name"]


def test_the_lean_profile_lists_five_tools_within_budget(served, acme, alice, make_key):
    tools = listed(f"{served.url}/mcp/?workspace=acme&tools=lean", make_key(alice))
    assert {t["name"] for t in tools} == LEAN
    total = sum(size(t) for t in tools)
    print(f"lean profile: {len(tools)} tools, {total} characters of definitions")
    assert total <= LEAN_BUDGET


def test_the_lean_profile_works_and_serves_only_its_tools(served, acme, alice, make_key):
    client = Mcp(f"{served.url}/mcp/?workspace=acme&tools=lean", make_key(alice))
    _, stored = client.ok("flymemory_remember", text="The CI cache is keyed on poetry.lock")
    text, found = client.ok("flymemory_recall", query="what is the CI cache keyed on")
    assert stored["id"] in found["ids"] and "poetry.lock" in text
    result = client.call("flymemory_stats")
    assert result.isError and "flymemory_stats" in text_of(result)


def test_an_unknown_profile_is_refused_with_a_code(served, acme, alice, make_key):
    response = post_rpc(f"{served.url}/mcp/?workspace=acme&tools=tiny", LIST_TOOLS, make_key(alice))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "unknown_tools_profile" and "lean" in body["detail"]
