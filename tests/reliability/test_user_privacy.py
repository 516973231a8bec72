"""USER belongs to its user (finding 4 of the security review).

The USER document frozen into a session was readable by every member of the
session's workspace, through `core/?session=` and the dashboard's session
page, lines written in other workspaces included. Now another member learns
that a USER block was injected, never what it says.
"""

from __future__ import annotations

import pytest
from django.test import Client

from contexts.models import AgentSession
from memories import core

PRIVATE = "Alice's private note from another workspace: her landlord's name is Quill"


@pytest.fixture
def alices_session(acme, alice, make_key, api):
    core.core_edit(scope="user", action="add", workspace=acme, user=alice, content=PRIVATE)
    agent = api(make_key(alice, workspace=acme))
    answer = agent.post(
        "/api/v1/hooks/session-start",
        {"session_id": "alice-1", "cwd": "/src", "hook_event_name": "SessionStart"},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert PRIVATE in answer.content.decode()  # her own agent is given it
    return AgentSession.objects.get(workspace=acme, external_id="alice-1")


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_another_member_reads_that_user_was_frozen_not_its_text(
    alices_session, acme, alice, bob, make_key, api
):
    as_bob = api(make_key(bob, workspace=acme)).get("/api/v1/workspaces/acme/core/?session=alice-1")
    assert as_bob.status_code == 200
    user_doc = as_bob.json()["user"]
    assert user_doc["hidden"] is True
    assert PRIVATE not in as_bob.content.decode()
    as_alice = api(make_key(alice, workspace=acme)).get(
        "/api/v1/workspaces/acme/core/?session=alice-1"
    )
    assert as_alice.json()["user"]["hidden"] is False
    assert PRIVATE in as_alice.json()["user"]["content"]


def test_freezing_someone_elses_session_does_not_hand_back_their_user(
    alices_session, acme, bob, make_key, api
):
    answer = api(make_key(bob, workspace=acme)).post(
        "/api/v1/workspaces/acme/core/freeze/", {"session": "alice-1"}, format="json"
    )
    if answer.status_code == 200:
        assert PRIVATE not in answer.content.decode()
    else:  # refusing is as good as hiding
        assert answer.status_code in (403, 404)


def test_the_session_page_names_the_user_block_without_its_text(alices_session, alice, bob):
    url = f"/w/acme/sessions/{alices_session.pk}/"
    page = browser(bob).get(url).content.decode()
    assert "memflow:core-user" in page
    assert "only they can read it" in page
    assert "Quill" not in page
    own = browser(alice).get(url).content.decode()
    assert "Quill" in own
