"""The prompt's capture beside the ledger: on a pooled connection and in a
transaction of its own under `memflow serve`, inside the ledger's transaction
otherwise, with the same outcome either way."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from contexts.models import SessionEvent
from memories import services
from memories.models import InjectionEvent, Memory
from memories.services import RememberInput

pytestmark = pytest.mark.django_db(transaction=True)

FACT = "The nightly backup job writes to s3://acme-backups/nightly and keeps 14 copies."


@pytest.fixture
def hook(acme, bob, make_key, api):
    client = api(make_key(bob, workspace=acme))

    def call(prompt: str, session_id: str = "cc-1") -> dict:
        body = {"session_id": session_id, "hook_event_name": "UserPromptSubmit", "prompt": prompt}
        response = client.post("/api/v1/hooks/user-prompt", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    return call


def captured_and_recorded(acme, fact: Memory, answer: dict) -> None:
    """What the user sees of one prompt: the fact recalled, the prompt kept as a
    memory of its session, the injection in the ledger and the session log."""
    assert fact.pk in answer["blocks"][-1]["memory_ids"]
    captured = Memory.objects.get(workspace=acme, source="hook")
    assert captured.text == "where do the nightly backups go?"
    assert captured.session is not None and captured.session.external_id == "cc-1"
    assert InjectionEvent.objects.filter(memory_id=fact.pk, kind="injected").count() == 1
    assert SessionEvent.objects.filter(kind="injection").count() == 1


def test_with_a_pool_the_prompt_is_captured_and_the_injection_recorded(acme, hook, pooled):
    fact = services.memory_remember(workspace=acme, item=RememberInput(text=FACT)).memory
    captured_and_recorded(acme, fact, hook("where do the nightly backups go?"))
    # The side thread gave its connection back: a leak would starve later hooks.
    assert connection.pool.get_stats()["pool_available"] >= 1  # type: ignore[attr-defined]


def test_without_a_pool_the_outcome_is_the_same(acme, hook):
    fact = services.memory_remember(workspace=acme, item=RememberInput(text=FACT)).memory
    captured_and_recorded(acme, fact, hook("where do the nightly backups go?"))


def test_a_repeated_fact_is_rehearsed_and_strengthened_without_a_deadlock(acme, hook, pooled):
    """The ledger's rehearsal and the capture's strengthen both want the workspace lock and the row."""
    fact = services.memory_remember(workspace=acme, item=RememberInput(text=FACT)).memory
    answer = hook(FACT)
    assert fact.pk in answer["blocks"][-1]["memory_ids"]
    fact.refresh_from_db()
    assert (fact.access_count, fact.strength) == (1, 2)
    assert not Memory.objects.filter(source="hook").exists()  # folded, not a copy


def test_a_failing_capture_beside_costs_only_the_capture(acme, hook, pooled, monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError("the disk is full")

    fact = services.memory_remember(workspace=acme, item=RememberInput(text=FACT)).memory
    monkeypatch.setattr(services, "memory_remember_bulk", broken)
    answer = hook("where do the nightly backups go?")
    assert fact.pk in answer["blocks"][-1]["memory_ids"]
    assert "hook capability memories:capture failed" in caplog.text
    assert InjectionEvent.objects.filter(memory_id=fact.pk, kind="injected").count() == 1
    assert connection.pool.get_stats()["pool_available"] >= 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("pooled", [10], indirect=True)
def test_sessions_prompting_at_once_all_capture(acme, bob, make_key, api, pooled):
    services.memory_remember(workspace=acme, item=RememberInput(text=FACT))
    key = make_key(bob, workspace=acme)
    errors: list[BaseException] = []

    def session(n: int) -> None:
        client = api(key)
        try:
            for turn in range(3):
                body = {
                    "session_id": f"s{n}",
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": f"backup question {turn} from session {n}: where do copies go?",
                }
                response = client.post("/api/v1/hooks/user-prompt", body, format="json")
                assert response.status_code == 200, response.content
        except BaseException as exc:  # reported below, from the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=session, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and not any(t.is_alive() for t in threads)
    assert Memory.objects.filter(workspace=acme, source="hook").count() == 12
