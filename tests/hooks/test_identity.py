"""Declared identity during a session, and a declaration that cannot be used.

The hook client re-reads the declared files before each prompt and sends the
assembly only when one changed; the server injects a changed section once,
as an update. A declaration that does not parse is logged and said to the
person once per session, line-numbered.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from contexts.declarations import DiskSource, assemble
from contexts.models import SessionEvent
from memflow_site.client import hook as hook_client
from memflow_site.client import session as hook_session
from tests.hooks.test_install_http import CLIENT, KEY, by_event, install
from tests.memflow_site.helpers import free_port

BROKEN = "systemPrompt: [AGENT.md\n"  # a flow list that does not close


@pytest.fixture
def hook(acme, bob, make_key, api):
    client = api(make_key(bob, workspace=acme))

    def call(event: str, **payload: Any) -> dict[str, Any]:
        body = {"session_id": "cc-id", "cwd": "/srv/acme", "hook_event_name": event, **payload}
        response = client.post(f"/api/v1/hooks/{event}", body, format="json")
        assert response.status_code == 200, response.content
        answer: dict[str, Any] = response.json()
        return answer

    return call


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "acme"
    (root / ".dsh").mkdir(parents=True)
    (root / ".dsh" / "context.yaml").write_text("systemPrompt: [AGENT.md]\npreload: [STATUS.md]\n")
    (root / "AGENT.md").write_text("You are the release engineer.\n")
    (root / "STATUS.md").write_text("Release 4.2 is blocked on QA.\n")
    return root


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMFLOW_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def resolved(directory: Path) -> dict[str, Any]:
    assembly: dict[str, Any] = assemble(source=DiskSource(), directory=str(directory)).to_json()
    return assembly


def sent(event: str, project: Path, session: str = "cc-id") -> dict[str, Any]:
    """What the hook client sends for this event (the payload before it is posted)."""
    return hook_client.build_payload(event, {"session_id": session, "cwd": str(project)}, {})


# --- the server: a changed section, once ------------------------------------------------


def names(answer: dict[str, Any]) -> list[str]:
    return [b["name"] for b in answer["blocks"]]


def test_a_changed_identity_reaches_the_next_prompt_once(hook, project):
    start = hook("session-start", source="startup", context=resolved(project))
    assert "You are the release engineer." in start["additionalContext"]
    assert "context:preload" in names(start)

    (project / "AGENT.md").write_text("You are the release engineer. Never deploy on Fridays.\n")
    changed = hook("user-prompt", prompt="ship 4.2 now", context=resolved(project))
    identity = [b for b in changed["blocks"] if b["name"].startswith("context:identity")]
    assert len(identity) == 1
    # Said as the version that replaces the one the session was given.
    assert "Never deploy on Fridays." in identity[0]["text"]
    assert "replaces the version you were given earlier" in identity[0]["text"]
    assert "context:preload" not in names(changed)  # the preload is given once, at the start

    # The same text again (a client that lost its state sends it): not repeated.
    same = hook("user-prompt", prompt="and 4.3?", context=resolved(project))
    assert not [n for n in names(same) if n.startswith("context:")]
    # Back to the first text: the model holds the other one now, so it is said again.
    (project / "AGENT.md").write_text("You are the release engineer.\n")
    back = hook("user-prompt", prompt="what about 4.4?", context=resolved(project))
    assert [n for n in names(back) if n.startswith("context:")] == ["context:identity:0"]
    # A prompt without an assembly (nothing changed on the agent's disk) gets none.
    plain = hook("user-prompt", prompt="thanks, and the changelog?")
    assert not [n for n in names(plain) if n.startswith("context:")]


def test_an_unchanged_identity_is_not_repeated_and_a_compaction_gives_it_plainly(hook, project):
    hook("session-start", source="startup", context=resolved(project))
    unchanged = hook("user-prompt", prompt="ship 4.2 now", context=resolved(project))
    assert not [n for n in names(unchanged) if n.startswith("context:")]
    (project / "AGENT.md").write_text("You are the on-call engineer.\n")
    # After a compaction the conversation starts over: the section as it is, no update frame.
    compacted = hook("session-start", source="compact", context=resolved(project))
    text = next(b["text"] for b in compacted["blocks"] if b["name"] == "context:identity:0")
    assert text == "You are the on-call engineer.\n"


# --- the server: a declaration that cannot be used ----------------------------------------


def test_a_broken_declaration_is_logged_and_said_to_the_person_once(acme, hook, project):
    (project / ".dsh" / "context.yaml").write_text(BROKEN)
    assembly = resolved(project)
    start = hook("session-start", source="startup", context=assembly)
    path = project / ".dsh" / "context.yaml"
    assert start["systemMessage"].startswith(f"memflow: {path}:1: ")
    assert "`memflow context`" in start["systemMessage"]
    event = SessionEvent.objects.get(session__external_id="cc-id", kind="context.error")
    assert event.payload["error"].startswith(f"{path}:1: ")
    # Once per session: a resume, or a later prompt with the same error, is quiet.
    assert "systemMessage" not in hook("session-start", source="resume", context=assembly)
    assert "systemMessage" not in hook("user-prompt", prompt="go on then", context=assembly)
    # Another error is said, once.
    (project / ".dsh" / "context.yaml").write_text("systemPrompt: AGENT.md\ninherit: maybe\n")
    other = hook("user-prompt", prompt="and now?", context=resolved(project))
    assert other["systemMessage"].startswith(f"memflow: {path}:")
    assert SessionEvent.objects.filter(kind="context.error").count() == 2
    # Another session is told again.
    again = hook("session-start", source="startup", context=assembly, session_id="cc-other")
    assert "systemMessage" in again


def test_claude_codes_http_hooks_carry_the_message(acme, bob, make_key, api, project):
    (project / ".dsh" / "context.yaml").write_text(BROKEN)
    client = api(make_key(bob, workspace=acme))
    body = {
        "session_id": "cc-http",
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "ship it",
        "context": resolved(project),
    }
    answer = client.post("/api/v1/hooks/claude-code", body, format="json").json()
    assert set(answer) == {"systemMessage"}  # nothing for the model: no section resolved
    assert answer["systemMessage"].startswith(f"memflow: {project}/.dsh/context.yaml:1: ")


def test_the_session_page_shows_the_error(acme, bob, hook, project, client):
    (project / ".dsh" / "context.yaml").write_text(BROKEN)
    hook("session-start", source="startup", context=resolved(project))
    session = SessionEvent.objects.get(kind="context.error").session
    client.force_login(bob)
    page = client.get(f"/w/{acme.slug}/sessions/{session.pk}/")
    assert page.status_code == 200
    shown = page.content.decode().split('class="event-text"')
    assert any(f"{project}/.dsh/context.yaml:1: a flow list" in part for part in shown[1:])


# --- the client: re-read cheaply, sent when changed ------------------------------------------


def test_the_client_sends_the_identity_only_when_a_declared_file_changed(state, project):
    start = sent("session-start", project)
    assert start["context"]["preload"] is not None  # the session's first message
    assert "context" not in sent("user-prompt", project)  # nothing changed: nothing sent

    (project / "AGENT.md").write_text("You are the on-call engineer.\n")
    changed = sent("user-prompt", project)["context"]
    assert [s["text"] for s in changed["sections"]] == ["You are the on-call engineer.\n"]
    assert changed["preload"] is None  # given once, at the start
    assert "context" not in sent("user-prompt", project)

    # A file the declaration names that did not exist at the start counts too.
    (project / ".dsh" / "context.yaml").write_text("systemPrompt: [AGENT.md, RULES.md]\n")
    assert len(sent("user-prompt", project)["context"]["sections"]) == 1
    (project / "RULES.md").write_text("No deploys on Fridays.\n")
    later = sent("user-prompt", project)["context"]
    assert [s["text"] for s in later["sections"]][1:] == ["No deploys on Fridays.\n"]
    # Other sessions keep their own record.
    assert "context" in sent("user-prompt", project, session="cc-2")


def test_a_same_size_edit_within_one_mtime_tick_is_seen(state, project):
    sent("session-start", project)
    agent = project / "AGENT.md"
    before = agent.stat()
    agent.write_text("You are the release ENGINEER.\n")  # same length
    os.utime(agent, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same mtime
    assert "ENGINEER" in sent("user-prompt", project)["context"]["sections"][0]["text"]


def test_the_client_sends_a_declaration_that_does_not_parse(state, project, tmp_path):
    (project / ".dsh" / "context.yaml").write_text(BROKEN)
    assembly = sent("session-start", project)["context"]
    assert assembly["sections"] == [] and assembly["warnings"][0].startswith(
        f"{project}/.dsh/context.yaml:1: "
    )
    bare = tmp_path / "bare"
    bare.mkdir()
    assert "context" not in sent("session-start", bare)
    assert "context" not in sent("user-prompt", bare)


def test_a_failed_call_sends_the_identity_again_next_time(state, project, monkeypatch):
    monkeypatch.setenv("MEMFLOW_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens
    monkeypatch.setenv("MEMFLOW_WORKSPACE", "acme")
    call = json.dumps({"session_id": "cc-id", "cwd": str(project)})
    assert hook_client.run("SessionStart", call) == ""
    assert not hook_session.identity_state_path("cc-id").exists()
    assert "context" in sent("user-prompt", project)


def test_the_client_prints_the_message_for_the_person():
    answer = {"systemMessage": "memflow: x.yaml:1: bad", "additionalContext": ""}
    assert json.loads(hook_client.harness_output("user-prompt", answer)) == {
        "systemMessage": "memflow: x.yaml:1: bad"
    }
    both = json.loads(
        hook_client.harness_output("session-start", {**answer, "additionalContext": "hi"})
    )
    assert both["hookSpecificOutput"]["additionalContext"] == "hi"
    assert both["systemMessage"] == "memflow: x.yaml:1: bad"


# --- install-hooks: a declaring project keeps UserPromptSubmit a command ------------------------


def test_a_project_that_declares_context_reads_its_files_before_each_prompt(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".dsh").mkdir()
    (tmp_path / ".dsh" / "context.yaml").write_text("systemPrompt: [AGENT.md]\n")
    done = install(tmp_path, "install-hooks", "--claude-code", **CLIENT, MEMFLOW_API_KEY=KEY)
    hooks = by_event(json.loads((tmp_path / ".claude" / "settings.local.json").read_text()))
    assert hooks["UserPromptSubmit"]["type"] == "command"
    assert hooks["UserPromptSubmit"]["command"].endswith(" hook user-prompt")
    assert {n for n, h in hooks.items() if h["type"] == "http"} == {
        "Stop",
        "PreCompact",
        "PreToolUse",
        "SubagentStart",
        "SubagentStop",
    }
    assert "Stop, PreCompact, PreToolUse, SubagentStart, SubagentStop post to" in done.stderr
    assert "this project declares context" in done.stderr
