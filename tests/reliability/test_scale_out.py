"""Scale-out: several `memflow serve` web processes and several django-q2
workers, each with a data directory of its own, against one Postgres reached
over TCP with a password through `DATABASE_URL` — a second Postgres instance
on loopback, standing in for a remote one.

- web processes hold no state of their own: what is written through one is
  read through another (memories, recall, core memory, a session's
  preload-once, a dashboard login);
- a job runs exactly once, whichever worker takes it;
- throughput against the number of web processes is measured and printed
  (reported in docs/RELIABILITY.md; never asserted).
"""

from __future__ import annotations

import itertools
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from memflow_site import embedded_pg
from tests.memflow_site.helpers import MEMFLOW, Served, env_for, free_port, serving

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::ResourceWarning")]

WEB = 3
WORKERS = 3


@dataclass
class TcpPostgres:
    url: str
    port: int
    password: str

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user="postgres",
            password=self.password,
            dbname="memflow",
            autocommit=True,
        )


def _pg_bin(name: str) -> str:
    import pgserver

    return str(Path(pgserver.__file__).parent / "pginstall" / "bin" / name)


@contextmanager
def tcp_postgres() -> Iterator[TcpPostgres]:
    """initdb + pg_ctl start on 127.0.0.1:<free port>, password auth over TCP."""
    import pgserver

    # The same portable pgvector the embedded server gets (see embedded_pg).
    embedded_pg._portable_pgvector(
        Path(pgserver.__file__).parent / "pginstall", embedded_pg.portable_pgvector_source()
    )
    root = Path(tempfile.mkdtemp(prefix="memflow-tcp-pg-"))
    root.chmod(0o755)
    pgdata, password, port = root / "pgdata", secrets.token_urlsafe(16), free_port()
    as_user: dict[str, Any] = {"user": "pgserver"} if os.geteuid() == 0 else {}
    pwfile = root / "pw"
    pwfile.write_text(password)
    pwfile.chmod(0o644)
    pgdata.mkdir()
    if as_user:
        shutil.chown(pgdata, "pgserver", "pgserver")
        shutil.chown(root, "pgserver", "pgserver")
    subprocess.run(
        [
            _pg_bin("initdb"),
            "-D",
            str(pgdata),
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            f"--pwfile={pwfile}",
            "--encoding=utf8",
        ],
        check=True,
        capture_output=True,
        **as_user,
    )
    subprocess.run(
        [
            _pg_bin("pg_ctl"),
            "-D",
            str(pgdata),
            "-w",
            "-l",
            str(root / "log"),
            "-o",
            f"-h 127.0.0.1 -p {port} -k {root} -c max_connections=200",
            "start",
        ],
        check=True,
        capture_output=True,
        **as_user,
    )
    server = TcpPostgres(
        url=f"postgresql://postgres:{password}@127.0.0.1:{port}/memflow",
        port=port,
        password=password,
    )
    try:
        with psycopg.connect(
            host="127.0.0.1",
            port=port,
            user="postgres",
            password=password,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute("CREATE DATABASE memflow")
        yield server
    finally:
        subprocess.run(
            [_pg_bin("pg_ctl"), "-D", str(pgdata), "-m", "fast", "stop"],
            capture_output=True,
            **as_user,
        )
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Cluster:
    pg: TcpPostgres
    web: list[Served]
    workers: list[tuple[subprocess.Popen[Any], Path]]
    key: str

    def client(self, index: int) -> httpx.Client:
        return httpx.Client(
            base_url=self.web[index].url,
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=60,
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("scale-out")
    secret = secrets.token_urlsafe(50)  # every process of a deployment shares it
    with tcp_postgres() as pg, ExitStack() as stack:

        def env(name: str) -> dict[str, str]:
            values = env_for(root / name, database_url=pg.url)
            values.update(MEMFLOW_SECRET_KEY=secret, MEMFLOW_WORKERS="1")
            return values

        web = [
            stack.enter_context(serving(env(f"web{i}"), "--no-worker", timeout=180))
            for i in range(WEB)
        ]
        credentials = (root / "web0" / "first-run-credentials.txt").read_text()
        key = re.search(r"api key: (\S+)", credentials)
        assert key, credentials
        for served in web:
            deadline = time.monotonic() + 180
            while httpx.get(f"{served.url}/api/v1/health").json()["embeddings"] != "ready":
                assert time.monotonic() < deadline, "the embedding model never loaded"
                time.sleep(0.5)
        workers = []
        for i in range(WORKERS):
            log = root / f"worker{i}.log"
            with log.open("w") as out:
                process = subprocess.Popen(
                    [MEMFLOW, "worker"],
                    env=env(f"worker{i}"),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            workers.append((process, log))
        try:
            yield Cluster(pg=pg, web=web, workers=workers, key=key[1])
        finally:
            for process, _ in workers:
                os.killpg(process.pid, signal.SIGTERM)
            for process, _ in workers:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)


def test_what_one_web_process_writes_another_reads(cluster):
    a, b, c = (cluster.client(i) for i in range(3))
    base = "/api/v1/workspaces/default"
    made = a.post(f"{base}/memories/", json={"text": "The build cache lives on host rook-7"})
    assert made.status_code == 201
    pk = made.json()["id"]
    assert b.get(f"{base}/memories/{pk}/").json()["text"] == "The build cache lives on host rook-7"
    recall = c.post(f"{base}/recall/", json={"query": "where is the build cache"})
    assert "rook-7" in recall.text

    assert (
        a.post(f"{base}/core/memory/", json={"action": "add", "content": "Use pnpm"}).status_code
        == 200
    )
    assert "Use pnpm" in b.get(f"{base}/core/").text

    # Preload once per session holds across processes: the session lives in the database.
    hook = {"session_id": "scale-1", "workspace": "default", "cwd": "/srv/app"}
    first = a.post("/api/v1/hooks/session-start", json=hook)
    again = b.post("/api/v1/hooks/session-start", json=hook)
    assert first.status_code == again.status_code == 200
    # The session made through one process is found through a third.
    assert c.get(f"{base}/sessions/scale-1/summaries/").status_code == 200
    assert c.get(f"{base}/sessions/never-seen/summaries/").status_code == 404

    # A dashboard login made through one process is valid on the others.
    credentials = re.search(r"username: (\S+)\npassword: (\S+)", _first_run(cluster))
    assert credentials
    browser = httpx.Client(base_url=cluster.web[0].url, timeout=30)
    page = browser.get("/login/")
    token = browser.cookies["csrftoken"]
    logged = browser.post(
        "/login/",
        data={"username": credentials[1], "password": credentials[2], "csrfmiddlewaretoken": token},
        headers={"Referer": f"{cluster.web[0].url}/login/"},
    )
    assert logged.status_code == 302, page.text[:200]
    for served in cluster.web[1:]:
        home = httpx.get(f"{served.url}/w/default/memories/", cookies=browser.cookies, timeout=30)
        assert home.status_code == 200 and "rook-7" in home.text


def _first_run(cluster: Cluster) -> str:
    return (Path(cluster.web[0].log_path).parent / "first-run-credentials.txt").read_text()


def test_each_job_runs_exactly_once_whichever_worker_takes_it(cluster):
    sessions = 24
    clients = [cluster.client(i) for i in range(WEB)]
    for n in range(sessions):
        web = clients[n % WEB]
        hook = {"session_id": f"fold-{n}", "workspace": "default"}
        for turn in range(4):
            web.post(
                "/api/v1/hooks/user-prompt", json={**hook, "prompt": f"step {turn}: fix test {n}"}
            )
            web.post(
                "/api/v1/hooks/stop", json={**hook, "last_assistant_message": f"turn {turn} done"}
            )
    queued = []
    for n in range(sessions):
        answer = clients[n % WEB].post(
            f"/api/v1/workspaces/default/sessions/fold-{n}/summaries/fold/", json={"force": True}
        )
        assert answer.status_code == 202, answer.text
        queued.append(f"fold-{n}")

    with cluster.pg.connect() as conn:
        deadline = time.monotonic() + 180
        while True:
            done = conn.execute(
                "SELECT count(*) FROM django_q_task WHERE name LIKE 'fold-%%'"
            ).fetchone()
            waiting = conn.execute("SELECT count(*) FROM django_q_ormq").fetchone()
            if done and done[0] >= sessions and waiting == (0,):
                break
            assert time.monotonic() < deadline, "the folds did not all run"
            time.sleep(0.5)
        rows = conn.execute(
            "SELECT name, success, attempt_count FROM django_q_task WHERE name LIKE 'fold-%%'"
        ).fetchall()
        nodes = conn.execute(
            "SELECT s.external_id, count(n.id) FROM contexts_agentsession s "
            "LEFT JOIN contexts_summarynode n ON n.session_id = s.id "
            "WHERE s.external_id LIKE 'fold-%%' GROUP BY 1"
        ).fetchall()
    assert len(rows) == sessions and all(ok and attempts == 1 for _, ok, attempts in rows)
    assert len(nodes) == sessions and all(count >= 1 for _, count in nodes)
    # Each task was started by one worker process, once; the work was spread.
    started: dict[str, list[int]] = {}
    for index, (_, log) in enumerate(cluster.workers):
        for name in re.findall(
            r"processing (\S+) 'contexts.flowctx.tasks.summaries_fold'", log.read_text()
        ):
            started.setdefault(name, []).append(index)
    assert len(started) == sessions and all(len(by) == 1 for by in started.values())
    spread = {by[0] for by in started.values()}
    print(f"{sessions} folds, each run once, by workers {sorted(spread)}")
    assert len(spread) >= 2


def _throughput(
    urls: list[str], key: str, seconds: float, clients: int, mode: str
) -> dict[str, float]:
    """`clients` threads, round-robin over `urls`: `write` alternates remember and
    recall (both embed a text: CPU-bound in the web process); `read` alternates
    a memory page and a state lookup (no model: the database's share)."""
    stop = time.monotonic() + seconds
    counts = {"ok": 0, "errors": 0}
    latencies: list[float] = []
    lock = threading.Lock()
    cycle = itertools.cycle(urls)

    def run(n: int) -> None:
        rng = random.Random(n)
        with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
            i = 0
            while time.monotonic() < stop:
                with lock:
                    url = next(cycle)
                base = f"{url}/api/v1/workspaces/default"
                i += 1
                words = " ".join(f"w{rng.randrange(10_000)}" for _ in range(12))
                started = time.monotonic()
                try:
                    if mode == "read":
                        answer = (
                            client.get(f"{base}/memories/", params={"limit": 20})
                            if i % 2
                            else client.get(f"{base}/states/", params={"limit": 20})
                        )
                    elif i % 2:
                        answer = client.post(
                            f"{base}/memories/", json={"text": f"fact {n}-{i}: {words}"}
                        )
                    else:
                        answer = client.post(f"{base}/recall/", json={"query": words})
                    good = answer.status_code < 300
                except httpx.HTTPError:
                    good = False
                with lock:
                    counts["ok" if good else "errors"] += 1
                    latencies.append(time.monotonic() - started)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies.sort()
    return {
        "req_per_s": counts["ok"] / seconds,
        "errors": counts["errors"],
        "p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else 0.0,
        "p95_ms": 1000 * latencies[int(len(latencies) * 0.95)] if latencies else 0.0,
    }


def test_throughput_against_the_number_of_web_processes(cluster):
    seconds = float(os.environ.get("MEMFLOW_SCALE_SECONDS", "8"))
    report = []
    for mode in ("write", "read"):
        for processes in range(1, WEB + 1):
            urls = [served.url for served in cluster.web[:processes]]
            result = _throughput(urls, cluster.key, seconds, clients=4 * processes, mode=mode)
            report.append((mode, processes, result))
            assert result["errors"] == 0, result
    with cluster.pg.connect() as conn:
        backends = conn.execute("SELECT count(*) FROM pg_stat_activity").fetchone()
    print("\nmode | web processes | clients | req/s | p50 ms | p95 ms")
    for mode, processes, r in report:
        print(
            f"{mode} | {processes} | {4 * processes} | {r['req_per_s']:.1f} | "
            f"{r['p50_ms']:.0f} | {r['p95_ms']:.0f}"
        )
    print(f"Postgres backends after the run: {backends}")
