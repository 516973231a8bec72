"""A memory's page: its access history from the ledger, beside its use counts."""

# The pages print real minus and multiplication signs, and the tests read what they print.
# ruff: noqa: RUF001

from __future__ import annotations

from contexts.models import AgentSession
from memories import services
from memories.models import Memory
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT, remember, session_story


def test_the_access_history_says_when_and_in_which_session(acme, victor, as_user):
    story = session_story(acme)
    other = AgentSession.objects.create(workspace=acme, external_id=f"sess-2 {SCRIPT}", app="codex")
    services.ledger_record(
        workspace=acme, session=other, memory_ids=[story.used.pk], kind="injected"
    )
    services.ledger_record(
        workspace=acme, session=other, memory_ids=[story.used.pk], kind="expanded"
    )
    Memory.objects.filter(pk=story.used.pk).update(access_count=3)
    html = as_user(victor).get(f"/w/acme/memories/{story.used.pk}/").content.decode()
    section = html.split('id="access"')[1].split("</section>")[0]
    assert "Accessed 3 times" in section
    assert "injected 2×, expanded 1×, recalled 1×, superseded 0×, across 2 sessions" in section
    assert "used after injection in 2 of them" in section
    rows = section.split("<tbody>")[1].split("<tr>")[1:]
    assert len(rows) == 4
    assert "expanded" in rows[0] and f"/w/acme/sessions/{other.pk}/" in rows[0]  # newest first
    assert "codex" in rows[0] and ESCAPED_SCRIPT in rows[0]
    assert "injected" in rows[-1] and f"/w/acme/sessions/{story.session.pk}/" in rows[-1]
    assert SCRIPT not in html


def test_a_memory_no_session_saw_says_so(acme, bob, as_user):
    memory = remember(acme, "Never shown to a model")
    html = as_user(bob).get(f"/w/acme/memories/{memory.pk}/").content.decode()
    assert "No session has been shown this memory yet" in html
    assert "Accessed 0 times" in html


def test_the_history_is_paginated(acme, bob, as_user):
    memory = remember(acme, "Shown in many sessions")
    for i in range(60):
        session = AgentSession.objects.create(workspace=acme, external_id=f"s-{i:02}")
        services.ledger_record(
            workspace=acme, session=session, memory_ids=[memory.pk], kind="injected"
        )
    client = as_user(bob)
    first = client.get(f"/w/acme/memories/{memory.pk}/").content.decode()
    assert "page 1 of 2" in first and "s-59" in first and "s-00" not in first
    assert "s-00" in client.get(f"/w/acme/memories/{memory.pk}/?page=2").content.decode()


def test_another_workspaces_user_gets_404(acme, evil, mallory, as_user):
    story = session_story(acme)
    client = as_user(mallory)
    assert client.get(f"/w/acme/memories/{story.used.pk}/").status_code == 404
    # her own workspace does not reach acme's memory either
    assert client.get(f"/w/evil/memories/{story.used.pk}/").status_code == 404
