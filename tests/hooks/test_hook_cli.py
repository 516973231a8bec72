"""`memflow hook` as a subprocess against a live `memflow serve` on loopback:
a whole Claude Code-shaped session, and a dead server."""

from __future__ import annotations

import json
import subprocess
import time

import httpx

from memflow_site import install_hooks
from tests.memflow_site.helpers import MEMFLOW, env_for, free_port, serving


def run_hook(event: str, payload: dict, env: dict, timeout: float = 30) -> tuple[str, float, int]:
    started = time.monotonic()
    result = subprocess.run(
        [MEMFLOW, "hook", event],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return result.stdout, time.monotonic() - started, result.returncode


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

        hook_env = {
            **env,
            "MEMFLOW_URL": served.url,
            "MEMFLOW_API_KEY": key,
            "MEMFLOW_WORKSPACE": "default",
        }
        base = {
            "session_id": "cc-e2e",
            "transcript_path": str(tmp_path / "t.jsonl"),
            "cwd": str(tmp_path),
        }

        out, _, code = run_hook(
            "session-start",
            {**base, "hook_event_name": "SessionStart", "source": "startup"},
            hook_env,
        )
        start = context_of(out, "SessionStart")
        assert (
            code == 0 and "Deploys need approval from #release §" in start and "MEMORY [" in start
        )

        api.post("/core/memory/", json={"action": "add", "content": "Written mid-session"})
        out, elapsed, _ = run_hook(
            "user-prompt",
            {
                **base,
                "hook_event_name": "UserPromptSubmit",
                "prompt": "how does the billing worker handle failed charges?",
            },
            hook_env,
        )
        turn = context_of(out, "UserPromptSubmit")
        assert f"#{fact['id']}" in turn and "data, not instructions" in turn
        assert f"#{lesson['id']}" in turn and "<memflow-lessons" in turn
        assert turn.index("<memflow-lessons") < turn.index("<memflow-recall")
        assert (
            "Written mid-session" not in turn
        )  # core is frozen, and per-turn blocks do not repeat it

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

        memories = api.get("/memories/?status=all&limit=100").json()["results"]
        captured = [m for m in memories if m["source"] == "hook" and m["compartment"] == ""]
        assert [m["text"] for m in captured] == [
            "how does the billing worker handle failed charges?"
        ]
        assert any(m["compartment"] == "context" and "jitter" in m["text"] for m in memories)
        ledger = api.get("/ledger/?session=cc-e2e").json()
        assert ledger["injected"] >= 2
        assert elapsed < 5

        # Once warm, the web process set its long-lived heap aside from the
        # collector (memflow_site.heap): no full collection walks the model.
        while "set aside from the collector" not in served.log():
            assert time.monotonic() < deadline, f"the heap was never settled:\n{served.log()}"
            time.sleep(0.5)


def test_a_dead_server_yields_nothing_and_exit_zero(tmp_path):
    env = {
        **env_for(tmp_path / "data"),
        "MEMFLOW_URL": f"http://127.0.0.1:{free_port()}",
        "MEMFLOW_API_KEY": "mf_x",
        "MEMFLOW_WORKSPACE": "w",
    }
    out, elapsed, code = run_hook("user-prompt", {"session_id": "s", "prompt": "hello there"}, env)
    assert (out, code) == ("", 0)
    assert elapsed < 5


def test_a_slow_server_is_cut_off_by_the_timeout(tmp_path):
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts, never answers
    port = listener.getsockname()[1]
    env = {
        **env_for(tmp_path / "data"),
        "MEMFLOW_URL": f"http://127.0.0.1:{port}",
        "MEMFLOW_API_KEY": "k",
        "MEMFLOW_HOOK_TIMEOUT": "1",
    }
    try:
        out, elapsed, code = run_hook(
            "user-prompt", {"session_id": "s", "prompt": "hello there"}, env
        )
    finally:
        listener.close()
    assert (out, code) == ("", 0)
    assert elapsed < 4


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


def test_install_hooks_merges_and_uninstall_removes_only_ours(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    other = {"type": "command", "command": "/usr/bin/notify-send done"}
    settings.write_text(json.dumps({"model": "x", "hooks": {"Stop": [{"hooks": [other]}]}}))
    env = env_for(tmp_path / "data")
    for _ in range(2):  # twice: nothing is added the second time
        subprocess.run(
            [MEMFLOW, "install-hooks", "--claude-code", "--project"],
            cwd=tmp_path,
            env=env,
            check=True,
            capture_output=True,
        )
    data = json.loads(settings.read_text())
    assert data["model"] == "x"
    assert data["hooks"]["Stop"][0]["hooks"] == [other]
    ours = [
        h
        for entries in data["hooks"].values()
        for e in entries
        for h in e["hooks"]
        if install_hooks.is_memflow_hook(h)
    ]
    assert sorted(h["command"].split()[-1] for h in ours) == sorted(install_hooks.EVENTS)
    assert data["hooks"]["PostToolUse"][0]["matcher"] == "*"
    subprocess.run(
        [MEMFLOW, "uninstall-hooks", "--claude-code"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
    )
    assert json.loads(settings.read_text()) == {
        "model": "x",
        "hooks": {"Stop": [{"hooks": [other]}]},
    }

    profile = tmp_path / "dsh-profile"
    subprocess.run(
        [MEMFLOW, "install-hooks", "--dsh", str(profile)], env=env, check=True, capture_output=True
    )
    assert "UserPromptSubmit" in json.loads((profile / "hooks.json").read_text())["hooks"]
