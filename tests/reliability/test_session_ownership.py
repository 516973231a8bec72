"""Sessions belong to their user (issue 33, finding 2), through the real server.

A co-editor who learned another member's session id (`GET sessions/` lists
it: the team's sessions are an audit trail) could send hooks into it: a
`SessionStart` with `source: compact` handed back that member's frozen USER
document, and prompts, scratchpad edits, a re-freeze and ledger marks all
landed in their session. Now the same id from another user is refused,
403 `session_belongs_to_another_user`, on every path, and nothing of it is
written.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from contexts.models import AgentSession, Scratchpad, SessionEvent
from memories import core, services
from memories.models import InjectionEvent, Memory
from memories.services import RememberInput
from tests.mcp.client import Mcp
from tests.memflow_site.helpers import Served

pytestmark = pytest.mark.django_db(transaction=True)

PRIVATE = "Alice's own note: her sister's name is Marguerite"
SESSION = "alice-0b7e-claude-session"
REFUSED = "session_belongs_to_another_user"


class Agent:
    """One person's agent talking to the live server with a key of their own."""

    def __init__(self, server: Served, key: str) -> None:
        self.http = httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        )

    def claude_hook(self, event: str, **payload: Any) -> httpx.Response:
        """Claude Code's own `"type": "http"` hook."""
        body = {"session_id": SESSION, "cwd": "/src/acme", "hook_event_name": event, **payload}
        return self.http.post("/api/v1/hooks/claude-code?workspace=acme", json=body)

    def hook(self, event: str, **payload: Any) -> httpx.Response:
        """The `hooks/<event>` endpoints `memflow hook` and dsh post to."""
        body = {"session_id": SESSION, "workspace": "acme", "cwd": "/src/acme", **payload}
        return self.http.post(f"/api/v1/hooks/{event}", json=body)

    def api(self, method: str, path: str, **body: Any) -> httpx.Response:
        return self.http.request(method, f"/api/v1/workspaces/acme/{path}", json=body or None)


def refused(response: httpx.Response) -> bool:
    return response.status_code == 403 and response.json()["code"] == REFUSED


@pytest.fixture
def scratchpad_on(acme: Any) -> Any:
    acme.settings = {**(acme.settings or {}), "scratchpad": True}
    acme.save(update_fields=["settings"])
    return acme


@pytest.fixture
def alices_session(memflow_server, scratchpad_on, alice, make_key) -> AgentSession:
    """Alice's Claude Code session: started (her USER frozen into it), one prompt."""
    core.core_edit(scope="user", action="add", workspace=scratchpad_on, user=alice, content=PRIVATE)
    agent = Agent(memflow_server, make_key(alice, workspace=scratchpad_on))
    started = agent.claude_hook("SessionStart", source="startup")
    assert started.status_code == 200, started.text
    assert PRIVATE in started.text  # her own agent is given it
    prompted = agent.claude_hook("UserPromptSubmit", prompt="what was the deploy checklist?")
    assert prompted.status_code == 200, prompted.text
    return AgentSession.objects.get(workspace=scratchpad_on, external_id=SESSION)


@pytest.fixture
def bobs_agent(memflow_server, acme, bob, make_key) -> Agent:
    """Bob, an editor of acme, with a write key of his own."""
    return Agent(memflow_server, make_key(bob, workspace=acme))


def _state(session: AgentSession) -> dict[str, Any]:
    """Everything of the session another user could have written to."""
    session.refresh_from_db()
    return {
        "events": list(SessionEvent.objects.filter(session=session).values_list("pk", "kind")),
        "turns": session.turns,
        "snapshot": session.core_snapshot,
        "ended": session.ended_at,
        "scratchpad": Scratchpad.objects.filter(session=session).exists(),
        "ledger": InjectionEvent.objects.filter(session=session).count(),
        "memories": Memory.objects.filter(session=session).count(),
        "user": session.user_id,
    }


def test_a_co_editor_starting_over_in_her_session_is_not_handed_her_user(
    alices_session, bobs_agent
):
    bob = bobs_agent
    # The id is no secret: the team's session list names it.
    listed = bob.api("GET", "sessions/")
    assert SESSION in [row["session_id"] for row in listed.json()["results"]]
    before = _state(alices_session)
    for source in ("compact", "clear", "resume", "startup"):
        through_claude = bob.claude_hook("SessionStart", source=source)
        assert refused(through_claude), through_claude.text
        assert "Marguerite" not in through_claude.text
        through_hooks = bob.hook("session-start", source=source)
        assert refused(through_hooks), through_hooks.text
        assert "Marguerite" not in through_hooks.text
    assert _state(alices_session) == before


def test_nothing_a_co_editor_sends_lands_in_her_session(alices_session, bobs_agent, acme):
    bob = bobs_agent
    fact = services.memory_remember(
        workspace=acme, item=RememberInput(text="Deploys go out on Tuesdays after the freeze.")
    ).memory
    before = _state(alices_session)
    attempts = {
        "a prompt under her name": bob.claude_hook("UserPromptSubmit", prompt="ignore that"),
        "a prompt (hooks/)": bob.hook("user-prompt", prompt="ignore that, too"),
        "a tool result": bob.hook("post-tool-use", tool_name="Bash", tool_response="ok"),
        "a turn end": bob.claude_hook("Stop", last_assistant_message=f"see #{fact.pk}"),
        "her session's end": bob.hook("session-end"),
        "her scratchpad": bob.api(
            "POST", f"sessions/{SESSION}/scratchpad/", op="append", text="bob was here"
        ),
        "a re-freeze of her core": bob.api("POST", "core/freeze/", session=SESSION),
        "a ledger mark": bob.api(
            "POST", "ledger/", session=SESSION, ids=[fact.pk], kind="injected"
        ),
        "a remembered fact": bob.api("POST", "memories/", text="Bob's fact.", session=SESSION),
        "a fold of her notes": bob.api("POST", f"sessions/{SESSION}/summaries/fold/"),
        "an expand": bob.api("GET", f"memories/{fact.pk}/?session={SESSION}"),
    }
    for what, response in attempts.items():
        assert refused(response), f"{what}: {response.status_code} {response.text}"
    assert _state(alices_session) == before


def test_nor_through_mcp(alices_session, memflow_server, acme, bob, make_key):
    key = make_key(bob, workspace=acme)
    before = _state(alices_session)
    named = Mcp(f"{memflow_server.url}/mcp/?workspace=acme", key)
    for tool, arguments in (
        ("flymemory_remember", {"text": "Bob's fact via MCP.", "session_id": SESSION}),
        ("flymemory_recall", {"query": "deploy checklist", "session_id": SESSION}),
        ("flowctx_scratch_append", {"text": "bob was here", "session_id": SESSION}),
    ):
        error = named.error(tool, **arguments)
        assert error["code"] == REFUSED, (tool, error)
    connected = Mcp(f"{memflow_server.url}/mcp/?workspace=acme&session={SESSION}", key)
    assert connected.error("flymemory_remember", text="Bob's fact, connected.")["code"] == REFUSED
    assert _state(alices_session) == before


def test_her_agent_and_bobs_own_sessions_still_work(
    alices_session, bobs_agent, memflow_server, alice, acme, make_key
):
    own = bobs_agent.http.post(
        "/api/v1/hooks/claude-code?workspace=acme",
        json={"session_id": "bob-1", "cwd": "/src", "hook_event_name": "SessionStart"},
    )
    assert own.status_code == 200, own.text
    assert "Marguerite" not in own.text  # his session is given his USER, not hers
    bobs = AgentSession.objects.select_related("user").get(external_id="bob-1")
    assert bobs.user is not None and bobs.user.username == "bob"
    turns = alices_session.turns
    agent = Agent(memflow_server, make_key(alice, workspace=acme))
    answer = agent.claude_hook("UserPromptSubmit", prompt="and the rollback plan?")
    assert answer.status_code == 200, answer.text
    alices_session.refresh_from_db()
    assert alices_session.turns == turns + 1
