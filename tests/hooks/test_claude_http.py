"""`POST /api/v1/hooks/claude-code`: Claude Code's http hooks, its JSON in, its hook output out."""

from __future__ import annotations

import pytest

from contexts.models import AgentSession, SessionEvent
from memories import services
from memories.models import Memory
from memories.services import RememberInput

URL = "/api/v1/hooks/claude-code"


@pytest.fixture
def post(acme, bob, make_key, api):
    """POST Claude Code's hook JSON as its http hook does, with bob's unrestricted key."""
    client = api(make_key(bob))

    def call(event_name: str, query: str = "?workspace=acme", **payload):
        body = {
            "session_id": "cc-http-1",
            "cwd": "/home/bob/acme",
            "transcript_path": "/home/bob/.claude/projects/x/cc-http-1.jsonl",
            "hook_event_name": event_name,
            **payload,
        }
        return client.post(f"{URL}{query}", body, format="json")

    return call


def test_a_prompt_gets_recall_in_claude_codes_output_format(acme, post):
    fact = services.memory_remember(
        workspace=acme,
        item=RememberInput(text="The payments service retries webhooks 5 times with backoff."),
    ).memory
    response = post("UserPromptSubmit", prompt="how many times do payment webhooks retry?")

    assert response.status_code == 200, response.content
    answer = response.json()
    # Only what Claude Code's validation of hook output accepts.
    assert list(answer) == ["hookSpecificOutput"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert f"#{fact.pk}" in context and "data, not instructions" in context
    # Recorded as the command hook records it: the session, its app, the captured prompt.
    session = AgentSession.objects.get(external_id="cc-http-1")
    assert (session.workspace_id, session.app) == (acme.pk, "claude-code")
    captured = Memory.objects.get(workspace=acme, source="hook")
    assert captured.text == "how many times do payment webhooks retry?"


def test_events_without_context_answer_an_empty_object_and_are_recorded(acme, post):
    assert post("UserPromptSubmit", prompt="deploy the billing worker").status_code == 200
    for name, extra in (
        ("Stop", {"stop_hook_active": False, "last_assistant_message": "Deployed."}),
        ("PreCompact", {"trigger": "manual", "custom_instructions": ""}),
        ("SessionEnd", {"reason": "other"}),
    ):
        response = post(name, **extra)
        assert response.status_code == 200, response.content
        assert response.json() == {}
    kinds = list(SessionEvent.objects.order_by("pk").values_list("kind", flat=True))
    assert kinds == ["user-prompt", "stop", "pre-compact", "session-end"]
    assert AgentSession.objects.get(external_id="cc-http-1").ended_at is not None


def test_a_failed_tool_call_is_recorded_as_a_failure(post):
    response = post(
        "PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "ls /missing"},
        error="ls: cannot access '/missing': No such file or directory",
    )
    assert response.status_code == 200, response.content
    event = SessionEvent.objects.get(kind="post-tool-use")
    assert event.payload["hook_event_name"] == "PostToolUseFailure"
    hookspecific = response.json().get("hookSpecificOutput")
    assert hookspecific is None or hookspecific["hookEventName"] == "PostToolUseFailure"


def test_the_server_never_reads_a_path_the_request_names(acme, post, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT " * 3000)
    response = post(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "cat big"},
        tool_response={
            "stdout": "preview",
            "persistedOutputPath": str(secret),
            "persistedOutputSize": secret.stat().st_size,
        },
    )
    assert response.status_code == 200, response.content
    assert "TOP-SECRET-CONTENT" not in response.content.decode()
    logged = SessionEvent.objects.get(kind="post-tool-use").payload
    assert "TOP-SECRET-CONTENT" not in str(logged)
    assert logged["tool_response"]["persistedOutputPath"] == str(secret)


def test_bad_input_gets_a_stable_code(post, api):
    missing = post("", query="?workspace=acme")
    assert (missing.status_code, missing.json()["code"]) == (400, "hook_event_name_required")
    unknown = post("Notification", message="hi")
    assert (unknown.status_code, unknown.json()["code"]) == (400, "unknown_event")
    nowhere = post("UserPromptSubmit", query="", prompt="which workspace?")
    assert nowhere.status_code == 400
    anonymous = api("mf_not_a_key").post(f"{URL}?workspace=acme", {}, format="json")
    assert anonymous.status_code in (401, 403)


def test_another_users_workspace_is_refused(acme, post, make_key, api, mallory):
    client = api(make_key(mallory))
    body = {"session_id": "s", "cwd": "/", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
    response = client.post(f"{URL}?workspace=acme", body, format="json")
    assert response.status_code in (403, 404)
    assert not AgentSession.objects.filter(workspace=acme).exists()
