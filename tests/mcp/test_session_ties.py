"""MCP tools tied to the session the hooks reported: what the model uses
through MCP lands in that session's ledger, and what it remembers gets that
session and its app. A session id the workspace does not know is ignored
(the tool still works, and says so) rather than made up."""

from __future__ import annotations

import pytest

from contexts.models import AgentSession
from memories import services
from memories.models import InjectionEvent, Memory
from memories.selectors import ledger_summary
from memories.services import RememberInput
from tests.mcp.client import Mcp

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "5f0c9a7e-claude-session"


@pytest.fixture
def hooked(acme, alice, make_key, api):
    """A Claude Code session as the hooks report it: started, then a prompt; a fact
    was injected."""
    client = api(make_key(alice, workspace=acme))

    def hook(event: str, **payload: object) -> dict:
        body = {
            "session_id": SESSION,
            "cwd": "/home/alice/acme",
            "hook_event_name": event,
            "app": "claude-code",
            **payload,
        }
        response = client.post(f"/api/v1/hooks/{event}", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    fact = services.memory_remember(
        workspace=acme,
        item=RememberInput(text="The billing service retries failed invoices every 6 hours."),
    ).memory
    start = hook("session-start", source="startup")
    answer = hook("user-prompt", prompt="how often does billing retry failed invoices?")
    # Injected once: by the restore pack at the start, or by the prompt's recall.
    given = [i for a in (start, answer) for b in a["blocks"] for i in b["memory_ids"]]
    assert given.count(fact.pk) == 1
    return fact


@pytest.fixture
def client(served, acme, alice, make_key) -> Mcp:
    # As `claude mcp add` is told in the README: no `?session=`, no `?app=`.
    return Mcp(f"{served.url}/mcp/?workspace=acme", make_key(alice))


def _marks(session: AgentSession, memory_id: int) -> set[str]:
    return set(
        InjectionEvent.objects.filter(session=session, memory_id=memory_id).values_list(
            "kind", flat=True
        )
    )


def test_uses_through_mcp_land_in_the_hook_sessions_ledger(client, acme, hooked):
    session = AgentSession.objects.get(workspace=acme, external_id=SESSION)
    assert _marks(session, hooked.pk) == {"injected"}
    client.ok("flymemory_get_memory", memory_id=hooked.pk, session_id=SESSION)
    client.ok("flymemory_recall", query="billing invoice retry interval", session_id=SESSION)
    assert _marks(session, hooked.pk) == {"injected", "expanded", "recalled"}
    ledger = ledger_summary(workspace=acme, viewer_id=None, session_id=SESSION)
    assert ledger["used"] == 1 and ledger["use_rate"] == 1.0


def test_a_memory_remembered_through_mcp_gets_the_session_and_its_app(client, acme, hooked):
    _, stored = client.ok(
        "flymemory_remember", text="Invoices are retried by a cron job", session_id=SESSION
    )
    memory = Memory.objects.select_related("session").get(pk=stored["id"])
    assert memory.session is not None and memory.session.external_id == SESSION
    assert memory.app == "claude-code"


def test_the_connections_app_still_wins_over_the_sessions(served, acme, alice, make_key, hooked):
    client = Mcp(f"{served.url}/mcp/?workspace=acme&app=codex", make_key(alice))
    _, stored = client.ok(
        "flymemory_remember", text="Invoices go out on the 1st", session_id=SESSION
    )
    assert Memory.objects.get(pk=stored["id"]).app == "codex"


def test_an_unknown_session_id_is_ignored_and_said_so(client, acme, hooked):
    sessions = AgentSession.objects.count()
    text, stored = client.ok(
        "flymemory_remember", text="Refunds are processed nightly", session_id="not-a-session"
    )
    assert text.startswith(f"[NEW #{stored['id']}]")
    assert "'not-a-session' is not a session of this workspace" in text
    memory = Memory.objects.get(pk=stored["id"])
    assert memory.session_id is None and memory.app == ""
    text, _ = client.ok("flymemory_get_memory", memory_id=hooked.pk, session_id="not-a-session")
    assert "The billing service retries" in text and "not a session" in text
    assert AgentSession.objects.count() == sessions
    assert not InjectionEvent.objects.filter(kind="expanded").exists()


def test_a_tool_that_needs_a_session_refuses_an_unknown_one(client, acme, hooked, scratchpad_on):
    refused = client.error("flowctx_scratch_append", text="todo", session_id="not-a-session")
    assert refused["code"] == "session_not_found"
    client.ok("flowctx_scratch_append", text="todo: check the cron", session_id=SESSION)


def test_a_harness_that_injects_still_creates_its_session(client, acme, hooked):
    # FlyMemory's dsh hooks name their session only through MCP, first with an inject.
    client.ok("flymemory_recall_block", query="billing retries", session_id="dsh-9", inject=True)
    assert AgentSession.objects.filter(workspace=acme, external_id="dsh-9").exists()
