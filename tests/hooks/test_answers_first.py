"""Captured prompts do not crowd out what answers them, through the hook API."""

from __future__ import annotations

import pytest
from django.utils import timezone

from memories import rendering, services
from memories.models import Memory
from memories.selectors.prompts import BLOCK_PROMPT_SHARE
from memories.services import RememberInput

FACT = (
    "Staging database credentials are rotated with `make rotate-staging-creds`; "
    "the new password lands in vault at secret/staging/db."
)
EARLIER = [
    "how do I rotate the staging database credentials?",
    "where do the staging db credentials get rotated, and where does the password go?",
    "rotating staging database passwords: which make target was it?",
    "what's the procedure to rotate credentials for the staging database?",
    "remind me how staging database credential rotation works",
]


@pytest.fixture
def hook(acme, bob, make_key, api):
    client = api(make_key(bob, workspace=acme))

    def call(session: str, prompt: str) -> list[int]:
        body = {
            "session_id": session,
            "cwd": "/home/bob/acme",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
        response = client.post("/api/v1/hooks/user-prompt", body, format="json")
        assert response.status_code == 200, response.content
        blocks = response.json()["blocks"]
        return [i for b in blocks if b["name"] == "memflow:recall" for i in b["memory_ids"]]

    return call


def _captured(acme, ids: list[int]) -> list[int]:
    prompts = set(
        Memory.objects.filter(workspace=acme, source="hook", compartment="").values_list(
            "pk", flat=True
        )
    )
    return [i for i in ids if i in prompts]


def test_the_sessions_own_prompt_does_not_come_back(acme, hook):
    hook("cc-1", "how do I rotate the staging database credentials?")
    turn_one = Memory.objects.get(workspace=acme, source="hook")
    # Even asked for, a session's own prompts are not recalled back to it:
    # the harness has them in its transcript.
    again = hook("cc-1", "what did I ask about the staging database credentials?")
    assert turn_one.pk not in again
    # Another session finds it: the user's history stays searchable.
    elsewhere = hook("cc-2", "what did I ask about the staging database credentials?")
    assert turn_one.pk in elsewhere


def test_the_fact_ranks_above_earlier_questions(acme, hook):
    fact = services.memory_remember(workspace=acme, item=RememberInput(text=FACT)).memory
    for n, prompt in enumerate(EARLIER):
        hook(f"earlier-{n}", prompt)
    assert len(_captured(acme, list(Memory.objects.values_list("pk", flat=True)))) >= 3
    block = hook("new-1", "Which step rotates the credentials of the staging database?")
    assert block[0] == fact.pk
    assert len(_captured(acme, block)) * 3 <= len(block)


def test_the_same_question_from_many_sessions_takes_one_place(acme, hook):
    for n in range(3):
        hook(f"earlier-{n}", "how do I rotate the staging database credentials?")
        hook(f"earlier-{n}", "how do I rotate the staging  database credentials ?")
    block = hook("new-1", "what did I ask before about the staging database credentials?")
    texts = [
        " ".join(t.replace("?", " ").split())
        for t in Memory.objects.filter(pk__in=_captured(acme, block)).values_list("text", flat=True)
    ]
    assert texts == ["how do I rotate the staging database credentials"]


@pytest.mark.parametrize(
    "question",
    [
        "what did I ask earlier about the staging database credentials?",
        "我之前问过 staging database credentials 的什么问题?",
    ],
)
def test_a_question_about_past_requests_finds_them(acme, hook, question):
    services.memory_remember(workspace=acme, item=RememberInput(text=FACT))
    for n, prompt in enumerate(EARLIER[:3]):
        hook(f"earlier-{n}", prompt)
    block = hook("new-1", question)
    captured = _captured(acme, block)
    assert block[0] in captured
    assert len(captured) == 3


def test_prompts_hold_at_most_a_third_of_the_block_when_long_entries_miss_the_budget():
    now = timezone.now()

    def entry(pk: int, text: str, source: str = "model") -> Memory:
        return Memory(pk=pk, text=text, source=source, compartment="", created_at=now)

    long_fact = "Rotation of the staging credentials, step by step. " * 40  # ~2,000 chars
    ranked = [
        entry(1, FACT),
        entry(2, EARLIER[0], source="hook"),
        entry(3, long_fact),  # misses the budget, as long commit bodies do
        entry(4, EARLIER[1], source="hook"),
        entry(5, long_fact + " Again."),
        entry(6, EARLIER[2], source="hook"),
        entry(7, "The staging database is db-staging-2.internal."),
    ]
    _, free = rendering.recall_block(ranked, now=now, budget_chars=1_000)
    # Without a share the budget's leftovers go to the short questions.
    assert free == [1, 2, 4, 6, 7]
    _, ids = rendering.recall_block(
        ranked, now=now, budget_chars=1_000, prompt_share=BLOCK_PROMPT_SHARE
    )
    prompts = [i for i in ids if i in (2, 4, 6)]
    assert ids[0] == 1 and 7 in ids
    assert len(prompts) * BLOCK_PROMPT_SHARE <= len(ids)
    assert prompts == [2]  # the best-ranked question keeps the place there is
