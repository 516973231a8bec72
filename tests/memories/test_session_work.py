"""Session work becomes memory: a session's fix, found next week by a question in
other words, without the model having called `remember`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django_q.models import OrmQ

from contexts.models import SessionEvent
from memories.bench.work_sessions import SESSIONS, ScriptedSession
from memories.models import Memory


@pytest.fixture
def client(acme, bob, make_key, api):
    return api(make_key(bob, workspace=acme))


def run_worker() -> int:
    """What the django-q2 worker does: take each queued task and run it, until none is left."""
    from django.utils.module_loading import import_string

    ran = 0
    while (queued := OrmQ.objects.order_by("id").first()) is not None:
        task = queued.task
        queued.delete()
        import_string(task["func"])(*task["args"], **task["kwargs"])
        ran += 1
    return ran


@pytest.fixture
def replay(client, django_capture_on_commit_callbacks) -> Callable[..., None]:
    def play(script: ScriptedSession, *, end: bool = True, **extra: Any) -> None:
        events = [*script.events, ("session-end", {"reason": "exit"})] if end else script.events
        for kind, payload in events:
            body = {"session_id": script.external_id, "cwd": "/home/bob/acme", **payload, **extra}
            with django_capture_on_commit_callbacks(execute=True):
                answer = client.post(f"/api/v1/hooks/{kind}", body, format="json")
            assert answer.status_code == 200, answer.content
        run_worker()

    return play


def recall(client, query: str, **extra: Any) -> list[dict[str, Any]]:
    answer = client.post(
        "/api/v1/workspaces/acme/recall/", {"query": query, "k": 5, **extra}, format="json"
    )
    assert answer.status_code == 200, answer.content
    return answer.json()["results"]


def test_a_fix_from_an_ended_session_is_recalled_in_other_words(client, replay):
    retry = SESSIONS[0]
    replay(retry)
    for other in SESSIONS[1:4]:
        replay(other)
    found = recall(client, "how did we fix the flaky retry test?")
    fixes = [r for r in found if r.get("work", {}).get("kind") == "fix"]
    assert found[0]["source"] == "session" and fixes and found.index(fixes[0]) <= 1
    fix = fixes[0]
    assert fix["work"] == {"session": "work-retry", "node": "", "turns": [1, 1], "kind": "fix"}
    assert "AssertionError: expected 3 attempts" in fix["text"]
    assert "src/http/retry.py" in fix["text"]
    # In the block a prompt hook or `mode=block` shows: the age, the session and its turns.
    block = client.post(
        "/api/v1/workspaces/acme/recall/",
        {"query": "how did we fix the flaky retry test?", "mode": "block"},
        format="json",
    ).json()["block"]
    assert f"#{fix['id']} | <1h | session | session work-retry turns 1-1]" in block
    # The session log says what was kept.
    capture = SessionEvent.objects.get(session__external_id="work-retry", kind="work-capture")
    assert capture.payload["kept"]["memories:session-work"]["added"]


def test_a_session_adds_a_few_memories_and_a_repeat_adds_none(client, replay, acme):
    replay(SESSIONS[0])
    first = Memory.objects.filter(workspace=acme, source="session").count()
    assert 1 <= first <= 4
    # The same work in another session: deduped against what exists.
    replay(ScriptedSession("work-retry-again", SESSIONS[0].events))
    assert Memory.objects.filter(workspace=acme, source="session").count() == first


def test_what_the_model_remembered_is_not_repeated(client, replay, acme):
    script = SESSIONS[0]
    replay(script, end=False)
    answer = client.post(
        "/api/v1/workspaces/acme/memories/",
        {
            "text": "Fixed a failure of `pytest tests/test_retry.py -q`: FAILED "
            "tests/test_retry.py::test_backoff_retries - AssertionError: expected 3 attempts "
            "within 0.5s, got 2. The fix made retry sleep through an injected clock.",
            "session": script.external_id,
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    replay(ScriptedSession(script.external_id, []))
    kinds = [m.metadata["kind"] for m in Memory.objects.filter(workspace=acme, source="session")]
    assert "fix" not in kinds and "task" in kinds


def test_the_knob_turns_it_off(client, replay, acme):
    acme.settings = {"session_work": False}
    acme.save()
    replay(SESSIONS[0])
    assert not Memory.objects.filter(workspace=acme, source="session").exists()
    assert not SessionEvent.objects.filter(kind="work-capture").exists()


def test_a_session_with_nothing_readable_adds_nothing_and_says_why(client, replay, acme):
    replay(
        ScriptedSession("work-empty", [("post-tool-use", {"tool_name": 7, "tool_response": []})])
    )
    assert not Memory.objects.filter(workspace=acme, source="session").exists()
    capture = SessionEvent.objects.get(session__external_id="work-empty", kind="work-capture")
    assert capture.payload["kept"]["memories:session-work"]["why"] == (
        "nothing in the note to keep"
    )
    replay(ScriptedSession("work-none", []))
    nothing = SessionEvent.objects.get(session__external_id="work-none", kind="work-capture")
    assert nothing.payload["why"] == "the session has no events"


def test_an_error_then_a_different_command_that_worked_is_a_lesson(client, replay, acme):
    npm = next(s for s in SESSIONS if s.external_id == "work-npm")
    replay(npm)
    lesson = Memory.objects.get(workspace=acme, source="session", compartment="lessons")
    assert lesson.text.startswith("Lesson: `npm ci` failed with npm ERR!")
    assert "`npm ci --legacy-peer-deps` worked instead" in lesson.text
    assert lesson.metadata["kind"] == "lesson" and lesson.metadata["session"] == "work-npm"
    # The same command passing again is no lesson: the fix memory says what changed.
    replay(SESSIONS[0])
    assert Memory.objects.filter(compartment="lessons").count() == 1
    # A command that holds a credential is refused as remember refuses it: nothing is kept.
    leaky = ScriptedSession(
        "work-leak",
        [
            ("user-prompt", {"prompt": "push the image to the registry"}),
            bash_event("docker login -u ci -p hunter2 registry.acme.dev", "Error: unauthorized", 1),
            bash_event(
                "docker login -u ci --password ghp_R4nd0mT0k3nV4lu3Th4tL00ksR3al1234 "
                "registry.acme.dev",
                "Login Succeeded",
            ),
        ],
    )
    replay(leaky)
    assert not Memory.objects.filter(text__contains="ghp_").exists()


def bash_event(command: str, output: str, exit_code: int = 0):
    from memories.bench.work_sessions import bash

    return bash(command, output, exit_code)


def test_a_fold_hands_its_leaf_on_and_the_memory_points_at_the_node(client, replay, acme):
    acme.settings = {"summary_leaf_tokens": 50, "summary_keep_turns": 1}
    acme.save()
    retry = SESSIONS[0]
    later = [("user-prompt", {"prompt": "now update the changelog"}), ("stop", {})]
    replay(ScriptedSession(retry.external_id, [*retry.events, *later]), end=False)
    fix = Memory.objects.get(workspace=acme, source="session", metadata__kind="fix")
    assert fix.metadata["node"] == "d0-1-1" and fix.metadata["turns"] == [1, 1]
    # The node named is the one the notes API returns in full.
    node = client.get(f"/api/v1/workspaces/acme/sessions/{retry.external_id}/summaries/d0-1-1/")
    assert node.status_code == 200 and "test_backoff_retries" in node.json()["text"]
