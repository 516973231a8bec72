"""What the hook client adds at and after a session start, from the agent's machine.

- What the model can call to reach memflow (`memflow_tools`): the name Claude
  Code knows memflow's MCP server by, from its own settings, and the
  `memflow` command. The server names only these in what it injects.
- Claude Code's compaction summary (`compaction`), read from the session's
  transcript; the server keeps it as the session's `context` checkpoint.

Standard library only, like the hook client.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

from memflow_site.client.hook import declared_above, project_root, state_path


def claude_json_path() -> Path:
    """Claude Code's own state file, where `claude mcp add` writes (user and local scope)."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(base) / ".claude.json" if base else Path.home() / ".claude.json"


def _read_json(path: Path) -> Any:
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text())
    return None


def _servers(found: Any) -> dict[str, Any]:
    servers = found.get("mcpServers") if isinstance(found, dict) else None
    return servers if isinstance(servers, dict) else {}


def mcp_server_name(cwd: str, config: dict[str, Any]) -> str | None:
    """The name Claude Code knows this memflow's MCP server by here, or None.

    `MEMFLOW_MCP` (or `mcp` in the config file) decides when set: a server
    name, or `off`. Otherwise Claude Code's own MCP settings are read: the
    project's `.mcp.json`, then `~/.claude.json` (this project's servers, then
    the user's). A server whose URL is this memflow's `/mcp/` wins; else
    one named `memflow`.
    """
    said = os.environ.get("MEMFLOW_MCP") or config.get("mcp")
    if isinstance(said, str) and said.strip():
        return None if said.strip().lower() in ("off", "no", "none", "0") else said.strip()
    root = project_root(cwd)
    state = _read_json(claude_json_path())
    projects = state.get("projects") if isinstance(state, dict) else None
    projects = projects if isinstance(projects, dict) else {}
    servers: dict[str, Any] = {}
    for found in (
        state,
        projects.get(root),
        projects.get(str(Path(cwd).resolve())),
        _read_json(Path(root) / ".mcp.json"),
    ):
        servers.update(_servers(found))  # later scopes win, as in Claude Code
    base = str(config.get("url") or "").rstrip("/")
    for name, server in servers.items():
        url = server.get("url") if isinstance(server, dict) else None
        if base and isinstance(url, str) and url.startswith(f"{base}/mcp"):
            return str(name)
    return "memflow" if "memflow" in servers else None


def memflow_tools(cwd: str, config: dict[str, Any]) -> dict[str, Any]:
    """What the session's model can call to reach memflow (sent at session start).

    The server names only these in what it injects: the MCP tools, or this
    command (with the configuration the hook has, so the model's shell has
    the same URL, key and workspace).
    """
    command = "memflow"
    me = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    found = shutil.which("memflow")
    if me is not None and me.name == "memflow" and (not found or Path(found).resolve() != me):
        command = shlex.quote(str(me))
    return {
        "mcp": mcp_server_name(cwd, config),
        "cli": command,
        "cli_workspace": bool(config.get("workspace")),
    }


# How much of a transcript's end is read for the compaction summary: Claude
# Code writes it just before the session-start hook that follows a compaction.
TRANSCRIPT_TAIL_BYTES = 8 << 20
_SUMMARY_HEAD = "Summary:\n"
_SUMMARY_TAIL = "\n\nIf you need specific details from before compaction"


def compaction_summary(transcript_path: Any, *, after: int = 0) -> str | None:
    """The summary of the latest compaction in a Claude Code transcript (JSONL), or None.

    Claude Code writes it as a user message flagged `isCompactSummary`, its
    text wrapped in a preamble and a note; the summary is what lies between.
    Only a summary written past byte `after` counts. A transcript that is
    missing or does not parse gives None.
    """
    if not isinstance(transcript_path, str) or not transcript_path.strip():
        return None
    try:
        with open(transcript_path, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, after, size - TRANSCRIPT_TAIL_BYTES))
            tail = handle.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if b"isCompactSummary" not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("isCompactSummary") is True:
            return _summary_text(entry.get("message"))
    return None


def _summary_text(message: Any) -> str | None:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "\n".join(p for p in parts if isinstance(p, str))
    if not isinstance(content, str) or not content.strip():
        return None
    start = content.find(_SUMMARY_HEAD)
    text = content[start + len(_SUMMARY_HEAD) :] if start >= 0 else content
    end = text.find(_SUMMARY_TAIL)
    text = (text[:end] if end >= 0 else text).strip()
    return text or None


def attach_session_start(payload: dict[str, Any], config: dict[str, Any]) -> None:
    """Add what only this machine knows at a session start: what the model can call."""
    with contextlib.suppress(Exception):  # never worth breaking a hook over
        payload.setdefault("memflow_tools", memflow_tools(str(payload.get("cwd")), config))


# A compaction whose summary has not turned up within this long is given up.
COMPACTION_WAIT_SECONDS = 3600.0


def compaction_marker(session_id: str) -> Path:
    name = hashlib.sha256(session_id.encode()).hexdigest()[:32]
    return state_path().with_name("compactions") / f"{name}.json"


def attach_compaction(payload: dict[str, Any]) -> None:
    """Send Claude Code's compaction summary, read from the transcript on this machine.

    Claude Code writes the summary after the session-start hook that follows
    a compaction has answered, so that hook leaves a marker (the transcript
    and its size then) and the session's next hook through this client
    reads what was written since and sends it as `compaction`; the server
    keeps it as the session's `context` checkpoint. A transcript that does
    not parse is skipped.
    """
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id or "compaction" in payload:
        return
    with contextlib.suppress(Exception):  # never worth breaking a hook over
        marker = compaction_marker(session_id)
        transcript = payload.get("transcript_path")
        if payload.get("source") == "compact" and isinstance(transcript, str):
            size = os.stat(transcript).st_size if os.path.exists(transcript) else 0
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(
                json.dumps({"transcript": transcript, "after": size, "at": time.time()})
            )
            return
        if not marker.exists():
            return
        claimed = marker.with_name(f"{marker.name}.{os.getpid()}")
        os.replace(marker, claimed)  # one hook of several running at once takes it
        pending = json.loads(claimed.read_text())
        summary = compaction_summary(pending.get("transcript"), after=int(pending.get("after", 0)))
        if summary:
            payload["compaction"] = summary
        elif time.time() - float(pending.get("at", 0)) < COMPACTION_WAIT_SECONDS:
            os.replace(claimed, marker)  # not written yet: a later hook looks again
            return
        claimed.unlink()


# --- the declared identity, re-read before each prompt -----------------------------------------
#
# Why the UserPromptSubmit command hook, not another hook: an edit the user
# makes between two prompts is seen by no hook before the next prompt's own,
# and only a process on the agent's machine can read the files (the server
# never reads the agent's disk). install-hooks therefore keeps UserPromptSubmit
# a command in a project that declares context. What it costs there is kept
# small: the session start remembers every path the resolver looked at (its
# stat, and the hash of each file it read); a prompt re-stats those paths and
# re-hashes those files, and only when one differs imports the resolver, sends
# the new assembly and remembers again. The server then injects a section
# whose name and hash the session was not given, once (pipeline.only_new).

# A file read by the resolver is hashed as well as stat'ed: a coarse mtime
# (ext4's is the kernel tick) cannot tell two quick same-size edits apart.
HASHED_BYTES = 1 << 20


def identity_state_path(session_id: str) -> Path:
    name = hashlib.sha256(session_id.encode()).hexdigest()[:32]
    return state_path().with_name("identity") / f"{name}.json"


def _fingerprint(path: str, read: bool) -> list[Any] | None:
    """What a path looks like now: its type, size, mtime and inode (and hash if read)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    token: list[Any] = [stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns, info.st_ino]
    if read and stat.S_ISREG(info.st_mode) and info.st_size <= HASHED_BYTES:
        with contextlib.suppress(OSError), open(path, "rb") as handle:
            token.append(hashlib.sha256(handle.read(HASHED_BYTES + 1)).hexdigest())
    return token


def _env_signature(env: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()


def identity_unchanged(state: Any, env: dict[str, str]) -> bool:
    """Whether every path the last resolution looked at is as it was (same run variables)."""
    files = state.get("files") if isinstance(state, dict) else None
    if not isinstance(files, dict) or state.get("env") != _env_signature(env):
        return False
    try:
        return all(_fingerprint(path, bool(read)) == token for path, (read, token) in files.items())
    except (TypeError, ValueError):  # a state file in another shape: resolve again
        return False


def resolve_identity(
    directory: str, env: dict[str, str], depth: int
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the directory's assembly as JSON, or None when it declares nothing; the state to keep).

    The assembly is sent when it has sections, a preload or warnings (a
    declaration that does not parse is said to the user, once per session).
    """
    import socket

    from contexts.declarations import DiskSource, assemble

    touched: dict[str, bool] = {}  # path → whether its text was read

    class Touching(DiskSource):
        def read_text(self, path: str) -> str:
            touched[path] = True
            return super().read_text(path)

        def is_file(self, path: str) -> bool:
            touched.setdefault(path, False)
            return super().is_file(path)

        def exists(self, path: str) -> bool:
            touched.setdefault(path, False)
            return super().exists(path)

        def list_files(self, directory: str) -> list[str]:
            touched.setdefault(directory, False)
            return super().list_files(directory)

    assembly = assemble(
        source=Touching(),
        directory=directory,
        env=env,
        hostname=socket.gethostname(),
        delegation_depth=depth,
    )
    state = {
        "directory": directory,
        "env": _env_signature(env),
        "files": {p: [read, _fingerprint(p, read)] for p, read in touched.items()},
        "at": time.time(),
    }
    if not assembly.sections and assembly.preload is None and not assembly.warnings:
        return None, state  # nothing declared here: the server may hold the declaration
    result: dict[str, Any] = assembly.to_json()
    return result, state


def _read_state(session_id: str) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        state = json.loads(identity_state_path(session_id).read_text())
        if isinstance(state, dict) and isinstance(state.get("directory"), str):
            return state
    return None


def _write_state(session_id: str, state: dict[str, Any]) -> None:
    path = identity_state_path(session_id)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(state))
        tmp.replace(path)


# A session whose state has not been touched for this long is over.
STATE_DAYS = 14


def _prune_states() -> None:
    cutoff = time.time() - STATE_DAYS * 86400
    with contextlib.suppress(OSError):
        for entry in os.scandir(identity_state_path("x").parent):
            with contextlib.suppress(OSError):
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)


def identity_forget(payload: dict[str, Any]) -> None:
    """Drop what the session was last sent: the next prompt resolves again.

    After a call that failed (the server may not have what was sent) and at
    the session's end.
    """
    session_id = payload.get("session_id")
    if isinstance(session_id, str) and session_id:
        with contextlib.suppress(OSError):
            identity_state_path(session_id).unlink()


def attach_identity(event: str, payload: dict[str, Any], env: dict[str, str]) -> None:
    """Send the directory's declared context when the server should see it.

    At a session start, always (when something is declared); before a prompt,
    only when a file it came from changed since it was last sent — then
    without the preload, which a session is given once, at its start.
    """
    if "context" in payload:
        return
    session_id = payload.get("session_id")
    session_id = session_id if isinstance(session_id, str) and session_id else ""
    cwd = str(Path(str(payload.get("cwd"))).resolve())
    state = _read_state(session_id) if session_id and event == "user-prompt" else None
    if state is not None and identity_unchanged(state, env):
        return
    directory = state["directory"] if state is not None else cwd
    if state is None and not env and not declared_above(directory):
        return  # the resolver's imports cost ~50 ms for nothing
    depth = payload.get("delegation_depth")
    try:
        assembly, fresh = resolve_identity(directory, env, depth if isinstance(depth, int) else 0)
    except Exception:
        return
    if session_id:
        if event == "session-start":
            _prune_states()
        _write_state(session_id, fresh)
    if assembly is None:
        return
    if event != "session-start":
        assembly["preload"] = None
    payload["context"] = assembly
