"""Write (and remove) memflow's hooks in Claude Code's and dsh's settings.

Merges into the existing JSON: other hooks are never touched, and running
it twice adds nothing. memflow's entries are recognised by their command
(`… memflow hook <event>`).

Where, for Claude Code:
- `--project`: `.claude/settings.local.json`, this clone only (Claude Code
  keeps it out of git), with this machine's absolute path to memflow;
- `--shared`: `.claude/settings.json`, the file a team commits, with a
  command that works on any clone: `memflow` from PATH, and nothing at all
  (exit 0) for someone who has not installed it;
- `--user`: `~/.claude/settings.json`, every project of this user.

For dsh, which reads plugins rather than a hooks file: `--dsh PROFILE_DIR`
adds memflow's bundle (integrations/dsh) with `dsh plugin --profile NAME
add`, or says that line when dsh is not on PATH.

Which kind, for Claude Code: where the agent's disk is not needed, an
`"type": "http"` hook, which Claude Code posts to memflow itself (no process
starts); a command hook where it is — SessionStart resolves the directory's
declared files, PostToolUse reads the file Claude Code saved a cut tool
output to (and SessionEnd, see COMMAND_EVENTS). The http hooks carry the key as `$MEMFLOW_API_KEY`, which Claude
Code fills from its environment (the hook's `allowedEnvVars`), never written
into the file; so they are written only when the key is exported and not
kept in the config file (see `http_target`). `--shared` and
`--command-hooks` write commands only.

`--mcp` adds memflow's MCP server as the project's `.mcp.json` (the key again
as `${MEMFLOW_API_KEY}`), approved in `.claude/settings.local.json`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memflow_site.client.hook import (
    CLAUDE_HOOKS,
    config_path,
    declared_above,
    hook_budget,
    project_root,
)

# Which Claude Code events memflow listens to, with the matcher each needs.
MATCHERS: dict[str, str | None] = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PostToolUse": "*",
    "PostToolUseFailure": "*",
    "Stop": None,
    "PreCompact": None,
    "SessionEnd": None,
    # Only the tool that starts a sub-agent: its task is what the sub-agent recalls with.
    "PreToolUse": "Agent|Task",
    "SubagentStart": None,
    "SubagentStop": None,
}
EVENTS = tuple(CLAUDE_HOOKS)
# What Claude Code waits at most; the hook keeps to its own, much shorter
# budget (MEMFLOW_HOOK_TIMEOUT), so this only bounds a broken interpreter.
HOOK_TIMEOUT_SECONDS = 10
# The portable form: no path of this machine in it.
SHARED_COMMAND = "command -v memflow >/dev/null 2>&1 || exit 0; exec memflow"

# Commands where the hook needs the agent's own disk (declared files, a cut
# tool output's file; Claude Code also refuses http hooks on SessionStart),
# and for SessionEnd: Claude Code reports a failed http hook itself, and at
# exit that is a line on the terminal when the server is down. SessionEnd
# costs no turn any time, so it keeps the command, which is silent then.
COMMAND_EVENTS = frozenset(
    {"session-start", "post-tool-use", "post-tool-use-failure", "session-end"}
)
HTTP_PATH = "/api/v1/hooks/claude-code"
KEY_VARIABLE = "MEMFLOW_API_KEY"
# Claude Code's wait for an http hook that only records (Stop, PreCompact):
# the server records it even once Claude Code stopped waiting,
# so a hung server costs these little. A prompt's recall gets the budget.
RECORD_TIMEOUT_SECONDS = 0.5
# The http hooks that recall, and so get the whole budget: a prompt, a sub-agent's start.
RECALL_EVENTS = frozenset({"user-prompt", "subagent-start"})
MCP_SERVER_NAME = "memflow"


@dataclass(frozen=True)
class HttpTarget:
    """Where Claude Code's http hooks post: memflow's URL with the workspace in it."""

    url: str
    budget: float
    query: dict[str, str] = field(default_factory=dict)
    # Events that stay commands here beyond COMMAND_EVENTS, and why.
    commands: frozenset[str] = frozenset()
    why_commands: str = ""

    def posts(self, event: str) -> bool:
        return event not in COMMAND_EVENTS and event not in self.commands

    def posted(self) -> list[str]:
        """Claude Code's names of the events posted over http."""
        return [name for event, name in CLAUDE_HOOKS.items() if self.posts(event)]

    def hook(self, event: str) -> dict[str, Any]:
        timeout = (
            self.budget if event in RECALL_EVENTS else min(self.budget, RECORD_TIMEOUT_SECONDS)
        )
        query = f"?{urllib.parse.urlencode(self.query)}" if self.query else ""
        return {
            "type": "http",
            "url": f"{self.url.rstrip('/')}{HTTP_PATH}{query}",
            "headers": {"Authorization": f"Bearer ${KEY_VARIABLE}"},
            "allowedEnvVars": [KEY_VARIABLE],
            "timeout": timeout,
        }


def http_target(
    config: dict[str, Any], *, project_dir: Path | None
) -> tuple[HttpTarget | None, str]:
    """The http hooks' target for this configuration, or None and why commands are used.

    Claude Code fills an http hook's header from its own environment only
    (`allowedEnvVars`), while `memflow hook` also reads the config file. A
    key kept in the config file is the one a new terminal or an IDE has, the
    exported one maybe not: http hooks there would send an empty key (401)
    and lose every prompt, so that setup gets commands, which read the file.
    """
    if not os.environ.get(KEY_VARIABLE):
        return None, (
            f"{KEY_VARIABLE} is not set here, and Claude Code's http hooks read the key from "
            "the environment only"
        )
    if key_in_config_file():
        return None, (
            f"your key is in {config_path()}, which `memflow hook` reads from any shell, while "
            f"Claude Code's http hooks read it only from an exported {KEY_VARIABLE}"
        )
    query = {}
    if config.get("workspace"):
        query["workspace"] = str(config["workspace"])
    if project_dir is not None:
        # The project its sessions work in (and, without a workspace, the one it maps to).
        query["project_root"] = project_root(str(project_dir))
    elif not config.get("workspace"):
        return None, "no workspace is set (MEMFLOW_WORKSPACE) for hooks that serve every project"
    if config.get("app"):
        query["app"] = str(config["app"])
    commands: frozenset[str] = frozenset()
    why_commands = ""
    if project_dir is not None and declared_above(str(project_dir)):
        commands = frozenset({"user-prompt"})
        why_commands = (
            "UserPromptSubmit runs `memflow hook` here: this project declares context "
            "(.dsh/context.yaml), and that hook sends a declared file's new text when it changed"
        )
    target = HttpTarget(
        url=str(config["url"]),
        budget=hook_budget(config),
        query=query,
        commands=commands,
        why_commands=why_commands,
    )
    return target, ""


def key_in_config_file() -> bool:
    """Whether the client's config file holds an API key (see `http_target`)."""
    try:
        data = json.loads(config_path().read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and bool(data.get("api_key"))


def memflow_command() -> str:
    found = shutil.which("memflow")
    if found:
        return found
    return str(Path(sys.executable).with_name("memflow"))


def hook_event(hook: Any) -> str | None:
    """The memflow event a settings entry runs (`… memflow hook EVENT`), else None."""
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    parts = command.split() if isinstance(command, str) else []
    if len(parts) >= 3 and Path(parts[-3]).name == "memflow" and parts[-2] == "hook":
        return parts[-1]
    return None


def is_memflow_http_hook(hook: Any) -> bool:
    url = hook.get("url") if isinstance(hook, dict) and hook.get("type") == "http" else None
    return isinstance(url, str) and urllib.parse.urlsplit(url).path == HTTP_PATH


def is_memflow_hook(hook: Any) -> bool:
    return hook_event(hook) is not None or is_memflow_http_hook(hook)


def hooks_block(command: str, http: HttpTarget | None = None) -> dict[str, list[dict[str, Any]]]:
    """memflow's hooks: commands, or with `http` the mixed set (see the module's docstring)."""
    block: dict[str, list[dict[str, Any]]] = {}
    for event, claude_name in CLAUDE_HOOKS.items():
        hook: dict[str, Any] = (
            http.hook(event)
            if http is not None and http.posts(event)
            else {
                "type": "command",
                "command": f"{command} hook {event}",
                "timeout": HOOK_TIMEOUT_SECONDS,
            }
        )
        entry: dict[str, Any] = {"hooks": [hook]}
        if MATCHERS[claude_name] is not None:
            entry["matcher"] = MATCHERS[claude_name]
        block[claude_name] = [entry]
    return block


def merge_hooks(
    settings: dict[str, Any], command: str, http: HttpTarget | None = None
) -> dict[str, Any]:
    merged = remove_hooks(settings)
    hooks = merged.setdefault("hooks", {})
    for claude_name, entries in hooks_block(command, http).items():
        hooks.setdefault(claude_name, []).extend(entries)
    return merged


def remove_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    result = json.loads(json.dumps(settings))  # a deep copy
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for name in list(hooks):
        kept = []
        for entry in hooks[name] if isinstance(hooks[name], list) else []:
            inner = (
                [h for h in entry.get("hooks", []) if not is_memflow_hook(h)]
                if isinstance(entry, dict)
                else []
            )
            if inner or not isinstance(entry, dict):
                kept.append({**entry, "hooks": inner} if isinstance(entry, dict) else entry)
        if kept:
            hooks[name] = kept
        else:
            del hooks[name]
    if not hooks:
        del result["hooks"]
    return result


def installed(settings: dict[str, Any]) -> dict[str, str]:
    """Claude Code event → the memflow command it runs (or URL it posts to) in `settings`."""
    found: dict[str, str] = {}
    hooks = settings.get("hooks")
    for name, entries in hooks.items() if isinstance(hooks, dict) else []:
        for entry in entries if isinstance(entries, list) else []:
            for hook in entry.get("hooks", []) if isinstance(entry, dict) else []:
                if hook_event(hook) is not None:
                    found[name] = hook["command"]
                elif is_memflow_http_hook(hook):
                    found[name] = f"POST {hook['url']}"
    return found


# --- the MCP server -------------------------------------------------------------------------


def mcp_url(config: dict[str, Any], *, lean: bool = False) -> str:
    query = {"app": str(config.get("app") or "claude-code")}
    if config.get("workspace"):
        query = {"workspace": str(config["workspace"]), **query}
    if lean:
        query["tools"] = "lean"
    return f"{str(config['url']).rstrip('/')}/mcp/?{urllib.parse.urlencode(query)}"


def merge_mcp(
    mcp_json: dict[str, Any], config: dict[str, Any], *, lean: bool = False
) -> dict[str, Any]:
    """The project's `.mcp.json` with memflow's server; the key stays in the environment."""
    merged = json.loads(json.dumps(mcp_json))
    servers = merged.setdefault("mcpServers", {})
    servers[MCP_SERVER_NAME] = {
        "type": "http",
        "url": mcp_url(config, lean=lean),
        "headers": {"Authorization": f"Bearer ${{{KEY_VARIABLE}}}"},
    }
    return merged


def approve_mcp(settings: dict[str, Any]) -> dict[str, Any]:
    """Claude Code asks before it starts a server `.mcp.json` names; this clone says yes."""
    approved = json.loads(json.dumps(settings))
    names = approved.setdefault("enabledMcpjsonServers", [])
    if MCP_SERVER_NAME not in names:
        names.append(MCP_SERVER_NAME)
    return approved


def remove_mcp(mcp_json: dict[str, Any]) -> dict[str, Any]:
    kept = json.loads(json.dumps(mcp_json))
    servers = kept.get("mcpServers")
    if isinstance(servers, dict):
        servers.pop(MCP_SERVER_NAME, None)
    return kept


def claude_settings_path(*, user: bool, project_dir: Path, shared: bool = False) -> Path:
    if user:
        return Path.home() / ".claude" / "settings.json"
    name = "settings.json" if shared else "settings.local.json"
    return project_dir / ".claude" / name


def claude_settings_paths(project_dir: Path) -> list[Path]:
    """Every Claude Code settings file that applies in `project_dir`, widest first."""
    return [
        Path.home() / ".claude" / "settings.json",
        project_dir / ".claude" / "settings.json",
        project_dir / ".claude" / "settings.local.json",
    ]


def git_ignores(path: Path) -> bool | None:
    """Whether git keeps `path` out of commits; None outside a repository or without git."""
    try:
        done = subprocess.run(
            ["git", "check-ignore", "-q", str(path)],
            cwd=path.parent,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(done.returncode)


def dsh_settings_path(profile_dir: Path) -> Path:
    # Where older memflow wrote Claude Code-shaped hooks for dsh's hook bridge,
    # which current dsh no longer ships: install-hooks --dsh removes them.
    return profile_dir / "hooks.json"


# --- dsh: the plugin bundle ---------------------------------------------------------------

DSH_BUNDLE = "dsh-memflow-bundle"  # integrations/dsh/package.json's name


def dsh_bundle_dir() -> Path | None:
    """integrations/dsh beside this memflow, or None when this install does not carry it."""
    bundle = Path(__file__).resolve().parents[2] / "integrations" / "dsh"
    return bundle if (bundle / "package.json").is_file() else None


def dsh_plugin_command(profile_dir: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """`dsh plugin --profile NAME …` for a profile directory, and the env it needs.

    dsh names profiles, found under `$DSH_HOME/profiles/`: a directory there
    gets its DSH_HOME said explicitly, so any home works.
    """
    resolved = profile_dir.expanduser().resolve()
    env = {"DSH_HOME": str(resolved.parent.parent)} if resolved.parent.name == "profiles" else {}
    return ["dsh", "plugin", "--profile", resolved.name, *args], env


def dsh_shell_line(command: list[str], env: dict[str, str]) -> str:
    return " ".join(
        [*(f"{k}={shlex.quote(v)}" for k, v in env.items()), *map(shlex.quote, command)]
    )


def dsh_install(profile_dir: Path, *, print_only: bool, say: Callable[[str], None]) -> int:
    """Add the bundle to a dsh profile (or print the line that does), and drop old hooks."""
    bundle = dsh_bundle_dir()
    if bundle is None:
        say(
            "memflow: this install has no integrations/dsh; add the bundle from a memflow "
            "checkout: dsh plugin --profile NAME add /path/to/memflow/integrations/dsh"
        )
        return 1
    command, env = dsh_plugin_command(profile_dir, "add", str(bundle))
    line = dsh_shell_line(command, env)
    if print_only:
        print(line)
        return 0
    old = dsh_settings_path(profile_dir)
    if old.exists() and installed(read_json(old)):
        write_json(old, remove_hooks(read_json(old)))
        say(
            f"memflow: removed the hooks an older memflow wrote to {old} (dsh no longer reads them)."
        )
    dsh = shutil.which("dsh")
    if dsh is None:
        say(f"dsh is not on PATH. Add memflow's bundle to the profile with:\n  {line}")
        return 0
    done = subprocess.run([dsh, *command[1:]], env={**os.environ, **env}, check=False)
    if done.returncode != 0:
        say(f"memflow: `{line}` failed ({done.returncode}).")
        return done.returncode
    say(
        f"memflow's bundle added to dsh profile {command[3]}; restart dsh to load it. "
        "Set MEMFLOW_URL, MEMFLOW_API_KEY (and MEMFLOW_WORKSPACE) for the harness."
    )
    return 0


def dsh_uninstall(profile_dir: Path, *, say: Callable[[str], None]) -> int:
    old = dsh_settings_path(profile_dir)
    if old.exists() and installed(read_json(old)):
        write_json(old, remove_hooks(read_json(old)))
        say(f"memflow hooks removed from {old}.")
    command, env = dsh_plugin_command(profile_dir, "remove", DSH_BUNDLE)
    dsh = shutil.which("dsh")
    if dsh is None:
        say(f"dsh is not on PATH. Remove memflow's bundle with:\n  {dsh_shell_line(command, env)}")
        return 0
    return subprocess.run([dsh, *command[1:]], env={**os.environ, **env}, check=False).returncode


def read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text() or "{}")
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)
