"""A real `memflow serve` for the benches that time what crosses HTTP."""

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


@dataclass
class Served:
    url: str
    env: dict[str, str]
    cold_start_ms: float | None  # start to the first answered `probe`, when one was given


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def memflow_command() -> str:
    return str(Path(sys.executable).with_name("memflow"))


@contextmanager
def bench_server(
    data_dir: Path, *, raw_key: str, probe: dict[str, str] | None = None, timeout: float = 180
) -> Iterator[Served]:
    """`memflow serve --no-worker` on a free loopback port, ready once a hook answers."""
    port = free_port()
    env = {**os.environ, "MEMFLOW_DATA_DIR": str(data_dir)}
    env.pop("MEMFLOW_DB_POOL", None)  # the server sizes its own pool, as for a user
    started = time.perf_counter()
    serve = subprocess.Popen(
        [memflow_command(), "serve", "--port", str(port), "--no-worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    body = probe or {"session_id": "bench-ready", "prompt": "ready?"}
    cold_start = None
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                answer = httpx.post(
                    f"{url}/api/v1/hooks/user-prompt",
                    json=body,
                    timeout=60,
                    headers={"Authorization": f"Bearer {raw_key}"},
                )
                if answer.status_code == 200:
                    cold_start = (time.perf_counter() - started) * 1000
                    break
            except httpx.HTTPError:
                pass
            if serve.poll() is not None:
                raise RuntimeError(f"memflow serve exited with {serve.returncode}")
            time.sleep(0.05)
        if cold_start is None:
            raise RuntimeError(f"memflow serve answered no hook within {timeout:.0f}s")
        yield Served(url=url, env=env, cold_start_ms=cold_start)
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGINT)
        serve.wait(timeout=30)
