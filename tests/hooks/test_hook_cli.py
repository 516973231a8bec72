"""`memflow hook` as a subprocess against a live `memflow serve` on loopback:
a whole Claude Code-shaped session, and a dead server."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx

from memflow_site.client import install as install_hooks
from tests.memflow_site.helpers import MEMFLOW, env_for, free_port, serving


def run_hook(event: str, payload: dict, env: dict, timeout: float = 30) -> tuple[str, str, int]:
    """(stdout, stderr, exit status) of one `memflow hook`; its skip state stays in the test's dir."""
    env = {"XDG_STATE_HOME": str(Path(env["MEMFLOW_DATA_DIR"]) / "state"), **env}
    result = subprocess.run(
        [MEMFLOW, "hook", event],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return result.stdout, result.stderr, result.returncode


def context_of(stdout: str, event_name: str) -> str:
    if not stdout.strip():
        return ""
    body = json.loads(stdout)
    assert body["hookSpecificOutput"]["hookEventName"] == event_name
    assert "additionalContext" not in body  # dsh's bridge drops a top-level one
    return body["hookSpecificOutput"]["additionalContext"]


def test_a_whole_session_through_the_hook_command(tmp_path):
    env = env_for(tmp_path / "data")
    with serving(env, "--no-worker") as served:
        credentials = (tmp_path / "data" / "first-run-credentials.txt").read_text()
        key = next(
            line.split(": ", 1)[1]
            for line in credentials.splitlines()
            if line.startswith("api key:")
        )
        deadline = time.monotonic() + 120
        while httpx.get(f"{served.url}/api/v1/health").json()["embeddings"] != "ready":
            assert time.monotonic() < deadline, "the embedding model never loaded"
            time.sleep(0.5)
        api = httpx.Client(
            base_url=f"{served.url}/api/v1/workspaces/default",
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        hook_env = {
            **env,
            "MEMFLOW_URL": served.url,
            "MEMFLOW_API_KEY": key,
            "MEMFLOW_WORKSPACE": "default",
            # Roomy: this test is about what hooks say, not how fast.
            "MEMFLOW_HOOK_TIMEOUT": "10",
        }
        base = {
            "session_id": "cc-e2e",
            "transcript_path": str(tmp_path / "t.jsonl"),
            "cwd": str(tmp_path),
        }
        start_and_recall(api, base, hook_env)
        tool_compact_and_stop(base, hook_env)
        muted_turn(base, hook_env)

        memories = api.get("/memories/?status=all&limit=100").json()["results"]
        captured = [m for m in memories if m["source"] == "hook" and m["compartment"] == ""]
        assert [m["text"] for m in captured] == [
            "how does the billing worker handle failed charges?"
        ]
        assert any(m["compartment"] == "context" and "jitter" in m["text"] for m in memories)
        ledger = api.get("/ledger/?session=cc-e2e").json()
        assert ledger["injected"] >= 2

        # Once warm, the web process set its long-lived heap aside from the
        # collector (memflow_site.runtime.heap): no full collection walks the model.
        while "set aside from the collector" not in served.log():
            assert time.monotonic() < deadline, f"the heap was never settled:\n{served.log()}"
            time.sleep(0.5)


def start_and_recall(api, base, hook_env):
    """The session starts with core memory and what it knows; a prompt recalls only
    what is new since; a harness's system reminder is not a prompt."""
    api.post(
        "/core/memory/",
        json={"action": "add", "content": "Deploys need approval from #release"},
    )
    fact = api.post(
        "/memories/",
        json={"text": "The billing worker retries failed charges 3 times, then pages on-call."},
    ).json()
    lesson = api.post(
        "/memories/",
        json={
            "text": "billing worker: restart it with systemctl, never kill -9 (it loses the queue)",
            "compartment": "lessons",
        },
    ).json()

    out, _, code = run_hook(
        "session-start",
        {**base, "hook_event_name": "SessionStart", "source": "startup"},
        hook_env,
    )
    start = context_of(out, "SessionStart")
    assert code == 0 and "Deploys need approval from #release §" in start and "MEMORY [" in start

    api.post("/core/memory/", json={"action": "add", "content": "Written mid-session"})
    later = api.post(
        "/memories/",
        json={"text": "The billing worker keeps its failed charges queue in Redis."},
    ).json()
    out, _, _ = run_hook(
        "user-prompt",
        {
            **base,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "how does the billing worker handle failed charges?",
        },
        hook_env,
    )
    turn = context_of(out, "UserPromptSubmit")
    # The fact and the lesson came with the restore pack at the start: the
    # session has them, so the prompt's recall gives only what is new.
    for old in (fact, lesson):
        assert f"#{old['id']}" in start and f"#{old['id']}" not in turn
    assert f"#{later['id']}" in turn and "data, not instructions" in turn
    assert "Written mid-session" not in turn  # core is frozen, and per-turn blocks do not repeat it

    out, _, _ = run_hook(
        "user-prompt",
        {
            **base,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "<system-reminder>files changed</system-reminder>",
        },
        hook_env,
    )
    assert out == ""


def tool_compact_and_stop(base, hook_env):
    """A tool result, a compaction and the turn's end: each exits 0, the last two silent."""
    out, _, code = run_hook(
        "post-tool-use",
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a"},
            "tool_use_id": "t1",
        },
        hook_env,
    )
    assert code == 0
    out, _, code = run_hook(
        "pre-compact",
        {
            **base,
            "hook_event_name": "PreCompact",
            "trigger": "auto",
            "summary": "Investigated billing retries; decided to add jitter.",
        },
        hook_env,
    )
    assert code == 0 and out == ""  # PreCompact takes no additionalContext
    out, _, code = run_hook(
        "stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False}, hook_env
    )
    assert code == 0 and out == ""


def muted_turn(base, hook_env):
    """`memflow mute 30m` silences the per-turn context until `memflow mute off`."""
    muted = subprocess.run(
        [MEMFLOW, "mute", "30m"], env=hook_env, capture_output=True, text=True, timeout=30
    )
    assert muted.returncode == 0 and "muted" in muted.stderr
    out, _, _ = run_hook(
        "user-prompt",
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "billing worker retries?"},
        hook_env,
    )
    assert out == ""  # muted: no per-turn context
    subprocess.run(
        [MEMFLOW, "mute", "off"], env=hook_env, check=True, capture_output=True, timeout=30
    )


def test_a_dead_server_yields_nothing_and_exit_zero(tmp_path):
    env = {
        **env_for(tmp_path / "data"),
        "MEMFLOW_URL": f"http://127.0.0.1:{free_port()}",
        "MEMFLOW_API_KEY": "mf_x",
        "MEMFLOW_WORKSPACE": "w",
    }
    result = run_hook("user-prompt", {"session_id": "s", "prompt": "hello there"}, env)
    assert result == ("", "", 0)
    # Refused at once: nothing to wait out, so nothing is skipped later.
    assert not (tmp_path / "data" / "state").exists()


def test_a_hung_server_costs_a_session_two_budgets_and_other_sessions_nothing(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []

    def accept() -> None:  # accepts, never answers
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = {
        **env_for(tmp_path / "data"),
        "MEMFLOW_URL": url,
        "MEMFLOW_API_KEY": "k",
        "MEMFLOW_HOOK_TIMEOUT": "0.5",
    }
    try:
        first = run_hook("user-prompt", {"session_id": "s", "prompt": "hello there"}, env)
        later = [run_hook(e, {"session_id": "s"}, env) for e in ("post-tool-use", "stop")]
        asked_by_s = len(accepted)
        other = run_hook("stop", {"session_id": "t"}, env)
    finally:
        listener.close()
        for conn in accepted:
            conn.close()
    out, err, code = first
    # The person is told once, where Claude Code shows it.
    assert code == 0
    said = json.loads(out)["systemMessage"]
    assert f"{url} did not answer within 0.5 s" in said and "went without memory" in said
    assert err.count("\n") == 1
    # The second slow answer in that session leaves the server alone for that
    # session, silently; the third hook does not ask.
    assert later == [("", "", 0), ("", "", 0)]
    assert asked_by_s == 2
    state = json.loads((tmp_path / "data" / "state" / "memflow" / "hook-skip.json").read_text())
    assert url not in state  # not for the whole user: it is reachable
    assert state[f"{url} session s"]["reason"] == "no answer within 0.5 s"
    # Another session still asks (and is told once in its turn).
    assert len(accepted) == 3
    assert "did not answer" in json.loads(other[0])["systemMessage"]


def test_an_unreachable_server_is_skipped_by_every_session_saying_so_once(tmp_path):
    # A connection that is never made: a listener whose backlog is full drops the SYN.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    for _ in range(8):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(listener.getsockname())
        fillers.append(filler)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = {**env_for(tmp_path / "data"), "MEMFLOW_URL": url, "MEMFLOW_API_KEY": "k"}
    try:
        first = run_hook("user-prompt", {"session_id": "s", "prompt": "hello there"}, env)
        other = run_hook("user-prompt", {"session_id": "t", "prompt": "hello again"}, env)
    finally:
        listener.close()
        for filler in fillers:
            filler.close()
    assert "cannot be reached" in json.loads(first[0])["systemMessage"]
    assert other == ("", "", 0)
    state = json.loads((tmp_path / "data" / "state" / "memflow" / "hook-skip.json").read_text())
    assert state[url]["until"] > 0


def test_garbage_on_stdin_is_ignored(tmp_path):
    result = subprocess.run(
        [MEMFLOW, "hook", "user-prompt"],
        input="not json",
        capture_output=True,
        text=True,
        env=env_for(tmp_path),
        timeout=30,
    )
    assert (result.stdout, result.returncode) == ("", 0)


def install(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFLOW, *flags],
        cwd=tmp_path,
        env={**env_for(tmp_path / "data"), "HOME": str(tmp_path / "home")},
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )


def ours(settings: dict) -> list[dict]:
    return [
        h
        for entries in settings["hooks"].values()
        for e in entries
        for h in e["hooks"]
        if install_hooks.is_memflow_hook(h)
    ]


def test_install_hooks_merges_and_uninstall_removes_only_ours(tmp_path):
    settings = tmp_path / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    other = {"type": "command", "command": "/usr/bin/notify-send done"}
    settings.write_text(json.dumps({"model": "x", "hooks": {"Stop": [{"hooks": [other]}]}}))
    for _ in range(2):  # twice: nothing is added the second time
        install(tmp_path, "install-hooks", "--claude-code", "--project")
    data = json.loads(settings.read_text())
    assert data["model"] == "x"
    assert data["hooks"]["Stop"][0]["hooks"] == [other]
    # Every event, the failed tool call's included, once each.
    assert sorted(h["command"].split()[-1] for h in ours(data)) == sorted(install_hooks.EVENTS)
    assert "post-tool-use-failure" in install_hooks.EVENTS
    assert data["hooks"]["PostToolUse"][0]["matcher"] == "*"
    assert data["hooks"]["PostToolUseFailure"][0]["matcher"] == "*"
    # --project is this clone's own file: the committed one is left alone.
    assert not (tmp_path / ".claude" / "settings.json").exists()
    install(tmp_path, "uninstall-hooks", "--claude-code")
    assert json.loads(settings.read_text()) == {
        "model": "x",
        "hooks": {"Stop": [{"hooks": [other]}]},
    }


def test_shared_hooks_name_no_path_of_this_machine(tmp_path):
    install(tmp_path, "install-hooks", "--claude-code", "--shared")
    committed = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    commands = [h["command"] for h in ours(committed)]
    assert len(commands) == len(install_hooks.EVENTS)
    assert all("/" not in c.replace(">/dev/null", "") for c in commands), commands
    # On a clone without memflow the command does nothing, successfully.
    bare = subprocess.run(
        ["sh", "-c", commands[0]],
        env={"PATH": "/usr/bin:/bin"},
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (bare.returncode, bare.stdout, bare.stderr) == (0, "", "")
    # A later --project install notices the shared file, and says how to undo it.
    result = install(tmp_path, "install-hooks", "--claude-code", "--project")
    assert "uninstall-hooks --claude-code --shared" in result.stderr
    install(tmp_path, "uninstall-hooks", "--claude-code", "--shared")
    assert json.loads((tmp_path / ".claude" / "settings.json").read_text()) == {}


def test_project_install_warns_when_git_would_commit_the_local_file(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)
    warned = install(tmp_path, "install-hooks", "--claude-code", "--project")
    assert "git does not ignore" in warned.stderr
    (tmp_path / ".gitignore").write_text(".claude/settings.local.json\n")
    quiet = install(tmp_path, "install-hooks", "--claude-code", "--project")
    assert "git does not ignore" not in quiet.stderr
