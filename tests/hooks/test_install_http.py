"""`memflow install-hooks --claude-code`: the mixed set of http and command hooks, and `--mcp`."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from pathlib import Path

from memflow_site.client import install as install_hooks
from tests.memflow_site.helpers import MEMFLOW, env_for

KEY = "mf_test_key_never_written"


def install(tmp_path: Path, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFLOW, *flags],
        cwd=tmp_path,
        env={**env_for(tmp_path / "data"), "HOME": str(tmp_path / "home"), **env},
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )


def by_event(settings: dict) -> dict[str, dict]:
    """Claude Code event → memflow's one hook for it."""
    found = {}
    for name, entries in settings["hooks"].items():
        ours = [h for e in entries for h in e["hooks"] if install_hooks.is_memflow_hook(h)]
        assert len(ours) <= 1, (name, ours)
        if ours:
            found[name] = ours[0]
    return found


CLIENT = {"MEMFLOW_URL": "http://127.0.0.1:8765", "MEMFLOW_WORKSPACE": "acme"}


def test_the_project_install_posts_where_no_disk_is_needed(tmp_path):
    (tmp_path / ".git").mkdir()
    local = tmp_path / ".claude" / "settings.local.json"
    for _ in range(2):  # twice: nothing is added the second time
        done = install(tmp_path, "install-hooks", "--claude-code", **CLIENT, MEMFLOW_API_KEY=KEY)
    hooks = by_event(json.loads(local.read_text()))
    assert set(hooks) == set(install_hooks.CLAUDE_HOOKS.values())
    http = {name for name, hook in hooks.items() if hook["type"] == "http"}
    assert http == {
        "UserPromptSubmit",
        "Stop",
        "PreCompact",
        "PreToolUse",
        "SubagentStart",
        "SubagentStop",
    }
    # The agent's disk is read on the agent's machine: those stay commands.
    for name in ("SessionStart", "PostToolUse", "PostToolUseFailure", "SessionEnd"):
        assert hooks[name]["command"].endswith(f" hook {install_hooks.hook_event(hooks[name])}")
    prompt = hooks["UserPromptSubmit"]
    # The workspace, and the project its sessions work in (their memories are kept with it).
    root = urllib.parse.quote(str(tmp_path), safe="")
    assert prompt["url"] == (
        f"http://127.0.0.1:8765/api/v1/hooks/claude-code?workspace=acme&project_root={root}"
    )
    assert prompt["headers"] == {"Authorization": "Bearer $MEMFLOW_API_KEY"}
    assert prompt["allowedEnvVars"] == ["MEMFLOW_API_KEY"]
    # A hung server costs a prompt the hook budget, a record-only hook less.
    assert prompt["timeout"] == 1.0 and hooks["Stop"]["timeout"] == 0.5
    # A sub-agent's start recalls for its task, which only the Agent tool's call names.
    assert hooks["SubagentStart"]["timeout"] == 1.0
    agent_call = json.loads(local.read_text())["hooks"]["PreToolUse"][0]
    assert agent_call["matcher"] == "Agent|Task"
    assert KEY not in local.read_text()  # Claude Code fills it in from the environment
    assert "post to http://127.0.0.1:8765" in done.stderr

    install(tmp_path, "uninstall-hooks", "--claude-code")
    assert json.loads(local.read_text()) == {}


def test_without_a_workspace_the_url_names_the_project_root(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    install(
        tmp_path / "sub",
        "install-hooks",
        MEMFLOW_URL="http://127.0.0.1:8765",
        MEMFLOW_API_KEY=KEY,
    )
    settings = tmp_path / "sub" / ".claude" / "settings.local.json"
    url = by_event(json.loads(settings.read_text()))["Stop"]["url"]
    assert url.endswith(f"?project_root={str(tmp_path.resolve()).replace('/', '%2F')}")


def test_commands_only_where_http_hooks_cannot_work(tmp_path):
    # The key only in the config file: an http hook could not send it.
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"api_key": KEY, "workspace": "acme"}))
    done = install(tmp_path, "install-hooks", MEMFLOW_CONFIG=str(config))
    local = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    assert {h["type"] for h in by_event(local).values()} == {"command"}
    assert "MEMFLOW_API_KEY is not set" in done.stderr
    # Asked for, and for the committed file: commands (a clone without memflow stays quiet).
    for flags in (("--command-hooks",), ("--shared",)):
        install(tmp_path, "install-hooks", *flags, **CLIENT, MEMFLOW_API_KEY=KEY)
    for name in ("settings.local.json", "settings.json"):
        written = json.loads((tmp_path / ".claude" / name).read_text())
        assert {h["type"] for h in by_event(written).values()} == {"command"}


def test_mcp_is_added_to_the_project_with_the_key_from_the_environment(tmp_path):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"type": "stdio"}}}))
    done = install(tmp_path, "install-hooks", "--mcp", **CLIENT, MEMFLOW_API_KEY=KEY)
    servers = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert servers["other"] == {"type": "stdio"}
    assert servers["memflow"] == {
        "type": "http",
        "url": "http://127.0.0.1:8765/mcp/?workspace=acme&app=claude-code",
        "headers": {"Authorization": "Bearer ${MEMFLOW_API_KEY}"},
    }
    local = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    assert local["enabledMcpjsonServers"] == ["memflow"]
    assert KEY not in (tmp_path / ".mcp.json").read_text()
    assert ".mcp.json" in done.stderr
    install(tmp_path, "install-hooks", "--mcp", "lean", **CLIENT, MEMFLOW_API_KEY=KEY)
    lean = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["memflow"]
    assert lean["url"].endswith("&app=claude-code&tools=lean")
    local = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    assert local["enabledMcpjsonServers"] == ["memflow"]  # once, however often installed
    refused = subprocess.run(
        [MEMFLOW, "install-hooks", "--user", "--mcp"],
        cwd=tmp_path,
        env={**env_for(tmp_path / "data"), "HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1 and "--mcp" in refused.stderr
