"""The real Claude Code CLI, the real `memflow serve`, real HTTP on loopback.

Claude Code (the version pinned in `claude-code-version`, installed by
`make harness-cli` into ~/.cache/memflow/claude-code/<version>) runs `-p` in a
temporary project with a temporary HOME, talking to `fake_model` instead of
Anthropic. memflow's hooks are installed the way the README tells a user
(`memflow install-hooks --claude-code --project`, MEMFLOW_URL / MEMFLOW_API_KEY
in the environment); its MCP server is added with `claude mcp add`. Tests
assert on what the fake model was sent and on what memflow stored.

Without the CLI the suite skips, saying how to install it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User

from contexts.models import Workspace
from contexts.tenancy import services
from tests.harness.fake_model import FakeModel, Turn, fake_model
from tests.memflow_site.helpers import MEMFLOW, Served

HERE = Path(__file__).parent
VERSION = (HERE / "claude-code-version").read_text().strip()
# Generous: only turns a hang into a failure. A run takes a few seconds.
RUN_GUARD_SECONDS = 180


def claude_path() -> Path:
    """Where install_claude_code.sh puts the pinned CLI (MEMFLOW_CLAUDE_CODE overrides)."""
    explicit = os.environ.get("MEMFLOW_CLAUDE_CODE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("MEMFLOW_CLAUDE_CODE_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memflow" / "claude-code"
    )
    return Path(base) / VERSION / "node_modules" / ".bin" / "claude"


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    path = claude_path()
    if not os.access(path, os.X_OK):
        pytest.skip(
            f"Claude Code {VERSION} is not installed at {path}: run `make harness-cli` "
            "(tests/harness/install_claude_code.sh; needs npm and the npm registry)"
        )
    return path


@pytest.fixture
def live(claude_bin: Path, memflow_server: Served) -> Served:
    """The run's `memflow serve` (tests/conftest.py), once Claude Code is known to be here."""
    return memflow_server


@dataclass
class Account:
    workspace: Workspace
    key: str
    api: httpx.Client


@pytest.fixture
def account(live: Served, transactional_db: None) -> Iterator[Account]:
    """A user with a workspace and a key restricted to it, committed so the server sees them."""
    user = User.objects.create_user("harness-user", password="x")
    workspace = services.workspace_create(user=user, slug="harness", name="Harness")
    key = services.apikey_create(user=user, scope="write", workspace=workspace).raw
    with httpx.Client(
        base_url=f"{live.url}/api/v1/workspaces/{workspace.slug}",
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    ) as api:
        yield Account(workspace=workspace, key=key, api=api)


@dataclass
class Run:
    """One `claude -p` run: its stream-json events, each with the time it was read."""

    returncode: int
    events: list[tuple[float, dict[str, Any]]]
    stderr: str

    def of(self, type_: str, subtype: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for _, e in self.events
            if e.get("type") == type_ and (subtype is None or e.get("subtype") == subtype)
        ]

    @property
    def result(self) -> dict[str, Any]:
        found = self.of("result")
        assert found, f"claude printed no result:\n{self.stderr}"
        return found[-1]

    def hooks(self) -> list[dict[str, Any]]:
        """Claude Code's own report of each hook that ran (hook_response events)."""
        return self.of("system", "hook_response")

    def hook_seconds(self) -> dict[str, list[float]]:
        """Hook event → seconds from its hook_started to its hook_response, as read."""
        started: dict[str, float] = {}
        spans: dict[str, list[float]] = {}
        for at, event in self.events:
            if event.get("type") != "system":
                continue
            if event.get("subtype") == "hook_started":
                started[event["hook_id"]] = at
            elif event.get("subtype") == "hook_response" and event.get("hook_id") in started:
                spans.setdefault(event["hook_event"], []).append(at - started[event["hook_id"]])
        return spans


@dataclass
class Harness:
    claude: Path
    root: Path
    model: FakeModel
    memflow_env: dict[str, str]
    home: Path = field(init=False)
    project: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.home.mkdir()
        self.project.mkdir()
        (self.project / ".git").mkdir()  # a project root, as a clone has

    def env(self) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.root / "tmp"),
            "ANTHROPIC_BASE_URL": self.model.url,
            "ANTHROPIC_API_KEY": "sk-ant-api03-harness-fake-key",
            # Nothing leaves the machine: no telemetry, updates, or reports.
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        (self.root / "tmp").mkdir(exist_ok=True)
        return {**env, **self.memflow_env}

    def install_hooks(self, *flags: str) -> subprocess.CompletedProcess[str]:
        """What the README tells a user to run, in the project."""
        return self._in_project(
            [MEMFLOW, "install-hooks", "--claude-code", *(flags or ("--project",))]
        )

    def add_mcp(self, url: str, key: str) -> None:
        header = f"Authorization: Bearer {key}"
        self._in_project(
            [
                str(self.claude),
                "mcp",
                "add",
                "--transport",
                "http",
                "memflow",
                url,
                "--header",
                header,
            ]
        )

    def _in_project(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        """A set-up command run in the project as the user would, failing loudly."""
        return subprocess.run(
            command,
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )

    def run(
        self, prompt: str, script: list[Turn], *, tools: str = "Bash", resume: Sequence[str] = ()
    ) -> Run:
        """`claude -p prompt`; `resume` adds e.g. ("--continue",) or ("--resume", session_id)."""
        self.model.script = list(script)
        process = subprocess.Popen(
            [
                str(self.claude),
                *resume,
                "-p",
                prompt,
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-hook-events",
                "--allowedTools",
                tools,
            ],
            cwd=self.project,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        events: list[tuple[float, dict[str, Any]]] = []
        try:
            assert process.stdout is not None
            deadline = time.monotonic() + RUN_GUARD_SECONDS
            for line in process.stdout:
                if line.strip():
                    events.append((time.monotonic(), json.loads(line)))
                assert time.monotonic() < deadline, "claude -p hung"
            process.wait(timeout=RUN_GUARD_SECONDS)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        stderr = process.stderr.read() if process.stderr else ""
        return Run(returncode=process.returncode, events=events, stderr=stderr)

    def converse(
        self, prompts: Sequence[tuple[str, Callable[[], None]]], script: list[Turn]
    ) -> Run:
        """One `claude -p` process, one session, several prompts fed on stdin (stream-json).

        Each prompt is sent once the one before it has its result, after its
        callable ran (to change a file between two prompts of one session).
        """
        self.model.script = list(script)
        process = subprocess.Popen(
            [
                str(self.claude),
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-hook-events",
                "--allowedTools",
                "Bash",
            ],
            cwd=self.project,
            env=self.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        events: list[tuple[float, dict[str, Any]]] = []
        deadline = time.monotonic() + RUN_GUARD_SECONDS
        try:
            assert process.stdin is not None and process.stdout is not None
            for prompt, before in prompts:
                before()
                message = {"type": "user", "message": {"role": "user", "content": prompt}}
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()
                for line in process.stdout:
                    if line.strip():
                        events.append((time.monotonic(), json.loads(line)))
                        if events[-1][1].get("type") == "result":
                            break
                    assert time.monotonic() < deadline, "claude -p hung"
            process.stdin.close()
            process.wait(timeout=RUN_GUARD_SECONDS)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        stderr = process.stderr.read() if process.stderr else ""
        return Run(returncode=process.returncode, events=events, stderr=stderr)


HarnessMaker = Callable[..., Harness]


@pytest.fixture
def harness(claude_bin: Path, tmp_path: Path) -> Iterator[HarnessMaker]:
    """Harness(memflow_env) in a fresh project and HOME, with a fresh fake model."""
    with fake_model() as model:

        def make(memflow_env: dict[str, str]) -> Harness:
            return Harness(claude=claude_bin, root=tmp_path, model=model, memflow_env=memflow_env)

        yield make


def memflow_env(url: str, key: str, workspace: str, *, budget: str = "5") -> dict[str, str]:
    """The client's settings, as a user exports them.

    A roomy hook budget by default: on a loaded machine a slow hook must not
    get the server skipped in a test about capture. The budget's own tests
    pass budget="" for the default.
    """
    env = {"MEMFLOW_URL": url, "MEMFLOW_API_KEY": key, "MEMFLOW_WORKSPACE": workspace}
    if budget:
        env["MEMFLOW_HOOK_TIMEOUT"] = budget
    return env
