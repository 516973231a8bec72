"""The server's side of a cut tool output, and of a failed tool call.

The hook client sends the whole output it read on the agent's machine as
`memflow_output`; the server keeps exactly that, says when it could not
have all of it, and never reads a path a request names.
"""

from __future__ import annotations

import base64
import hashlib

import pytest

from contexts.flowctx.notes import note_events
from contexts.models import CompressionRef, SessionEvent

PREVIEW_CHARS = 30_000


@pytest.fixture
def client(acme, bob, make_key, api):
    return api(make_key(bob, workspace=acme))


@pytest.fixture
def hook(client):
    def call(event: str, **payload):
        body = {"session_id": "cc-7", "cwd": "/home/bob/acme", **payload}
        body.setdefault("hook_event_name", "PostToolUse")
        response = client.post(f"/api/v1/hooks/{event}", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    return call


def whole(rows: int = 2000) -> bytes:
    return "".join(f"row {i:06d} {'x' * 80}\n" for i in range(rows)).encode()


def cut(data: bytes, path: str = "/home/bob/.claude/projects/p/s/tool-results/b1.txt") -> dict:
    """A Bash call as Claude Code reports one whose output it cut and saved."""
    return {
        "tool_name": "Bash",
        "tool_input": {"command": "make rows"},
        "tool_response": {
            "stdout": data.decode()[:PREVIEW_CHARS],
            "stderr": "",
            "interrupted": False,
            "persistedOutputPath": path,
            "persistedOutputSize": len(data),
        },
    }


def test_the_whole_output_sent_is_kept_byte_for_byte(hook, client, acme):
    data = whole()
    sha = hashlib.sha256(data).hexdigest()
    answer = hook(
        "post-tool-use",
        **cut(data),
        memflow_output={
            "source": "persistedOutputPath",
            "size": len(data),
            "sha256": sha,
            "text": data.decode(),
        },
    )
    note = answer["hookSpecificOutput"]["additionalContext"]
    assert note.startswith(f'<memflow-compression ref="{sha}">')
    assert f"({len(data):,} bytes) is stored whole" in note
    stored = client.get(f"/api/v1/workspaces/acme/compression/{sha}/")
    assert stored.content == data and stored.content.endswith(b"\n")
    # The session log describes it; the ref is its one copy.
    logged = SessionEvent.objects.get(kind="post-tool-use").payload["memflow_output"]
    assert logged == {"source": "persistedOutputPath", "size": len(data), "sha256": sha}


def test_an_output_that_is_not_utf8_is_kept_as_sent(hook, client, acme):
    data = whole(500) + b"\xff\xfe\n"
    sha = hashlib.sha256(data).hexdigest()
    hook(
        "post-tool-use",
        **cut(whole(500)),
        memflow_output={
            "size": len(data),
            "sha256": sha,
            "base64": base64.b64encode(data).decode(),
        },
    )
    assert bytes(CompressionRef.objects.get(workspace=acme, sha256=sha).content) == data


def test_a_refused_output_keeps_the_preview_marked_cut_with_the_real_size(hook, client, acme):
    data = whole()
    reason = "persistedOutputPath /x/b1.txt holds 2,000,000 bytes, over MEMFLOW_HOOK_MAX_BYTES"
    answer = hook(
        "post-tool-use",
        **cut(data),
        memflow_output={"source": "persistedOutputPath", "size": len(data), "refused": reason},
    )
    note = answer["hookSpecificOutput"]["additionalContext"]
    assert 'truncated="true"' in note and "Only part of the Bash output" in note
    assert f"of the whole output ({len(data):,} bytes in all), because {reason}" in note
    preview = data.decode()[:PREVIEW_CHARS].encode()
    ref = client.get(f"/api/v1/workspaces/acme/compression/{hashlib.sha256(preview).hexdigest()}/")
    assert ref.content == preview
    listed = CompressionRef.objects.get(workspace=acme)
    assert listed.content_type.endswith(f"truncated-from={len(data)}")
    # The reason is in the session log, for the person reading it.
    logged = SessionEvent.objects.get(kind="post-tool-use").payload["memflow_output"]
    assert logged["refused"] == reason


def test_content_that_does_not_match_its_hash_is_not_trusted(hook, acme):
    data = whole()
    answer = hook(
        "post-tool-use",
        **cut(data),
        memflow_output={"size": len(data), "sha256": "0" * 64, "text": data.decode()},
    )
    note = answer["hookSpecificOutput"]["additionalContext"]
    assert "does not match its size and sha256" in note
    assert bytes(CompressionRef.objects.get(workspace=acme).content) != data


def test_the_server_never_reads_a_path_a_request_names(hook, acme, tmp_path):
    secret = tmp_path / "server-side.txt"
    secret.write_text("server secret " * 5000)
    answer = hook("post-tool-use", **cut(whole(), path=str(secret)))  # an old client: no output
    assert b"server secret" not in bytes(CompressionRef.objects.get(workspace=acme).content)
    note = answer["hookSpecificOutput"]["additionalContext"]
    assert "because the hook sent only the preview" in note


def test_a_failed_tool_call_is_a_post_tool_use_flagged_failed(hook, acme):
    answer = hook(
        "post-tool-use",
        hook_event_name="PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "ls /missing"},
        error="Exit code 2\nls: cannot access '/missing': No such file or directory",
    )
    assert answer["event"] == "post-tool-use"
    event = SessionEvent.objects.get(kind="post-tool-use")
    [tool] = note_events([(event.kind, event.payload)])
    assert tool.failed and "No such file" in tool.text


def test_the_failure_endpoint_flags_a_harness_that_names_no_event(client, acme):
    response = client.post(
        "/api/v1/hooks/post-tool-use-failure",
        {"session_id": "dsh-1", "tool_name": "shell", "tool_input": {"command": "make"}},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["event"] == "post-tool-use"
    event = SessionEvent.objects.get(kind="post-tool-use")
    assert event.payload["is_error"] is True
    [tool] = note_events([(event.kind, event.payload)])
    assert tool.failed
