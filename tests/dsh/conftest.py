"""The real DeepSeek Harness (dsh), the real `memflow serve`, real HTTP on loopback.

dsh (the version pinned in `dsh-version`, installed by `make harness-dsh`
into ~/.cache/memflow/dsh/<version> with the Node and pnpm it needs) runs
headless (`dsh --profile headless "task"`) in a temporary project with a
temporary HOME, its `deepseek-official` provider pointed at `fake_deepseek`.
memflow's bundle is added the way the README tells a user (`memflow
install-hooks --dsh ~/.dsh/profiles/headless`, with `dsh` on PATH), and
MEMFLOW_URL / MEMFLOW_API_KEY / MEMFLOW_WORKSPACE are in dsh's environment.
The hook budget is the default one. Tests assert on what the fake model was
sent and on what memflow stored.

Without dsh the suite skips, saying how to install it.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User

from contexts.models import Workspace
from contexts.tenancy import services
from tests.dsh.fake_deepseek import FakeDeepSeek, Turn, fake_deepseek
from tests.memflow_site.helpers import MEMFLOW, Served, env_for, serving, wait_for_embeddings
from tests.reliability.conftest import database_url_for_tests

HERE = Path(__file__).parent
VERSION = (HERE / "dsh-version").read_text().strip()
BUNDLE = HERE.parents[1] / "integrations" / "dsh"
# Generous: only turns a hang into a failure. A run takes a few seconds.
RUN_GUARD_SECONDS = 240


def dsh_path() -> Path:
    """Where install_dsh.sh puts the pinned dsh (MEMFLOW_DSH overrides)."""
    explicit = os.environ.get("MEMFLOW_DSH")
    if explicit:
        return Path(explicit)
    base = os.environ.get("MEMFLOW_DSH_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memflow" / "dsh"
    )
    return Path(base) / VERSION / "bin" / "dsh"


@pytest.fixture(scope="session")
def dsh_bin() -> Path:
    path = dsh_path()
    if not os.access(path, os.X_OK):
        pytest.skip(
            f"dsh {VERSION} is not installed at {path}: run `make harness-dsh` "
            "(tests/dsh/install_dsh.sh; needs npm and the npm registry)"
        )
    return path


@pytest.fixture(scope="session")
def live(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """`memflow serve` with its worker (handoff notes are folded there), model loaded."""
    with django_db_blocker.unblock():
        url = database_url_for_tests()
        # `memflow serve` makes an admin on an empty database; a test's flush empties it.
        User.objects.get_or_create(username="dsh-placeholder")
    env = env_for(tmp_path_factory.mktemp("dsh-memflow") / "data", database_url=url)
    with serving(env) as server:
        wait_for_embeddings(server)
        yield server


@dataclass
class Account:
    workspace: Workspace
    key: str
    api: httpx.Client


@pytest.fixture
def account(live: Served, transactional_db: None) -> Iterator[Account]:
    """A user with a workspace and a key restricted to it, committed so the server sees them."""
    user = User.objects.create_user("dsh-user", password="x")
    workspace = services.workspace_create(user=user, slug="dsh", name="dsh")
    key = services.apikey_create(user=user, scope="write", workspace=workspace).raw
    with httpx.Client(
        base_url=f"{live.url}/api/v1/workspaces/{workspace.slug}",
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    ) as api:
        yield Account(workspace=workspace, key=key, api=api)


@dataclass
class Run:
    """One headless `dsh` run: what it printed, and how long it took."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class Dsh:
    dsh: Path
    root: Path
    model: FakeDeepSeek
    memflow_env: dict[str, str]
    home: Path = field(init=False)
    project: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.home.mkdir()
        self.project.mkdir()
        (self.project / ".git").mkdir()  # a project root, as a clone has
        (self.root / "tmp").mkdir()

    @property
    def profile(self) -> Path:
        return self.home / ".dsh" / "profiles" / "headless"

    def env(self) -> dict[str, str]:
        # dsh (and pnpm) from the install, memflow from this checkout's venv (and
        # this checkout, where PYTHONPATH names it: the bundle it adds is its own).
        path = f"{self.dsh.parent}:{Path(MEMFLOW).parent}:/usr/bin:/bin"
        checkout = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
        return {
            **checkout,
            "PATH": path,
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.root / "tmp"),
            "DEEPSEEK_BASE_URL": self.model.url,
            "DEEPSEEK_API_KEY": "sk-fake-deepseek-key",
            "DSH_PERMISSION_MODE": "danger-full-access",
            "NO_PROXY": "127.0.0.1,localhost",
            **self.memflow_env,
        }

    def install_bundle(self) -> subprocess.CompletedProcess[str]:
        """What the README tells a dsh user to run."""
        return subprocess.run(
            [MEMFLOW, "install-hooks", "--dsh", str(self.profile)],
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=RUN_GUARD_SECONDS,
            check=True,
        )

    def run(self, prompt: str, script: list[Turn], *, patch: Path | None = None) -> Run:
        """`dsh --profile headless prompt`, the fake model answering from `script`."""
        self.model.play(script)
        command = [str(self.dsh), "--profile", "headless"]
        if patch is not None:
            command += ["--patch", str(patch)]
        started = time.monotonic()
        done = subprocess.run(
            [*command, prompt],
            cwd=self.project,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_GUARD_SECONDS,
        )
        return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


DshMaker = Callable[[dict[str, str]], Dsh]


@pytest.fixture
def dsh(dsh_bin: Path, tmp_path: Path) -> Iterator[DshMaker]:
    """Dsh(memflow_env) in a fresh project and HOME, with a fresh fake model."""
    with fake_deepseek() as model:

        def make(memflow_env: dict[str, str]) -> Dsh:
            return Dsh(dsh=dsh_bin, root=tmp_path, model=model, memflow_env=memflow_env)

        yield make


def memflow_env(url: str, key: str, workspace: str) -> dict[str, str]:
    """The client's settings, as a user exports them (the default hook budget)."""
    return {"MEMFLOW_URL": url, "MEMFLOW_API_KEY": key, "MEMFLOW_WORKSPACE": workspace}
