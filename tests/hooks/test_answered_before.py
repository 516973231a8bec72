"""An earlier question leads to what answered it, through the hook API.

The model cites the memories it used as #id (the recall protocol asks it
to); the Stop hook marks those ids `cited` in the session's ledger, and a
later question close to that earlier prompt finds the cited answer first.
"""

from __future__ import annotations

import pytest

from memories import selectors, services
from memories.models import InjectionEvent, Memory
from memories.selectors.entries import MemoryFilters
from memories.services import RememberInput
from tests.hooks.answered_data import ANSWER, EARLIER, OTHERS, QUERY


@pytest.fixture
def hooks(acme, bob, make_key, api):
    client = api(make_key(bob, workspace=acme))

    def prompt(session: str, text: str) -> list[int]:
        body = {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text}
        response = client.post("/api/v1/hooks/user-prompt", body, format="json")
        assert response.status_code == 200, response.content
        blocks = response.json()["blocks"]
        return [i for b in blocks if b["name"] == "memflow:recall" for i in b["memory_ids"]]

    def stop(session: str, answer: str) -> None:
        body = {"session_id": session, "hook_event_name": "Stop", "last_assistant_message": answer}
        response = client.post("/api/v1/hooks/stop", body, format="json")
        assert response.status_code == 200, response.content

    prompt.stop = stop  # type: ignore[attr-defined]
    return prompt


def _remember(acme, text: str, *, user=None, private: bool = False) -> Memory:
    item = RememberInput(text=text, private=private)
    return services.memory_remember(workspace=acme, item=item, user=user).memory


def _cited(acme, session: str) -> list[int]:
    return list(
        InjectionEvent.objects.filter(
            workspace=acme, session__external_id=session, kind=InjectionEvent.Kind.CITED
        ).values_list("memory_id", flat=True)
    )


def test_the_answer_cites_only_memories_the_session_was_shown(acme, hooks):
    answer = _remember(acme, ANSWER)
    assert answer.pk in hooks("cc-1", QUERY)
    # Remembered after the prompt: never shown to this session.
    unseen = _remember(acme, "Release tarballs are signed with the ed25519 key in the vault.")
    hooks.stop(
        "cc-1",
        f"Wait for the cookie first (#{answer.pk}). Issue #12 tracks it; "
        f"not #{unseen.pk}, nor &#{answer.pk}; nor a#{answer.pk}.",
    )
    # #12 is an issue, #unseen was never shown here: neither is a use.
    assert _cited(acme, "cc-1") == [answer.pk]


def test_a_question_asked_before_finds_what_answered_it(acme, hooks):
    answer = _remember(acme, ANSWER)
    for text in OTHERS:
        _remember(acme, text)
    before = selectors.memory_recall(workspace=acme, query=QUERY, k=5)
    # What makes this test worth running: by its words alone the answer is not first.
    assert before.hits[0].memory.pk != answer.pk

    assert answer.pk in hooks("earlier-1", EARLIER)
    hooks.stop("earlier-1", f"It was the session cookie: wait for it (#{answer.pk}).")
    # Another question in the same session does not inherit that answer.
    hooks("earlier-1", "and how do we run the linters?")

    block = hooks("new-1", QUERY)
    assert block[0] == answer.pk
    after = selectors.memory_recall(workspace=acme, query=QUERY, k=5)
    earlier = Memory.objects.get(workspace=acme, source="hook", text=EARLIER)
    carried = next(c for c in after.fusion.candidates if c.id == answer.pk)
    assert carried.answered == earlier.pk


def test_without_a_citation_nothing_is_carried(acme, hooks):
    answer = _remember(acme, ANSWER)
    for text in OTHERS:
        _remember(acme, text)
    first_alone = selectors.memory_recall(workspace=acme, query=QUERY, k=1).hits[0].memory.pk
    hooks("earlier-1", EARLIER)
    hooks.stop("earlier-1", "It was the session cookie.")  # no id cited
    assert hooks("new-1", QUERY)[0] == first_alone != answer.pk


def test_an_answer_the_asker_may_not_read_is_not_carried(acme, alice, bob, make_key, api, hooks):
    # Alice's private note answered her question; Bob's same question must not reveal it.
    secret = _remember(acme, ANSWER, private=True, user=alice)
    alice_client = api(make_key(alice, workspace=acme))

    def alice_says(event: str, body: dict) -> dict:
        response = alice_client.post(f"/api/v1/hooks/{event}", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    shown = alice_says(
        "user-prompt",
        {"session_id": "alice-1", "hook_event_name": "UserPromptSubmit", "prompt": EARLIER},
    )
    assert secret.pk in [i for b in shown["blocks"] for i in b["memory_ids"]]
    alice_says(
        "stop",
        {
            "session_id": "alice-1",
            "hook_event_name": "Stop",
            "last_assistant_message": f"#{secret.pk}",
        },
    )
    assert _cited(acme, "alice-1") == [secret.pk]

    assert secret.pk not in hooks("bob-1", QUERY)
    viewer = MemoryFilters(viewer_id=bob.pk)
    hits = selectors.memory_recall(workspace=acme, query=QUERY, k=10, filters=viewer).hits
    assert secret.pk not in [h.memory.pk for h in hits]
