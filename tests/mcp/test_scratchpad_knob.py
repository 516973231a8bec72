"""The scratchpad tools follow the workspace's `scratchpad` knob: unlisted and refused when off."""

from __future__ import annotations

import pytest

from contexts.models import Scratchpad
from tests.mcp.client import Mcp

pytestmark = pytest.mark.django_db(transaction=True)

SCRATCH = {"flowctx_scratch_append", "flowctx_scratch_replace", "flowctx_scratch_rethink"}


def test_with_the_scratchpad_off_its_tools_are_unlisted_and_refuse(served, acme, alice, make_key):
    client = Mcp(f"{served.url}/mcp/?workspace=acme&session=dsh-off", make_key(alice))
    names = set(client.tool_names())
    assert "flowctx_retrieve" in names and not names & SCRATCH
    for tool, arguments in (
        ("flowctx_scratch_append", {"text": "Goal: ship"}),
        ("flowctx_scratch_replace", {"old_text": "Goal", "new_text": "Aim"}),
        ("flowctx_scratch_rethink", {"content": "Goal: review"}),
    ):
        refused = client.error(tool, **arguments)
        assert refused["code"] == "scratchpad_off" and "scratchpad" in refused["detail"]
    assert not Scratchpad.objects.filter(session__workspace=acme).exists()


def test_turning_the_scratchpad_on_lists_its_tools_at_the_next_request(
    served, acme, alice, make_key
):
    client = Mcp(f"{served.url}/mcp/?workspace=acme&session=dsh-on", make_key(alice))
    assert not set(client.tool_names()) & SCRATCH
    acme.settings = {**(acme.settings or {}), "scratchpad": True}
    acme.save(update_fields=["settings"])
    assert set(client.tool_names()) >= SCRATCH
    _, pad = client.ok("flowctx_scratch_append", text="Goal: ship")
    assert pad["text"] == "Goal: ship" and pad["enabled"] is True
