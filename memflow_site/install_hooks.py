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
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memflow_site.hook_client import CLAUDE_HOOKS

# Which Claude Code events memflow listens to, with the matcher each needs.
MATCHERS: dict[str, str | None] = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PostToolUse": "*",
    "PostToolUseFailure": "*",
    "Stop": None,
    "PreCompact": None,
    "SessionEnd": None,
}
EVENTS = tuple(CLAUDE_HOOKS)
# What Claude Code waits at most; the hook keeps to its own, much shorter
# budget (MEMFLOW_HOOK_TIMEOUT), so this only bounds a broken interpreter.
HOOK_TIMEOUT_SECONDS = 10
# The portable form: no path of this machine in it.
SHARED_COMMAND = "command -v memflow >/dev/null 2>&1 || exit 0; exec memflow"


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


def is_memflow_hook(hook: Any) -> bool:
    return hook_event(hook) is not None


def hooks_block(command: str) -> dict[str, list[dict[str, Any]]]:
    block: dict[str, list[dict[str, Any]]] = {}
    for event, claude_name in CLAUDE_HOOKS.items():
        entry: dict[str, Any] = {
            "hooks": [
                {
                    "type": "command",
                    "command": f"{command} hook {event}",
                    "timeout": HOOK_TIMEOUT_SECONDS,
                }
            ]
        }
        if MATCHERS[claude_name] is not None:
            entry["matcher"] = MATCHERS[claude_name]
        block[claude_name] = [entry]
    return block


def merge_hooks(settings: dict[str, Any], command: str) -> dict[str, Any]:
    merged = remove_hooks(settings)
    hooks = merged.setdefault("hooks", {})
    for claude_name, entries in hooks_block(command).items():
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
    """Claude Code event → the memflow command it runs, for the hooks `settings` holds."""
    found: dict[str, str] = {}
    hooks = settings.get("hooks")
    for name, entries in hooks.items() if isinstance(hooks, dict) else []:
        for entry in entries if isinstance(entries, list) else []:
            for hook in entry.get("hooks", []) if isinstance(entry, dict) else []:
                if is_memflow_hook(hook):
                    found[name] = hook["command"]
    return found


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
    bundle = Path(__file__).resolve().parents[1] / "integrations" / "dsh"
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
