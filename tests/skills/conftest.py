"""Fixtures for the skills tests: bob's key in acme, hook calls, the job queue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from django.utils.module_loading import import_string
from django_q.models import OrmQ
from rest_framework.test import APIClient

from tests.skills.trajectories import Payload

HookCall = Callable[..., dict[str, Any]]


@pytest.fixture
def client(acme, bob, make_key, api) -> APIClient:
    return api(make_key(bob, workspace=acme))


@pytest.fixture
def hook(client, django_capture_on_commit_callbacks) -> HookCall:
    """POST one hook event as Claude Code would; jobs queued on commit reach django-q2."""

    def call(event: str, session: str = "cc-1", **payload: Any) -> dict[str, Any]:
        body = {"session_id": session, "cwd": "/home/bob/acme", **payload}
        body.setdefault("hook_event_name", event)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/api/v1/hooks/{event}", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    return call


TurnPlayer = Callable[..., dict[str, Any]]


@pytest.fixture
def play(hook) -> TurnPlayer:
    """One user turn: the prompt, each tool call, then the turn end. Returns the stop answer."""

    def run(
        prompt: str,
        tools: Sequence[Payload] = (),
        *,
        answer: str = "",
        session: str = "cc-1",
        **extra: Any,
    ) -> dict[str, Any]:
        hook("user-prompt", session=session, prompt=prompt, hook_event_name="UserPromptSubmit")
        for payload in tools:
            hook("post-tool-use", session=session, **payload)
        stop: dict[str, Any] = {"hook_event_name": "Stop", "stop_hook_active": False}
        if answer:
            stop["last_assistant_message"] = answer
        return hook("stop", session=session, **stop, **extra)

    return run


def queued() -> list[tuple[str, tuple[Any, ...]]]:
    """The (function, args) of the jobs waiting in django-q2's queue, oldest first."""
    return [(row.task["func"], tuple(row.task["args"])) for row in OrmQ.objects.order_by("id")]


def run_queued() -> list[Any]:
    """Run the waiting skills jobs as a worker would, and take them off the queue."""
    results = []
    for row in OrmQ.objects.order_by("id"):
        task = row.task
        if not task["func"].startswith("skills.tasks."):
            continue
        results.append(import_string(task["func"])(*task["args"], **task.get("kwargs", {})))
        row.delete()
    return results
