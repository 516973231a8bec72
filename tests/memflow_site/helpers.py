"""Run the real `memflow` command and server in a data directory of their own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx
from django.contrib.auth.models import User
from django.db import connection

from contexts.models import Workspace
from contexts.tenancy import services

MEMFLOW = str(Path(sys.executable).with_name("memflow"))


def env_for(data_dir: Path, database_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "MEMFLOW_"))}
    env["MEMFLOW_DATA_DIR"] = str(data_dir)
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def database_url_for_tests() -> str:
    """A DATABASE_URL for the database this test run uses (embedded or not)."""
    connection.ensure_connection()
    info = connection.connection.info
    settings = connection.settings_dict
    user = quote(settings["USER"] or info.user)
    password = f":{quote(settings['PASSWORD'])}" if settings["PASSWORD"] else ""
    query: dict[str, Any] = {"host": info.host}
    query.update(
        (name, value)
        for name, value in (settings.get("OPTIONS") or {}).items()
        if isinstance(value, str | int)
    )
    return f"postgresql://{user}{password}@localhost:{info.port}/{quote(info.dbname)}?{urlencode(query)}"


def client_env(tmp_path: Path, url: str = "", key: str = "", **settings: str) -> dict[str, str]:
    """A person's shell with the client pointed at `url` with `key`: their own HOME (config,
    Claude Code's dir, the hooks' skip state) and memflow's `settings` (MEMFLOW_…)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**env_for(tmp_path / "data"), "HOME": str(home), "MEMFLOW_HOOK_TIMEOUT": "10"}
    env.pop("XDG_STATE_HOME", None)
    env.pop("XDG_CONFIG_HOME", None)
    pointed = {"MEMFLOW_URL": url, "MEMFLOW_API_KEY": key}
    return {**env, **{k: v for k, v in pointed.items() if v}, **settings}


@dataclass
class Account:
    user: User
    workspace: Workspace
    key: str  # restricted to `workspace`


def make_account(slug: str, *, scope: str = "write") -> Account:
    """User `slug`, owner of workspace `slug`, and a key restricted to it; a live server
    sees them once committed (the test asks for a transactional database)."""
    user = User.objects.create_user(slug, password="x")
    workspace = services.workspace_create(user=user, slug=slug, name=slug.title())
    key = services.apikey_create(user=user, scope=scope, workspace=workspace).raw
    return Account(user=user, workspace=workspace, key=key)


def memflow(
    *args: str,
    env: dict[str, str],
    check: bool = True,
    timeout: float = 120,
    input: str | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`memflow ARGS`; standard input is `input`, or nothing (never a terminal)."""
    result = subprocess.run(
        [MEMFLOW, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"memflow {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
        )
    return result


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    url: str
    process: subprocess.Popen[str]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text()


# What uvicorn says (in either case, by how many web workers) when another
# process bound the port between free_port() and its own bind (another test
# worker can): the start is tried again.
PORT_TAKEN = "address already in use"


@contextmanager
def serving(env: dict[str, str], *extra: str, timeout: float = 90) -> Iterator[Served]:
    """`memflow serve` on a free port, until it answers /api/v1/health."""
    Path(env["MEMFLOW_DATA_DIR"]).mkdir(parents=True, exist_ok=True)
    for _ in range(3):
        served = _start(env, extra)
        try:
            if _answers(served, timeout):
                break
        except BaseException:
            _stop(served)
            raise
    else:
        raise AssertionError(f"memflow serve found its port taken three times:\n{served.log()}")
    try:
        yield served
    finally:
        _stop(served)


def _start(env: dict[str, str], extra: tuple[str, ...]) -> Served:
    port = free_port()
    log_path = Path(env["MEMFLOW_DATA_DIR"]) / f"serve-{port}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [MEMFLOW, "serve", "--port", str(port), *extra],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    return Served(url=f"http://127.0.0.1:{port}", process=process, log_path=log_path)


def _answers(served: Served, timeout: float) -> bool:
    """True once the server answers; False if it exited because its port was taken."""
    deadline = time.monotonic() + timeout
    while True:
        if served.process.poll() is not None:
            if PORT_TAKEN in served.log().lower():
                return False
            raise AssertionError(f"memflow serve exited early:\n{served.log()}")
        try:
            if httpx.get(f"{served.url}/api/v1/health", timeout=2).status_code in (200, 503):
                return True
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"memflow serve did not answer in {timeout}s:\n{served.log()}")
        time.sleep(0.3)


def _stop(served: Served) -> None:
    process = served.process
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_for_embeddings(server: Served, guard: float = 180) -> None:
    """Until the served process says its embedding model is loaded (guard: a hang, not speed)."""
    deadline = time.monotonic() + guard
    while httpx.get(f"{server.url}/api/v1/health", timeout=10).json()["embeddings"] != "ready":
        assert time.monotonic() < deadline, "the embedding model never loaded"
        time.sleep(0.2)
