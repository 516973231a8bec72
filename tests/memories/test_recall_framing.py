"""A prompt worded as a request recalls what its subject alone recalls (memories.framing)."""

from __future__ import annotations

import pytest

from memories import framing, lexical, selectors, services
from memories.selectors import LexicalHit, LexicalResult
from memories.services import RememberInput

pytestmark = pytest.mark.django_db

FACT = "Set retry_max_backoff to 30 in client.toml; lower values hammer the API during outages."
OTHERS = (
    # Entries worded like requests themselves, about something near.
    "Tell me before you change any retry or backoff setting; we have a wiki entry for each one.",
    "Can you check what we noted about the client? Please look up the config for me.",
    "The API client retries failed requests with exponential backoff and jitter.",
    "Backoff settings for the HTTP client: retries are capped, see the client docs.",
    "The nightly backup job keeps fourteen days of database snapshots in cold storage.",
    "Remember to rotate the signing key every quarter; the vault entry tells which one is live.",
    "Retry uploads when the server resets the connection; the client backs off twice.",
    "Database migrations run before the web workers start.",
)


def remember(workspace, text):
    return services.memory_remember(workspace=workspace, item=RememberInput(text=text)).memory


def first(workspace, query):
    return selectors.memory_recall(workspace=workspace, query=query, k=3).hits[0].memory.pk


def test_a_request_worded_prompt_recalls_the_fact_its_subject_recalls(acme):
    fact = remember(acme, FACT)
    for text in OTHERS:
        remember(acme, text)
    subject = "retry max backoff in the client toml"
    assert first(acme, subject) == fact.pk
    for prompt in (
        f"Which entry do we have for this: {subject}. Tell me what you remember.",
        f"can you tell me what we noted about {subject}?",
        f"Please look up {subject} for me, thanks",
    ):
        assert first(acme, prompt) == fact.pk, prompt


def test_a_query_made_of_request_words_is_searched_as_typed(acme):
    note = remember(acme, "Check the notes entry format before tagging a release.")
    remember(acme, "Release tags are signed with the team's GPG key.")
    assert first(acme, "check notes entry") == note.pk
    assert set(framing.framing_weights(["check", "notes", "entry"]).values()) == {1.0}
    # A bare topic keeps its small words' weight; a request discounts its own.
    assert set(framing.framing_weights(["tool", "for", "the", "network"]).values()) == {1.0}
    assert framing.framing_weights(["tell", "me", "backoff", "toml"])["tell"] < 1.0


def test_an_earlier_question_holding_the_words_does_not_decide_the_fusion():
    # Entry 1 is a captured prompt with every word of the query; entry 2 the
    # fact, worded otherwise. The prompt must not make the words trusted.
    query = lexical.parse_query("rotate the staging database credentials")
    lexical_result = LexicalResult(
        hits=[
            LexicalHit(id=1, bm25=20.0, matched_idf=10.0, exact_case=False),
            LexicalHit(id=2, bm25=4.0, matched_idf=3.0, exact_case=False),
        ],
        total_idf=10.0,
    )

    def fused(unweighing: set[int]) -> selectors.Fusion:
        return selectors.fuse(
            query=query,
            dense=[(2, 0.7), (1, 0.6)],
            lexical_result=lexical_result,
            cosines={1: 0.6, 2: 0.7},
            unweighing=unweighing,
        )

    assert fused(set()).lexical_weight > 0.8
    fusion = fused({1})
    assert fusion.lexical_weight < 0.2
    assert fusion.candidates[0].id == 2
