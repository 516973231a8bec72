"""`memflow hook <event>`: the harness side of the hook pipeline.

Reads the hook JSON on stdin, adds what only the agent's machine knows
(the project root, the local declaration when one resolves), calls
`POST /api/v1/hooks/{event}` and prints exactly what the harness accepts.

A hook never blocks or breaks a turn: whatever goes wrong — no server, a
slow server, an error answer, bad input — it prints nothing and exits 0,
within a hard timeout. Standard library only, so it starts fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

EVENTS = {
    "session-start": "SessionStart",
    "user-prompt": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "stop": "Stop",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
}
BY_CLAUDE_NAME = {v: k for k, v in EVENTS.items()}
# Claude Code reports a failed tool call as its own event; memflow logs it as
# a post-tool-use (the harness's JSON says which), so failures reach the
# session log, the handoff notes and the skills generator.
BY_CLAUDE_NAME["PostToolUseFailure"] = "post-tool-use"
# Events whose output Claude Code reads as hookSpecificOutput.additionalContext.
CONTEXT_EVENTS = {"session-start", "user-prompt", "post-tool-use"}
DEFAULT_TIMEOUT = 5.0


def config_path() -> Path:
    explicit = os.environ.get("MEMFLOW_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memflow" / "config.json"


def load_config() -> dict[str, Any]:
    """Environment first, then the config file: url, api_key, workspace, timeout."""
    config: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        config.update(json.loads(config_path().read_text()))
    for key, env in (
        ("url", "MEMFLOW_URL"),
        ("api_key", "MEMFLOW_API_KEY"),
        ("workspace", "MEMFLOW_WORKSPACE"),
        ("timeout", "MEMFLOW_HOOK_TIMEOUT"),
        ("app", "MEMFLOW_APP"),
    ):
        if os.environ.get(env):
            config[key] = os.environ[env]
    if os.environ.get("MEMFLOW_AUTO_WORKSPACE", "").lower() in ("1", "true", "yes"):
        config["create_workspace"] = True
    config.setdefault("url", "http://127.0.0.1:8000")
    return config


def project_root(cwd: str) -> str:
    """The nearest ancestor holding `.git`, else the directory itself."""
    path = Path(cwd).resolve()
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return str(path)


def build_payload(event: str, raw: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    payload = dict(raw)
    given = payload.get("cwd")
    cwd = given if isinstance(given, str) else os.getcwd()
    payload.setdefault("cwd", cwd)
    payload.setdefault("project_root", project_root(cwd))
    for key in ("workspace", "app", "create_workspace"):
        if config.get(key) and key not in payload:
            payload[key] = config[key]
    env = {k: v for k, v in os.environ.items() if k.startswith("DSH_CONTEXT_")}
    if env:
        payload.setdefault("env", env)
    if event == "session-start" and "context" not in payload:
        assembly = local_assembly(cwd, env, payload)
        if assembly is not None:
            payload["context"] = assembly
    return payload


def local_assembly(cwd: str, env: dict[str, str], payload: dict[str, Any]) -> dict[str, Any] | None:
    """The directory's declaration resolved on this machine, or None when none applies."""
    try:
        import socket

        from contexts.declarations import DiskSource, assemble

        depth = payload.get("delegation_depth")
        assembly = assemble(
            source=DiskSource(),
            directory=str(Path(cwd).resolve()),
            env=env,
            hostname=socket.gethostname(),
            delegation_depth=depth if isinstance(depth, int) else 0,
        )
    except Exception:
        return None
    if not assembly.sections and assembly.preload is None:
        return None  # nothing declared here: the server may hold the declaration
    result: dict[str, Any] = assembly.to_json()
    return result


def call_server(
    event: str, payload: dict[str, Any], config: dict[str, Any], timeout: float
) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{str(config['url']).rstrip('/')}/api/v1/hooks/{event}",
        data=json.dumps(payload).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {config.get('api_key', '')}",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def harness_output(event: str, answer: dict[str, Any], fired_as: str = "") -> str:
    """The JSON the harness accepts; `hookEventName` names the event that fired."""
    text = answer.get("additionalContext") or ""
    if not text or event not in CONTEXT_EVENTS:
        return ""
    name = fired_as if BY_CLAUDE_NAME.get(fired_as) == event else EVENTS[event]
    return json.dumps({"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}})


def run(event_name: str, stdin: str) -> str:
    """What to print for this hook call ("" when nothing should be said)."""
    event = BY_CLAUDE_NAME.get(event_name, event_name)
    if event not in EVENTS:
        return ""
    try:
        raw = json.loads(stdin) if stdin.strip() else {}
    except ValueError:
        return ""
    if not isinstance(raw, dict):
        return ""
    config = load_config()
    timeout = float(config.get("timeout") or DEFAULT_TIMEOUT)
    try:
        answer = call_server(event, build_payload(event, raw, config), config, timeout)
    except (OSError, urllib.error.URLError, ValueError, TimeoutError):
        return ""
    fired_as = raw.get("hook_event_name")
    return harness_output(event, answer, fired_as if isinstance(fired_as, str) else "")


def main(event_name: str) -> int:
    timeout = DEFAULT_TIMEOUT
    with contextlib.suppress(ValueError):
        timeout = float(os.environ.get("MEMFLOW_HOOK_TIMEOUT") or DEFAULT_TIMEOUT)

    def give_up(signum: int, frame: Any) -> None:
        os._exit(0)  # the turn goes on without us

    signal.signal(signal.SIGALRM, give_up)
    signal.setitimer(signal.ITIMER_REAL, timeout + 0.5)
    try:
        output = run(event_name, sys.stdin.read())
    except Exception:
        output = ""
    if output:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()
    return 0


def parse_minutes(text: str) -> int:
    """`30m`, `2h`, `1d`, `45` (minutes) or `off` (0)."""
    value = text.strip().lower()
    if value in ("off", "0", "no"):
        return 0
    units = {"m": 1, "h": 60, "d": 1440}
    if value[-1:] in units:
        return int(float(value[:-1]) * units[value[-1]])
    return int(value)


def mute(duration: str, *, for_user: bool) -> int:
    """`memflow mute 30m` / `memflow mute off`: ask the server, say what happened."""
    config = load_config()
    try:
        minutes = parse_minutes(duration)
    except ValueError:
        print(f"memflow: {duration!r} is not a duration (30m, 2h, 1d or off).", file=sys.stderr)
        return 1
    workspace = config.get("workspace")
    if not workspace:
        print(
            "memflow: set MEMFLOW_WORKSPACE (or `workspace` in the config file).", file=sys.stderr
        )
        return 1
    request = urllib.request.Request(
        f"{str(config['url']).rstrip('/')}/api/v1/workspaces/{workspace}/mute/",
        data=json.dumps(
            {"minutes": minutes, "scope": "user" if for_user else "workspace"}
        ).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {config.get('api_key', '')}",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(
            request, timeout=float(config.get("timeout") or DEFAULT_TIMEOUT)
        ) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = json.loads(exc.read() or b"{}").get("detail", str(exc))
        print(f"memflow: {detail}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"memflow: cannot reach {config['url']}: {exc}", file=sys.stderr)
        return 1
    who = "your sessions" if for_user else "everyone"
    if answer.get("muted_until"):
        print(
            f"Working context muted for {who} in {workspace} until {answer['muted_until']}.",
            file=sys.stderr,
        )
    else:
        print(f"Working context unmuted for {who} in {workspace}.", file=sys.stderr)
    return 0
