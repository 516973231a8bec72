"""The MCP recall takes `as_of`: what was current at a past time."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.mcp.client import Mcp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(served, acme, alice, make_key) -> Mcp:
    return Mcp(f"{served.url}/mcp/?workspace=acme", make_key(alice))


def test_recall_as_of_answers_the_value_current_then(client):
    _, old = client.ok(
        "flymemory_remember", text="Deploys go out on Tuesdays", state_key="deploy.day"
    )
    between = timezone.now().isoformat()
    _, new = client.ok(
        "flymemory_remember", text="Deploys go out on Thursdays now", state_key="deploy.day"
    )
    _, now = client.ok("flymemory_recall", query="which day do deploys go out?")
    _, then = client.ok("flymemory_recall", query="which day do deploys go out?", as_of=between)
    assert now["ids"] == [new["id"]] and then["ids"] == [old["id"]]
    error = client.error("flymemory_recall", query="deploys", as_of="someday")
    assert error["code"]
