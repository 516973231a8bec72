"""flowctx in the hook pipeline: a large tool result is stored, projected and named."""

from __future__ import annotations

import pytest
from django.test import Client

from contexts.models import CompressionRef
from tests.flowctx.samples import FAILING_TEST_IDS, failing_pytest_run


@pytest.fixture
def client(acme, bob, make_key, api):
    return api(make_key(bob, workspace=acme))


@pytest.fixture
def hook(client):
    def call(event: str, **payload):
        body = {"session_id": "cc-9", "cwd": "/home/bob/acme", "hook_event_name": event, **payload}
        response = client.post(f"/api/v1/hooks/{event}", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    return call


def bash(stdout: str, stderr: str = "", **extra):
    return {
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q"},
        "tool_response": {"stdout": stdout, "stderr": stderr, "interrupted": False, **extra},
    }


def test_a_large_tool_result_is_projected_and_its_original_kept(hook, client, acme):
    output = failing_pytest_run()
    answer = hook("post-tool-use", **bash(output, "warning: slow test\n"))
    projected = answer["tool_result"]
    for test_id in FAILING_TEST_IDS:
        assert test_id in projected["text"]
    assert projected["projected_chars"] < len(output) / 2
    # Claude Code cannot replace the result: it gets a short note naming the ref.
    note = answer["hookSpecificOutput"]["additionalContext"]
    assert note.startswith(f'<memflow-compression ref="{projected["sha256"]}">')
    assert len(note) < 400
    original = client.get(f"/api/v1/workspaces/acme/compression/{projected['sha256']}/")
    assert original.content == (output + "\nwarning: slow test\n").encode()
    ref = CompressionRef.objects.get(workspace=acme)
    assert ref.tool_name == "Bash"
    assert ref.session is not None and ref.session.external_id == "cc-9"


def test_small_results_pass_untouched(hook, acme):
    answer = hook("post-tool-use", **bash("ok\n"))
    assert "tool_result" not in answer
    assert answer["additionalContext"] == ""
    assert not CompressionRef.objects.exists()


def test_the_threshold_and_the_switch_are_per_workspace(hook, acme):
    output = "\n".join(f"line {n}: all good" for n in range(200))  # ~900 tokens
    assert "tool_result" not in hook("post-tool-use", **bash(output))
    acme.settings = {"projection_threshold_tokens": 200}
    acme.save()
    assert "tool_result" in hook("post-tool-use", **bash(output))
    acme.settings = {"projection_threshold_tokens": 200, "projection": False}
    acme.save()
    assert "tool_result" not in hook("post-tool-use", **bash(output + "\nmore"))


def test_projection_is_deterministic_for_a_stable_prompt_prefix(hook):
    output = failing_pytest_run(passed=500)
    first = hook("post-tool-use", **bash(output))
    second = hook("post-tool-use", session_id="cc-10", **bash(output))
    assert first["tool_result"]["text"] == second["tool_result"]["text"]
    assert first["additionalContext"] == second["additionalContext"]


def test_the_originals_page_says_how_many_chars_the_model_was_shown(hook, bob):
    output = failing_pytest_run()
    projected = hook("post-tool-use", **bash(output))["tool_result"]
    browser = Client()
    browser.force_login(bob)
    page = browser.get(f"/w/acme/compression/{projected['sha256']}/").content.decode()
    assert f"{projected['projected_chars']} chars of {len(output)}" in page
