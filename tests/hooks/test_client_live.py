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
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from contexts import services
from contexts.models import CompressionRef, SessionEvent, Workspace
from tests.memflow_site.helpers import (
    MEMFLOW,
    Served,
    env_for,
    free_port,
    serving,
    wait_for_embeddings,
)
from tests.reliability.conftest import database_url_for_tests

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def live(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with django_db_blocker.unblock():
        url = database_url_for_tests()
        User.objects.get_or_create(username="client-placeholder")  # flushed by the first test
    env = env_for(tmp_path_factory.mktemp("client-live") / "data", database_url=url)
    with serving(env, "--no-worker") as server:
        wait_for_embeddings(server)
        yield server


@pytest.fixture
def key(live: Served) -> tuple[Workspace, str]:
    user = User.objects.create_user("carol", password="x")
    workspace = services.workspace_create(user=user, slug="carol", name="Carol")
    return workspace, services.apikey_create(user=user, scope="write", workspace=workspace).raw


def client_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """A person's shell: their own HOME (Claude Code's dir, the skip state), memflow's settings."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**env_for(tmp_path / "data"), "HOME": str(home), "MEMFLOW_HOOK_TIMEOUT": "10"}
    env.pop("XDG_STATE_HOME", None)
    env.pop("XDG_CONFIG_HOME", None)
    return {**env, **settings}


def run(args: list[str], env: dict[str, str], stdin: str = "", cwd: Path | None = None):
    return subprocess.run(
        [MEMFLOW, *args],
        input=stdin,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


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
    live: Served, key: tuple[Workspace, str], tmp_path: Path, case: str, reason: str
) -> None:
    workspace, raw = key
    env = client_env(tmp_path, MEMFLOW_URL=live.url, MEMFLOW_API_KEY=raw)
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
    live: Served, key: tuple[Workspace, str], tmp_path: Path
) -> None:
    _, raw = key
    env = client_env(tmp_path, MEMFLOW_URL=live.url, MEMFLOW_API_KEY=raw)
    project = tmp_path / "project"
    project.mkdir()
    assert run(["install-hooks", "--claude-code", "--project"], env, cwd=project).returncode == 0

    done = run(["status"], env, cwd=project)

    assert done.returncode == 0, done.stderr
    assert f"{live.url}  (MEMFLOW_URL)" in done.stderr
    assert f"{raw[:11]}…  (MEMFLOW_API_KEY): valid, scope write, restricted to carol" in done.stderr
    assert "carol  (the key's): your role is owner" in done.stderr
    assert f"{project}/.claude/settings.local.json: 7 events" in done.stderr
    assert done.stderr.rstrip().endswith("all good")
    facts = json.loads(run(["status", "--json"], env, cwd=project).stdout)
    assert facts["workspace"] == {"slug": "carol", "role": "owner"} and facts["problems"] == []


def test_status_fails_on_a_wrong_key(live: Served, key: tuple[Workspace, str], tmp_path: Path):
    env = client_env(tmp_path, MEMFLOW_URL=live.url, MEMFLOW_API_KEY="mf_not-a-real-key-at-all")
    done = run(["status"], env)
    assert done.returncode == 1
    assert "problem: The server refuses the API key mf_not-a-re…" in done.stderr


def test_status_fails_on_a_wrong_workspace(live: Served, key: tuple[Workspace, str], tmp_path):
    _, raw = key
    env = client_env(tmp_path, MEMFLOW_URL=live.url, MEMFLOW_API_KEY=raw, MEMFLOW_WORKSPACE="nope")
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
    live: Served, key: tuple[Workspace, str], tmp_path: Path
) -> None:
    _, raw = key
    env = client_env(tmp_path, MEMFLOW_URL=live.url, MEMFLOW_API_KEY=raw)
    state = Path(env["HOME"]) / ".local" / "state" / "memflow" / "hook-skip.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({live.url: {"until": time.time() + 600, "reason": "no answer"}}))
    done = run(["status"], env)
    assert done.returncode == 0, done.stderr
    assert "hooks were skipping it (no answer); cleared, it answers" in done.stderr
    assert json.loads(state.read_text()) == {}


def test_version() -> None:
    done = subprocess.run([MEMFLOW, "--version"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.startswith("memflow ")
