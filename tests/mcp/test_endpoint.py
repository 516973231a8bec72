"""The endpoint itself: what it publishes, who it lets in, and in which workspace."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from contexts.models import ApiKey
from contexts.tenancy import services
from memories.models import Memory
from tests.mcp.client import Mcp, text_of

pytestmark = pytest.mark.django_db(transaction=True)

FLYMEMORY_TOOLS = {
    "flymemory_remember",
    "flymemory_recall",
    "flymemory_auto",
    "flymemory_recall_index",
    "flymemory_get_memory",
    "flymemory_supersede",
    "flymemory_state_lookup",
    "flymemory_state_history",
    "flymemory_consolidate",
    "flymemory_find_conflicts",
    "flymemory_insights",
    "flymemory_forget",
    "flymemory_cleanup",
    "flymemory_session_pack",
    "flymemory_stats",
    "flymemory_recall_block",
}
MEMFLOW_TOOLS = {
    "memory",
    "archive_move",
    "conflict_settle",
    "flowctx_retrieve",
    "flowctx_scratch_append",
    "flowctx_scratch_replace",
    "flowctx_scratch_rethink",
    "skill_list",
    "skill_get",
}


def post_rpc(url: str, body: dict[str, Any], key: str | None = None) -> httpx.Response:
    """A bare JSON-RPC POST, as FlyMemory's hooks send it (no handshake)."""
    headers = {"Accept": "application/json, text/event-stream"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return httpx.post(url, json=body, headers=headers, timeout=60)


def rpc_result(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer in a streamed (SSE) or plain JSON response."""
    for line in response.text.splitlines():
        raw = line[5:].strip() if line.startswith("data:") else line.strip()
        if raw.startswith("{"):
            message = json.loads(raw)
            if "result" in message or "error" in message:
                return message
    raise AssertionError(f"no JSON-RPC answer in {response.text!r}")


def leaves(group: BaseExceptionGroup) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        found += leaves(error) if isinstance(error, BaseExceptionGroup) else [error]
    return found


LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def test_it_lists_every_tool(served, acme, scratchpad_on, alice, make_key):
    names = Mcp(f"{served.url}/mcp/?workspace=acme", make_key(alice)).tool_names()
    assert set(names) == FLYMEMORY_TOOLS | MEMFLOW_TOOLS
    assert len(names) == len(set(names))


def test_it_answers_a_flymemory_hook_without_a_handshake(served, acme, alice, make_key):
    key = make_key(alice, workspace=acme)
    response = post_rpc(
        f"{served.url}/mcp?app=dsh",  # FlyMemory's path, without the slash
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "flymemory_auto",
                "arguments": {"context": "The nightly export job writes to /srv/exports"},
            },
        },
        key,
    )
    assert response.status_code == 200
    result = rpc_result(response)["result"]
    text = "\n".join(item["text"] for item in result["content"])
    assert "RECALL: no relevant memories" in text and "STORED: [NEW #" in text
    captured = Memory.objects.get(workspace=acme)
    assert (captured.source, captured.app) == ("hook", "dsh")
    assert f"#{captured.pk}" in text


def test_it_takes_the_workspace_from_a_restricted_key(served, acme, alice, make_key):
    text, stats = Mcp(f"{served.url}/mcp/", make_key(alice, workspace=acme)).ok("flymemory_stats")
    assert text == "Memory empty." and stats["current"] == 0


def test_it_needs_a_workspace_when_the_key_names_none(served, acme, alice, make_key):
    response = post_rpc(f"{served.url}/mcp/", LIST_TOOLS, make_key(alice))
    assert response.status_code == 400
    assert response.json()["code"] == "workspace_required"


def test_it_refuses_requests_without_a_valid_key(served, acme, alice, make_key):
    url = f"{served.url}/mcp/?workspace=acme"

    missing = post_rpc(url, LIST_TOOLS)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert missing.json() == {
        "code": "not_authenticated",
        "detail": "Authentication credentials were not provided.",
    }

    invalid = post_rpc(url, LIST_TOOLS, "mf_not-a-key")
    assert invalid.status_code == 401
    assert invalid.json()["code"] == "authentication_failed"

    created = services.apikey_create(user=alice)
    services.apikey_revoke(user=alice, key_id=created.key.pk)
    revoked = post_rpc(url, LIST_TOOLS, created.raw)
    assert revoked.status_code == 401
    assert revoked.json()["code"] == "authentication_failed"

    with pytest.raises(BaseExceptionGroup) as raised:  # the SDK's client gives up too
        Mcp(url, "mf_not-a-key").tool_names()
    statuses = [
        error.response.status_code
        for error in leaves(raised.value)
        if isinstance(error, httpx.HTTPStatusError)
    ]
    assert statuses == [401]


def test_it_records_when_a_key_was_last_used(served, acme, alice, make_key):
    raw = make_key(alice)
    Mcp(f"{served.url}/mcp/?workspace=acme", raw).ok("flymemory_stats")
    key = ApiKey.objects.get(user=alice)
    assert key.last_used_at is not None


def test_it_answers_not_found_for_another_users_workspace(served, acme, evil, alice, make_key):
    for key in (make_key(alice), make_key(alice, workspace=acme)):
        response = post_rpc(f"{served.url}/mcp/?workspace=evil", LIST_TOOLS, key)
        assert response.status_code == 404
        assert response.json() == {"code": "workspace_not_found", "detail": "No workspace 'evil'."}
    unknown = post_rpc(f"{served.url}/mcp/?workspace=nowhere", LIST_TOOLS, make_key(alice))
    assert unknown.status_code == 404  # the same answer whether or not it exists


def test_a_viewer_reads_but_cannot_write(served, acme, alice, victor, make_key):
    Mcp(f"{served.url}/mcp/?workspace=acme", make_key(alice)).ok(
        "flymemory_remember", text="Release branches are cut every second Tuesday"
    )
    viewer = Mcp(f"{served.url}/mcp/?workspace=acme", make_key(victor))
    text, found = viewer.ok("flymemory_recall", query="when are release branches cut")
    assert "second Tuesday" in text and found["ids"]
    refused = viewer.error("flymemory_remember", text="Victor was here")
    assert refused["code"] == "read_only_role"
    assert viewer.error("memory", action="add", target="user", content="x")["code"] == (
        "read_only_role"
    )

    read_key = Mcp(f"{served.url}/mcp/?workspace=acme", make_key(alice, scope=ApiKey.Scope.READ))
    assert read_key.error("flymemory_forget", memory_id=found["ids"][0])["code"] == "key_scope"
    assert Memory.objects.filter(workspace=acme).count() == 1


def test_a_service_error_is_a_tool_error_with_its_code(served, acme, alice, make_key):
    client = Mcp(f"{served.url}/mcp/?workspace=acme", make_key(alice))
    result = client.call("flymemory_get_memory", memory_id=987654)
    assert result.isError
    assert json.loads(text_of(result)) == {
        "code": "memory_not_found",
        "detail": "No memory #987654 in this workspace.",
    }
    secret = client.error("flymemory_remember", text="my key is AKIAIOSFODNN7EXAMPLE ok")
    assert secret["code"] == "secret_detected"
    invalid = client.error("flymemory_recall", query="anything", top_k=1000)
    assert invalid["code"] == "invalid" and invalid["detail"].startswith("k:")
