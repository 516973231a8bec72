"""The hook client as a person meets it, against a real `memflow serve`.

`memflow hook post-tool-use` with bad `persistedOutputPath`s (the reason
lands in the session log, the hook exits 0 and says nothing to the model
beyond the truth), and `memflow status` finding a wrong key or URL.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from contexts.models import CompressionRef, SessionEvent
from tests.memflow_site.helpers import (
    MEMFLOW,
    Account,
    Served,
    client_env,
    free_port,
    make_account,
    memflow,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def carol(memflow_server: Served) -> Account:
    return make_account("carol")


def run(args: list[str], env: dict[str, str], stdin: str = "", cwd: Path | None = None):
    return memflow(*args, env=env, check=False, timeout=60, input=stdin, cwd=cwd)


# --- bad persistedOutputPaths, end to end ---------------------------------------------------


def cut_call(path: str, size: int, cwd: Path) -> str:
    return json.dumps(
        {
            "session_id": "cc-bad-input",
            "hook_event_name": "PostToolUse",
            "cwd": str(cwd),
            "tool_name": "Bash",
            "tool_input": {"command": "make rows"},
            "tool_response": {
                "stdout": "r" * 30_000,
                "stderr": "",
                "persistedOutputPath": path,
                "persistedOutputSize": size,
            },
        }
    )


@pytest.mark.parametrize(
    "case, reason",
    [
        ("missing", "does not exist"),
        ("directory", "is a directory"),
        ("link outside", "is outside the directories Claude Code writes tool output to"),
        ("over the cap", "over MEMFLOW_HOOK_MAX_BYTES (1,048,576)"),
    ],
)
def test_a_bad_persisted_output_path_is_refused_and_the_hook_goes_on(
    memflow_server: Served, carol: Account, tmp_path: Path, case: str, reason: str
) -> None:
    workspace = carol.workspace
    env = client_env(tmp_path, memflow_server.url, carol.key)
    results = Path(env["HOME"]) / ".claude" / "projects" / "p" / "s" / "tool-results"
    results.mkdir(parents=True)
    path = results / "b1.txt"
    if case == "directory":
        path.mkdir()
    elif case == "link outside":
        path.symlink_to("/etc/passwd")
    elif case == "over the cap":
        path.write_bytes(b"r" * 2_000_000)

    done = run(["hook", "post-tool-use"], env, cut_call(str(path), 2_000_000, tmp_path))

    assert done.returncode == 0
    assert reason in done.stderr and done.stderr.count("\n") == 1
    said = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Only part of the Bash output" in said and "2,000,000 bytes in all" in said
    logged = SessionEvent.objects.get(session__workspace=workspace, kind="post-tool-use")
    assert reason in logged.payload["memflow_output"]["refused"]
    ref = CompressionRef.objects.get(workspace=workspace)
    assert bytes(ref.content) == b"r" * 30_000
    assert ref.content_type.endswith("truncated-from=2000000")


# --- memflow status ---------------------------------------------------------------------------


def test_status_says_what_the_client_resolved_and_that_it_works(
    memflow_server: Served, carol: Account, tmp_path: Path
) -> None:
    raw = carol.key
    env = client_env(tmp_path, memflow_server.url, raw)
    project = tmp_path / "project"
    project.mkdir()
    assert run(["install-hooks", "--claude-code", "--project"], env, cwd=project).returncode == 0

    done = run(["status"], env, cwd=project)

    assert done.returncode == 0, done.stderr
    assert f"{memflow_server.url}  (MEMFLOW_URL)" in done.stderr
    assert f"{raw[:11]}…  (MEMFLOW_API_KEY): valid, scope write, restricted to carol" in done.stderr
    assert "carol  (the key's): your role is owner" in done.stderr
    assert f"{project}/.claude/settings.local.json: 10 events" in done.stderr
    assert done.stderr.rstrip().endswith("all good")
    facts = json.loads(run(["status", "--json"], env, cwd=project).stdout)
    assert facts["workspace"] == {"slug": "carol", "role": "owner"} and facts["problems"] == []


def test_status_fails_on_a_wrong_key(memflow_server: Served, carol: Account, tmp_path: Path):
    env = client_env(tmp_path, memflow_server.url, "mf_not-a-real-key-at-all")
    done = run(["status"], env)
    assert done.returncode == 1
    assert "problem: The server refuses the API key mf_not-a-re…" in done.stderr


def test_status_fails_on_a_wrong_workspace(memflow_server: Served, carol: Account, tmp_path: Path):
    env = client_env(tmp_path, memflow_server.url, carol.key, MEMFLOW_WORKSPACE="nope")
    done = run(["status"], env)
    assert done.returncode == 1
    assert "Workspace 'nope' (MEMFLOW_WORKSPACE) is not one this key can use" in done.stderr


def test_status_fails_when_nothing_answers(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = run(["status"], client_env(tmp_path, MEMFLOW_URL=url, MEMFLOW_API_KEY="mf_x"))
    assert done.returncode == 1
    assert f"problem: Nothing memflow answers at {url}" in done.stderr


def test_status_fails_on_a_url_that_is_not_memflow(tmp_path: Path) -> None:
    class NotMemflow(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotMemflow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        done = run(["status"], client_env(tmp_path, MEMFLOW_URL=url, MEMFLOW_API_KEY="mf_x"))
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 1
    assert "answers, but not like memflow (GET /api/v1/health: 404)" in done.stderr


def test_status_clears_a_skip_once_the_server_answers(
    memflow_server: Served, carol: Account, tmp_path: Path
) -> None:
    env = client_env(tmp_path, memflow_server.url, carol.key)
    state = Path(env["HOME"]) / ".local" / "state" / "memflow" / "hook-skip.json"
    state.parent.mkdir(parents=True)
    state.write_text(
        json.dumps({memflow_server.url: {"until": time.time() + 600, "reason": "no answer"}})
    )
    done = run(["status"], env)
    assert done.returncode == 0, done.stderr
    assert "hooks were skipping it (no answer); cleared, it answers" in done.stderr
    assert json.loads(state.read_text()) == {}


def test_version() -> None:
    done = subprocess.run([MEMFLOW, "--version"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.startswith("memflow ")
