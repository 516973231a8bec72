"""What the hook client reads on the agent's machine at and after a session start:
which memflow tools the model has, and Claude Code's compaction summary."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memflow_site.client import session as hook_session
from tests.memflow_site.helpers import MEMFLOW, free_port

SUMMARY_LINE = {
    "type": "user",
    "isCompactSummary": True,
    "message": {
        "role": "user",
        "content": (
            "This session is being continued from a previous conversation that ran out of "
            "context. The summary below covers the earlier portion of the conversation.\n\n"
            "Summary:\n{summary}\n\nIf you need specific details from before compaction (like "
            "exact code snippets), read the full transcript at: /x.jsonl\nContinue."
        ),
    },
}


def summary_line(summary: str) -> str:
    entry = json.loads(json.dumps(SUMMARY_LINE))
    entry["message"]["content"] = entry["message"]["content"].format(summary=summary)
    return json.dumps(entry) + "\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("MEMFLOW_MCP", raising=False)
    monkeypatch.setenv("MEMFLOW_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def test_the_latest_summary_is_read_and_lines_that_do_not_parse_are_skipped(tmp_path: Path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        summary_line("first compaction")
        + "{not json\n"
        + summary_line("second compaction")
        + '{"type": "user", "isCompactSummary": tru'  # cut mid-write
    )
    assert hook_session.compaction_summary(str(transcript)) == "second compaction"
    transcript.write_text("{not json\n" * 5)
    assert hook_session.compaction_summary(str(transcript)) is None
    assert hook_session.compaction_summary(str(tmp_path / "missing.jsonl")) is None
    assert hook_session.compaction_summary(str(tmp_path)) is None  # a directory


def test_a_summary_reaches_the_next_hook_once(home: Path, tmp_path: Path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(summary_line("an older compaction"))
    base = {"session_id": "cc-1", "transcript_path": str(transcript)}

    start = {**base, "source": "compact"}
    hook_session.attach_compaction(start)
    assert "compaction" not in start  # not written yet when this hook runs
    early = dict(base)
    hook_session.attach_compaction(early)
    assert "compaction" not in early  # only the older one there: still waiting

    with transcript.open("a") as handle:
        handle.write(summary_line("what the session did"))
    other = {"session_id": "cc-2", "transcript_path": str(transcript)}
    hook_session.attach_compaction(other)
    assert "compaction" not in other  # another session's hook leaves it
    later = dict(base)
    hook_session.attach_compaction(later)
    assert later["compaction"] == "what the session did"
    again = dict(base)
    hook_session.attach_compaction(again)
    assert "compaction" not in again


def test_the_mcp_server_is_found_by_this_memflows_url_in_claude_codes_settings(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    config = {"url": "http://127.0.0.1:8000"}
    assert hook_session.mcp_server_name(str(project), config) is None

    # `claude mcp add` (local scope) under another name: found by its URL.
    state = {
        "projects": {
            str(project): {
                "mcpServers": {
                    "other": {"type": "http", "url": "http://example.com/mcp"},
                    "mem": {"type": "http", "url": "http://127.0.0.1:8000/mcp/?workspace=w"},
                }
            }
        }
    }
    (home / ".claude.json").write_text(json.dumps(state))
    assert hook_session.mcp_server_name(str(project), config) == "mem"

    # The project's .mcp.json, a server named memflow at another address.
    (home / ".claude.json").write_text("{}")
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"memflow": {"type": "http", "url": "https://m.example/mcp"}}})
    )
    assert hook_session.mcp_server_name(str(project), config) == "memflow"

    monkeypatch.setenv("MEMFLOW_MCP", "off")
    assert hook_session.mcp_server_name(str(project), config) is None
    tools = hook_session.memflow_tools(str(project), {**config, "workspace": "w"})
    assert tools["mcp"] is None and tools["cli_workspace"] is True


def test_a_hook_with_a_transcript_that_does_not_parse_still_exits_0(home: Path, tmp_path: Path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "MEMFLOW_STATE_DIR": str(tmp_path / "state"),
        "MEMFLOW_URL": f"http://127.0.0.1:{free_port()}",  # nothing listens: the call fails fast
        "MEMFLOW_API_KEY": "mf_whatever",
    }
    base = {"session_id": "cc-1", "transcript_path": str(transcript), "cwd": str(tmp_path)}
    for event, payload in (
        ("session-start", {**base, "hook_event_name": "SessionStart", "source": "compact"}),
        ("stop", {**base, "hook_event_name": "Stop"}),
    ):
        transcript.write_text("{not json\n" * 3 + '{"isCompactSummary": true, "message": 1}\n')
        done = subprocess.run(
            [MEMFLOW, "hook", event],
            input=json.dumps(payload),
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
