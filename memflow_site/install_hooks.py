"""Write (and remove) memflow's hooks in Claude Code's and dsh's settings.

Merges into the existing JSON: other hooks are never touched, and running
it twice adds nothing. memflow's entries are recognised by their command
(`… hook <event>` of a memflow executable).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from memflow_site.hook_client import EVENTS

# Which Claude Code events memflow listens to, with the matcher each needs.
MATCHERS: dict[str, str | None] = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PostToolUse": "*",
    "Stop": None,
    "PreCompact": None,
    "SessionEnd": None,
}
HOOK_TIMEOUT_SECONDS = 10


def memflow_command() -> str:
    found = shutil.which("memflow")
    if found:
        return found
    return str(Path(sys.executable).with_name("memflow"))


def is_memflow_hook(hook: Any) -> bool:
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    parts = command.split()
    return len(parts) >= 3 and Path(parts[-3]).name == "memflow" and parts[-2] == "hook"


def hooks_block(command: str) -> dict[str, list[dict[str, Any]]]:
    block: dict[str, list[dict[str, Any]]] = {}
    for event, claude_name in EVENTS.items():
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


def claude_settings_path(*, user: bool, project_dir: Path) -> Path:
    return (
        Path.home() / ".claude" / "settings.json"
        if user
        else project_dir / ".claude" / "settings.json"
    )


def dsh_settings_path(profile_dir: Path) -> Path:
    # dsh's Claude Code hook bridge reads Claude Code-shaped hooks from the profile.
    return profile_dir / "hooks.json"


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
