"""`memflow hook <event>`: the harness side of the hook pipeline.

Reads the hook JSON on stdin, adds what only the agent's machine knows
(the project root, the local declaration when one resolves, the whole
output of a tool call that Claude Code cut and saved to a file), calls
`POST /api/v1/hooks/{event}` and prints exactly what the harness accepts.

A hook never blocks or breaks a turn: whatever goes wrong — no server, a
slow server, an error answer, bad input — it prints nothing on stdout and
exits 0, within a total budget (`MEMFLOW_HOOK_TIMEOUT`). A server that
cannot be reached is skipped for a while (a small state file); one that is
reachable but slow only by the session that met it slow twice in a row, so
a hung server costs a session two budgets, and a slow answer costs no other
session anything. The person is told once, as a `systemMessage`. Standard library
only, and only what a hook needs imported at start (the rest where it is
used), so it starts fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

EVENTS = {
    "session-start": "SessionStart",
    "user-prompt": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "stop": "Stop",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
    # A sub-agent's task (PreToolUse of the Agent tool), its start and its end.
    "pre-tool-use": "PreToolUse",
    "subagent-start": "SubagentStart",
    "subagent-stop": "SubagentStop",
}
# Claude Code reports a failed tool call as an event of its own. memflow runs
# it as a post-tool-use (the JSON's `hook_event_name` flags the failure), so
# failures reach the session log, the handoff notes and the skills generator.
FAILURE_EVENT = "post-tool-use-failure"
# Every hook install-hooks registers: memflow's name → Claude Code's.
CLAUDE_HOOKS = {**EVENTS, FAILURE_EVENT: "PostToolUseFailure"}
BY_CLAUDE_NAME = {v: k for k, v in EVENTS.items()}
BY_CLAUDE_NAME["PostToolUseFailure"] = "post-tool-use"
ALIASES = {FAILURE_EVENT: "post-tool-use"}
# Events whose output Claude Code reads as hookSpecificOutput.additionalContext.
CONTEXT_EVENTS = {"session-start", "user-prompt", "post-tool-use", "subagent-start"}

# The whole hook, start to answer: a turn runs several hooks, and a hung
# server may cost it about one of these (then it is skipped, see below).
DEFAULT_TIMEOUT = 1.0
# Opening the connection: loopback or LAN answers in milliseconds.
DEFAULT_CONNECT_TIMEOUT = 0.3
# How long hooks leave a server alone after it let one run out of time.
DEFAULT_SKIP_SECONDS = 60.0
# A command a person runs (mute, status) may wait longer than a hook.
COMMAND_TIMEOUT = 10.0
# The server's own limit on a hook body (MEMFLOW_HOOK_MAX_BYTES) by default.
DEFAULT_MAX_BYTES = 1_048_576
# memflow's field for the whole output of a tool call (see attach_output).
OUTPUT_FIELD = "memflow_output"


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
    if event in ("session-start", "user-prompt"):
        from memflow_site.client import session as hook_session

        hook_session.attach_identity(event, payload, env)
    return payload


# Where a directory declares its context (contexts.declarations.config's default).
DECLARATION_FILE = Path(".dsh") / "context.yaml"


def declared_above(cwd: str) -> bool:
    """Whether `cwd` or a directory above it holds a declaration file."""
    with contextlib.suppress(OSError, RuntimeError):
        path = Path(cwd).resolve()
        return any((d / DECLARATION_FILE).is_file() for d in (path, *path.parents))
    return True  # cannot tell: let the resolver look


def _seconds(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if number > 0 else default


def hook_budget(config: dict[str, Any]) -> float:
    return _seconds(config.get("timeout"), DEFAULT_TIMEOUT)


def max_bytes() -> int:
    try:
        return max(1024, int(os.environ.get("MEMFLOW_HOOK_MAX_BYTES") or DEFAULT_MAX_BYTES))
    except ValueError:
        return DEFAULT_MAX_BYTES


def warn(text: str) -> None:
    """One line for the person: Claude Code shows a hook's stderr in its transcript."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"memflow: {text}\n")
        sys.stderr.flush()


# --- the whole output of a tool call ----------------------------------------------------------


class Refused(Exception):
    """The whole output cannot be sent; the message says why (it reaches the session log)."""

    def __init__(self, reason: str, size: int | None = None) -> None:
        super().__init__(reason)
        self.size = size


def output_roots(payload: dict[str, Any]) -> list[Path]:
    """Where Claude Code writes a cut tool output: its config dir, the project, the temp dirs."""
    import tempfile

    candidates = [
        os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude"),
        os.environ.get("CLAUDE_PROJECT_DIR") or "",
        payload.get("cwd") if isinstance(payload.get("cwd"), str) else "",
        os.environ.get("CLAUDE_CODE_TMPDIR") or "",
        tempfile.gettempdir(),
        "/tmp",
    ]
    roots: list[Path] = []
    for candidate in candidates:
        if candidate and Path(candidate).is_absolute():
            with contextlib.suppress(OSError, RuntimeError):
                root = Path(candidate).resolve()
                if root != Path(root.anchor) and root not in roots:
                    roots.append(root)
    return roots


def read_persisted(name: Any, payload: dict[str, Any], cap: int) -> bytes:
    """The bytes of the file Claude Code saved a tool's whole output to, or `Refused`."""
    if not isinstance(name, str) or not name.strip():
        raise Refused("persistedOutputPath is not a path")
    path = Path(name)
    if not path.is_absolute():
        raise Refused(f"persistedOutputPath {name!r} is not an absolute path")
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        raise Refused(f"persistedOutputPath {name} does not exist") from None
    except (OSError, RuntimeError) as exc:
        raise Refused(f"persistedOutputPath {name} cannot be resolved ({exc})") from None
    roots = output_roots(payload)
    if not any(real.is_relative_to(root) for root in roots):
        where = f" (a link to {real})" if real != path else ""
        raise Refused(
            f"persistedOutputPath {name}{where} is outside the directories Claude Code "
            f"writes tool output to ({', '.join(map(str, roots))})"
        )
    try:
        # Non-blocking: a FIFO planted there must not hang the hook.
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except PermissionError:
        raise Refused(f"persistedOutputPath {name} cannot be read (permission denied)") from None
    except OSError as exc:
        raise Refused(f"persistedOutputPath {name} cannot be opened ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise Refused(f"persistedOutputPath {name} is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"persistedOutputPath {name} is not a regular file")
        if info.st_size > cap:
            raise Refused(_over_cap(name, info.st_size, cap), size=info.st_size)
        chunks, total = [], 0
        while total <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise Refused(f"persistedOutputPath {name} cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > cap:  # it grew after the stat
        raise Refused(_over_cap(name, len(data), cap))
    return data


def _over_cap(name: str, size: int, cap: int) -> str:
    return f"persistedOutputPath {name} holds {size:,} bytes, over MEMFLOW_HOOK_MAX_BYTES ({cap:,})"


def attach_output(payload: dict[str, Any], cap: int) -> None:
    """Add the whole output of a tool call that Claude Code cut at 30,000 characters.

    Claude Code hands hooks only the first 30,000 characters in `stdout`, and
    names the file holding all of it in `tool_response.persistedOutputPath`.
    That file is read here, on the agent's machine — the server never reads a
    path a request names — and sent as `memflow_output` beside the
    harness's JSON, which stays as it was. When it cannot be read whole, the
    reason is sent instead, so the server marks what it keeps as cut.
    """
    response = payload.get("tool_response")
    if not isinstance(response, dict) or "persistedOutputPath" not in response:
        return
    import base64
    import hashlib

    declared = response.get("persistedOutputSize")
    size = declared if isinstance(declared, int) and declared >= 0 else None
    try:
        data = read_persisted(response.get("persistedOutputPath"), payload, cap)
    except Refused as refused:
        payload[OUTPUT_FIELD] = {
            "source": "persistedOutputPath",
            "size": size if size is not None else refused.size,
            "refused": str(refused),
        }
        warn(f"only Claude Code's preview of that tool output is kept: {refused}")
        return
    entry: dict[str, Any] = {
        "source": "persistedOutputPath",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    try:
        entry["text"] = data.decode("utf-8")
    except UnicodeDecodeError:
        entry["base64"] = base64.b64encode(data).decode("ascii")
    payload[OUTPUT_FIELD] = entry


def encode_body(payload: dict[str, Any], cap: int) -> bytes:
    """The request body; a whole output that would push it past the cap is left out, saying so."""
    body = json.dumps(payload).encode()
    output = payload.get(OUTPUT_FIELD)
    if len(body) > cap and isinstance(output, dict) and "refused" not in output:
        reason = (
            f"the hook body would hold {len(body):,} bytes with the whole output, over "
            f"MEMFLOW_HOOK_MAX_BYTES ({cap:,})"
        )
        payload[OUTPUT_FIELD] = {
            "source": output.get("source"),
            "size": output.get("size"),
            "refused": reason,
        }
        warn(f"only Claude Code's preview of that tool output is kept: {reason}")
        body = json.dumps(payload).encode()
    return body


# --- a server that does not answer in time ----------------------------------------------------
#
# Unreachable (the connection itself is not made within its timeout): every
# hook of this user leaves it alone for MEMFLOW_HOOK_SKIP_SECONDS. Reachable
# but slow (a restart, a busy machine): only the session that met it, and
# only after SLOW_STRIKES slow answers in a row — one slow answer never costs
# another session or the next hook anything. Either way the person is told
# once, as a `systemMessage` Claude Code shows them.

SLOW_STRIKES = 2
# How long a session's count of slow answers is kept.
STRIKES_KEPT_SECONDS = 3600.0


def state_path() -> Path:
    explicit = os.environ.get("MEMFLOW_STATE_DIR")
    if explicit:
        return Path(explicit) / "hook-skip.json"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "memflow" / "hook-skip.json"


def _skips() -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(state_path().read_text())
        if isinstance(data, dict):
            return data
    return {}


def session_key(url: str, session: str) -> str:
    return f"{url} session {session}"


def skipping(url: str, now: float | None = None, *, session: str = "") -> dict[str, Any] | None:
    """The skip in force for `url` ({"until", "reason", …}) or for its `session`, or None."""
    skips = _skips()
    now = time.time() if now is None else now
    for key in (url, session_key(url, session)) if session else (url,):
        entry = skips.get(key)
        until = entry.get("until") if isinstance(entry, dict) else None
        if isinstance(until, int | float) and until > now:
            return entry
    return None


def _write_skips(skips: dict[str, Any]) -> None:
    path = state_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(skips, indent=1) + "\n")
        tmp.replace(path)


def _live_skips(now: float) -> dict[str, Any]:
    """The state less what has run out: skips past their end, old counts of slow answers."""
    return {
        k: e
        for k, e in _skips().items()
        if isinstance(e, dict)
        and (e.get("until", 0) > now or e.get("since", 0) > now - STRIKES_KEPT_SECONDS)
    }


def skip_for_a_while(url: str, reason: str, seconds: float) -> float:
    now = time.time()
    until = now + seconds
    skips = _live_skips(now)
    skips[url] = {"until": until, "since": now, "reason": reason}
    _write_skips(skips)
    return until


def note_slow(url: str, session: str, reason: str, seconds: float) -> tuple[bool, float]:
    """Count a slow answer in `session`: (whether to tell the person, the skip's end or 0)."""
    now = time.time()
    skips = _live_skips(now)
    entry = skips.get(session_key(url, session)) or {}
    strikes = int(entry.get("strikes", 0)) + 1
    tell = not entry.get("told")
    until = now + seconds if strikes >= SLOW_STRIKES else 0.0
    skips[session_key(url, session)] = {
        "strikes": strikes,
        "told": True,
        "since": now,
        "until": until,
        "reason": reason,
    }
    _write_skips(skips)
    return tell, until


def answered_in_time(url: str, session: str) -> None:
    """A session's slow answers no longer count once one comes in time (told stays told)."""
    skips = _skips()
    entry = skips.get(session_key(url, session))
    if isinstance(entry, dict) and entry.get("strikes"):
        skips[session_key(url, session)] = {**entry, "strikes": 0, "until": 0}
        _write_skips(skips)


def clear_skip(url: str) -> bool:
    skips = _skips()
    if url not in skips:
        return False
    del skips[url]
    _write_skips(skips)
    return True


# --- the call -----------------------------------------------------------------------------


class OutOfTime(Exception):
    """The hook's budget ran out (raised from the SIGALRM handler)."""


class ServerError(Exception):
    """The server answered with an error status."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status} {detail}")
        self.status = status
        self.detail = detail


def exchange(
    config: dict[str, Any],
    method: str,
    path: str,
    body: bytes | None,
    *,
    deadline: float,
    connect_timeout: float,
) -> tuple[int, bytes]:
    """One HTTP exchange that never outlives `deadline` (time.monotonic()).

    The connection gets `connect_timeout`; every later wait gets what is left.
    A malformed answer raises ValueError.
    """
    url = str(config["url"])
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"MEMFLOW_URL {url!r} is not an http(s) URL")
    if deadline - time.monotonic() <= 0:
        raise TimeoutError("no time left")
    headers = {"Authorization": f"Bearer {config.get('api_key', '')}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    target = f"{parts.path.rstrip('/')}{path}"
    if parts.scheme == "http":
        from memflow_site.client import http as hook_http

        return hook_http.request(
            parts.hostname,
            parts.port or 80,
            method,
            target,
            headers,
            body,
            deadline=deadline,
            connect_timeout=connect_timeout,
        )
    return _https_exchange(parts, method, target, headers, body, deadline, connect_timeout)


def _https_exchange(
    parts: urllib.parse.SplitResult,
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes | None,
    deadline: float,
    connect_timeout: float,
) -> tuple[int, bytes]:
    import http.client

    assert parts.hostname is not None
    left = deadline - time.monotonic()
    connection = http.client.HTTPSConnection(
        parts.hostname, parts.port, timeout=min(connect_timeout, left)
    )
    try:
        connection.connect()
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no time left")
        if connection.sock is not None:
            connection.sock.settimeout(left)
        connection.request(method, target, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    except http.client.HTTPException as exc:
        raise ValueError(f"a broken answer: {exc}") from exc
    finally:
        connection.close()


def call_server(
    event: str,
    body: bytes,
    config: dict[str, Any],
    *,
    deadline: float,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
) -> dict[str, Any]:
    status, data = exchange(
        config,
        "POST",
        f"/api/v1/hooks/{event}",
        body,
        deadline=deadline,
        connect_timeout=connect_timeout,
    )
    if status >= 400:
        detail = ""
        with contextlib.suppress(ValueError, AttributeError):
            detail = str(json.loads(data).get("detail") or "")
        raise ServerError(status, detail or data[:200].decode("utf-8", "replace"))
    answer = json.loads(data)
    if not isinstance(answer, dict):
        raise ValueError("the answer is not a JSON object")
    return answer


def harness_output(event: str, answer: dict[str, Any], fired_as: str = "") -> str:
    """The JSON the harness accepts; `hookEventName` names the event that fired.

    `systemMessage` is shown to the user, not the model (e.g. a declaration
    that does not parse); Claude Code takes it on every event.
    """
    output: dict[str, Any] = {}
    said = answer.get("systemMessage")
    if isinstance(said, str) and said:
        output["systemMessage"] = said
    text = answer.get("additionalContext") or ""
    if text and event in CONTEXT_EVENTS:
        name = fired_as if BY_CLAUDE_NAME.get(fired_as) == event else EVENTS[event]
        output["hookSpecificOutput"] = {"hookEventName": name, "additionalContext": text}
    return json.dumps(output) if output else ""


def run(event_name: str, stdin: str, *, started: float | None = None) -> str:
    """What to print for this hook call ("" when nothing should be said)."""
    started = time.monotonic() if started is None else started
    event = BY_CLAUDE_NAME.get(event_name) or ALIASES.get(event_name, event_name)
    if event not in EVENTS:
        return ""
    try:
        raw = json.loads(stdin) if stdin.strip() else {}
    except ValueError:
        return ""
    if not isinstance(raw, dict):
        return ""
    config = load_config()
    url = str(config["url"])
    given = raw.get("session_id")
    session = given if isinstance(given, str) else ""
    if skipping(url, session=session):
        return ""  # unreachable, or slow again and again in this session: said once
    budget = hook_budget(config)
    cap = max_bytes()
    payload = build_payload(event, raw, config)
    if event == "post-tool-use":
        attach_output(payload, cap)
    from memflow_site.client import session as hook_session

    if event == "session-start":
        hook_session.attach_session_start(payload, config)
    hook_session.attach_compaction(payload)
    if event == "session-end":
        hook_session.identity_forget(payload)
    answer = _exchange_hook(event, encode_body(payload, cap), config, started + budget, session)
    if answer is None or "memflow_said" in answer:
        if "context" in payload:
            hook_session.identity_forget(payload)  # the server may not have it: send it again
        said = answer.get("memflow_said") if answer else None
        return json.dumps({"systemMessage": said}) if said else ""
    fired_as = raw.get("hook_event_name")
    return harness_output(event, answer, fired_as if isinstance(fired_as, str) else "")


def _exchange_hook(
    event: str, body: bytes, config: dict[str, Any], deadline: float, session: str = ""
) -> dict[str, Any] | None:
    """The server's answer, or None, or {"memflow_said": …} for the person once."""
    url = str(config["url"])
    budget = hook_budget(config)
    skip_seconds = _seconds(os.environ.get("MEMFLOW_HOOK_SKIP_SECONDS"), DEFAULT_SKIP_SECONDS)
    try:
        answer = call_server(
            event,
            body,
            config,
            deadline=deadline,
            connect_timeout=_seconds(
                os.environ.get("MEMFLOW_HOOK_CONNECT_TIMEOUT"), DEFAULT_CONNECT_TIMEOUT
            ),
        )
    except (OutOfTime, TimeoutError):  # socket.timeout is TimeoutError
        _last_resort_in(0.5, if_armed=True)  # the budget's alarm must not cut the note short
        return _slow(event, url, budget, session, skip_seconds)
    except OSError as exc:
        from memflow_site.client.http import Unreachable

        if isinstance(exc, Unreachable):
            return _unreachable(url, str(exc), skip_seconds)
        return None  # no server there (refused at once): nothing to say
    except ServerError as exc:
        warn(f"{url} answered {exc.status}: {exc.detail} (`memflow status` says more)")
        return None
    except ValueError:
        return None  # a broken answer
    if session:
        answered_in_time(url, session)
    return answer


def _unreachable(url: str, reason: str, seconds: float) -> dict[str, Any]:
    until = skip_for_a_while(url, reason, seconds)
    said = (
        f"memflow: {url} cannot be reached ({reason}); hooks leave it alone until "
        f"{time.strftime('%H:%M:%S', time.localtime(until))}, so this session goes without "
        "memory until then. `memflow status` says more."
    )
    warn(said.removeprefix("memflow: "))
    return {"memflow_said": said}


def _slow(event: str, url: str, budget: float, session: str, seconds: float) -> dict[str, Any]:
    reason = f"no answer within {budget:g} s"
    tell, until = note_slow(url, session or "-", reason, seconds)
    said = (
        f"memflow: {url} did not answer within {budget:g} s (MEMFLOW_HOOK_TIMEOUT): this "
        f"{EVENTS.get(event, event)} hook went without memory. Hooks keep asking"
    )
    if until:
        said += (
            f", except in this session until {time.strftime('%H:%M:%S', time.localtime(until))}"
            " (it was slow again)"
        )
    said += "; `memflow status` says more."
    if not tell:
        return {"memflow_said": ""}
    warn(said.removeprefix("memflow: "))
    return {"memflow_said": said}


def _exit_now(signum: int, frame: Any) -> None:
    os._exit(0)  # the turn goes on without us


def _last_resort_in(seconds: float, *, if_armed: bool = False) -> None:
    """From now on the alarm ends the process instead of raising (main thread only).

    `if_armed`: only when `main` armed one — `run` called on its own (a test,
    another program) must never be exited.
    """
    with contextlib.suppress(ValueError):
        if if_armed and signal.getitimer(signal.ITIMER_REAL)[0] <= 0:
            return
        signal.signal(signal.SIGALRM, _exit_now)
        signal.setitimer(signal.ITIMER_REAL, seconds)


# The alarm rings a little after the budget: the socket timeouts, which end
# on the budget, normally come first and leave the alarm for anything else.
ALARM_GRACE = 0.1


def main(event_name: str) -> int:
    started = time.monotonic()
    budget = hook_budget(load_config())

    def out_of_time(signum: int, frame: Any) -> None:
        # Whatever blocks is interrupted; should it swallow this, exit anyway.
        _last_resort_in(0.5)
        raise OutOfTime

    signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(
        signal.ITIMER_REAL, max(0.01, budget + ALARM_GRACE - (time.monotonic() - started))
    )
    try:
        output = run(event_name, sys.stdin.read(), started=started)
    except Exception:  # OutOfTime outside the call, or anything unforeseen
        output = ""
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
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
    import urllib.error
    import urllib.request

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
        with urllib.request.urlopen(request, timeout=COMMAND_TIMEOUT) as response:
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
