"""Private memories and expiry through the MCP tools, over a real `memflow serve`."""

from __future__ import annotations

import pytest

from memories.models import Memory
from tests.mcp.client import Mcp

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "Bob's draft: the Q3 rocket codename is Bluebird, not announced yet."


@pytest.fixture
def bob_mcp(served, acme, bob, make_key) -> Mcp:
    return Mcp(f"{served.url}/mcp/?workspace=acme", make_key(bob))


@pytest.fixture
def alice_mcp(served, acme, alice, make_key) -> Mcp:
    return Mcp(f"{served.url}/mcp/?workspace=acme", make_key(alice))


def test_a_private_memory_with_a_ttl_is_its_authors_alone(bob_mcp, alice_mcp):
    _, stored = bob_mcp.ok("flymemory_remember", text=SECRET, private=True, ttl="7d")
    memory = Memory.objects.get(pk=stored["id"])
    assert memory.private and memory.expires_at is not None
    assert stored["memory"]["private"] is True and stored["memory"]["expires_at"]

    text, found = bob_mcp.ok("flymemory_recall", query="rocket codename")
    assert memory.pk in found["ids"] and "Bluebird" in text
    for tool, args in (
        ("flymemory_recall", {"query": "rocket codename"}),
        ("flymemory_recall_index", {"query": "rocket codename"}),
        ("flymemory_recall_block", {"query": "Bluebird codename"}),
        ("flymemory_session_pack", {}),
    ):
        seen, _ = alice_mcp.ok(tool, **args)
        assert "Bluebird" not in seen, tool
    assert alice_mcp.error("flymemory_get_memory", memory_id=memory.pk)["code"] == (
        "memory_not_found"
    )
    assert alice_mcp.error("flymemory_forget", memory_id=memory.pk)["code"] == "memory_not_found"


def test_a_bad_ttl_is_refused_with_its_code(bob_mcp):
    assert bob_mcp.error("flymemory_remember", text="Short-lived fact.", ttl="someday")["code"] == (
        "invalid_ttl"
    )
