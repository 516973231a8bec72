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

import httpx

MEMFLOW = str(Path(sys.executable).with_name("memflow"))


def env_for(data_dir: Path, database_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "MEMFLOW_"))}
    env["MEMFLOW_DATA_DIR"] = str(data_dir)
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def memflow(
    *args: str,
    env: dict[str, str],
    check: bool = True,
    timeout: float = 120,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`memflow ARGS`; standard input is `input`, or nothing (never a terminal)."""
    result = subprocess.run(
        [MEMFLOW, *args],
        env=env,
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


@contextmanager
def serving(env: dict[str, str], *extra: str, timeout: float = 90) -> Iterator[Served]:
    """`memflow serve` on a free port, until it answers /api/v1/health."""
    port = free_port()
    log_path = Path(env["MEMFLOW_DATA_DIR"]) / f"serve-{port}.log"
    Path(env["MEMFLOW_DATA_DIR"]).mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [MEMFLOW, "serve", "--port", str(port), *extra],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    served = Served(url=f"http://127.0.0.1:{port}", process=process, log_path=log_path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise AssertionError(f"memflow serve exited early:\n{served.log()}")
            try:
                if httpx.get(f"{served.url}/api/v1/health", timeout=2).status_code in (200, 503):
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"memflow serve did not answer in {timeout}s:\n{served.log()}")
            time.sleep(0.3)
        yield served
    finally:
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
