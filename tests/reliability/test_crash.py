"""Crash safety with real processes and a real `kill -9` (SIGKILL to the whole
process group, as a power cut or the OOM killer would).

- `memflow import` killed half way: what is visible is whole batches of whole
  rows; running the same import again finishes it, and a third run adds nothing.
- a django-q2 worker killed in the middle of a summary fold: the notes already
  written are whole, none is half-linked, and the fold finishes when asked
  again (the next turn's request) or when django-q2 hands the task out again.
- `memflow serve` and its embedded Postgres killed under write traffic: after
  a restart every write that was answered is there, embeddings included, no
  bulk write is there in part, and a state key still has one current value.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import pytest
from django.conf import settings

from contexts.flowctx import planning
from contexts.flowctx.notes import SECTIONS, note_sections
from contexts.flowctx.services import session_turn_tokens
from contexts.flowctx.tasks import summaries_enqueue
from contexts.models import AgentSession, SummaryNode
from contexts.tenancy.knobs import knob
from memflow_site.porting.ledger import BATCH
from memories.models import Memory
from tests.flowctx.chat_server import ChatServer, Reply
from tests.flowctx.test_summaries import make_session
from tests.memflow_site.helpers import MEMFLOW, env_for, memflow, serving
from tests.reliability.conftest import database_url_for_tests

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

WORDS = [
    "amber",
    "basalt",
    "cobalt",
    "delta",
    "ember",
    "fjord",
    "granite",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lagoon",
    "meadow",
    "nebula",
    "obsidian",
    "prairie",
    "quartz",
    "raven",
    "sierra",
    "tundra",
    "umber",
    "valley",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
    "anchor",
    "beacon",
    "canyon",
    "dune",
    "estuary",
    "falcon",
    "glacier",
    "heron",
    "island",
    "jasper",
    "kelp",
    "lantern",
    "marble",
    "nectar",
    "orchid",
    "pebble",
    "quiver",
    "reef",
    "saffron",
    "thistle",
    "urchin",
    "vortex",
    "walnut",
    "yonder",
    "zinc",
    "ledger",
    "compiler",
    "kernel",
    "socket",
    "thread",
    "mutex",
    "cache",
    "shard",
    "replica",
    "rollback",
    "commit",
    "branch",
    "rebase",
    "lint",
    "schema",
    "index",
    "vector",
    "migrate",
    "deploy",
    "rollout",
    "canary",
]


def wait_for(what: str, condition: Callable[[], bool], seconds: float, step: float = 0.1) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(step)


def kill_9(process: subprocess.Popen[Any]) -> None:
    """SIGKILL to the process and every child (they share its session)."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


# --- an import killed half way -------------------------------------------------------------------


START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def mem0_export(path: Path, count: int) -> list[dict[str, Any]]:
    """Distinct word-salad facts (no two fold together), in time order."""
    rng = random.Random(11)
    items = []
    for i in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(14))
        items.append(
            {
                "id": f"m-{i:05d}",
                "memory": f"Fact {i}: {words}",
                "created_at": (START + dt.timedelta(seconds=i)).isoformat(),
            }
        )
    path.write_text(json.dumps(items))
    return items


def imported(workspace: Any) -> dict[str, Memory]:
    return {
        m.metadata["import"]["key"]: m
        for m in Memory.objects.filter(workspace=workspace, metadata__has_key="import")
    }


def test_an_import_killed_half_way_is_whole_batches_and_resumes(acme, alice, tmp_path):
    count = 8 * BATCH
    items = mem0_export(tmp_path / "mem0.json", count)
    env = env_for(tmp_path / "data", database_url=database_url_for_tests())
    args = [MEMFLOW, "import", "mem0", str(tmp_path / "mem0.json"), "--workspace", "acme"]
    process = subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        wait_for(
            "a third of the import",
            lambda: Memory.objects.filter(workspace=acme).count() >= count // 3,
            seconds=300,
            step=0.05,
        )
    finally:
        kill_9(process)

    by_key = imported(acme)
    source = {f"mem0:{item['id']}": item for item in items}
    print(f"killed after {len(by_key)} of {count} memories")
    assert 0 < len(by_key) < count, "the kill should land in the middle"
    # Whole batches, in source order: a prefix of the file, a multiple of BATCH.
    assert len(by_key) % BATCH == 0
    assert set(by_key) == set(list(source)[: len(by_key)])
    # Whole rows: text, embedding, lexical terms and the ledger key together.
    for key, memory in by_key.items():
        assert memory.text == source[key]["memory"]
        assert memory.embedding is not None and memory.lex
    assert Memory.objects.filter(workspace=acme).count() == len(by_key)

    again = memflow(*args[1:], "--json", env=env, timeout=600)
    report = json.loads(again.stdout)
    assert report["added"]["memories"] == count - len(by_key)
    assert report["present"]["memories"] == len(by_key)
    final = imported(acme)
    assert set(final) == set(source)
    assert all(final[k].text == source[k]["memory"] for k in source)
    assert Memory.objects.filter(workspace=acme).count() == count

    third = json.loads(memflow(*args[1:], "--json", env=env, timeout=600).stdout)
    assert third["added"].get("memories", 0) == 0
    assert Memory.objects.filter(workspace=acme).count() == count


# --- a worker killed in the middle of a summary fold --------------------------------------------

NOTE = "\n\n".join(f"## {s}\nfrom the model: {s.lower()}" for s in SECTIONS)


@contextmanager
def worker(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[Any]]:
    with log.open("a") as out:
        process = subprocess.Popen(
            [MEMFLOW, "worker"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kill_9(process)


def fold_settings(session: AgentSession) -> planning.FoldSettings:
    workspace = session.workspace
    return planning.FoldSettings(
        leaf_tokens=int(knob(workspace, "summary_leaf_tokens")),
        keep_turns=int(knob(workspace, "summary_keep_turns")),
        fanout=int(knob(workspace, "summary_condense_fanout")),
        max_depth=int(knob(workspace, "summary_max_depth")),
    )


def fold_is_sound(session: AgentSession) -> list[SummaryNode]:
    """Every note whole; the active ones tile the history from turn 1; parents cover children."""
    nodes = list(SummaryNode.objects.filter(session=session).order_by("start_turn", "-depth"))
    for node in nodes:
        assert list(note_sections(node.text)) == list(SECTIONS), node.node_id
        assert node.builder == "llm"
        if node.parent_id is not None:
            parent = next(n for n in nodes if n.pk == node.parent_id)
            assert parent.depth == node.depth + 1
            assert parent.start_turn <= node.start_turn <= node.end_turn <= parent.end_turn
    active = [n for n in nodes if n.parent_id is None]
    expected_start = 1
    for node in active:
        assert node.start_turn == expected_start, [n.node_id for n in active]
        expected_start = node.end_turn + 1
    for node in nodes:
        if node.depth > 0:  # a condensed note's children are exactly the notes under it
            under = {
                n.node_id
                for n in nodes
                if n.depth == node.depth - 1
                and node.start_turn <= n.start_turn
                and n.end_turn <= node.end_turn
            }
            assert {n.node_id for n in nodes if n.parent_id == node.pk} == under
    return nodes


def fold_done(session: AgentSession) -> bool:
    active = [
        planning.Node(depth=n.depth, start=n.start_turn, end=n.end_turn)
        for n in SummaryNode.objects.filter(session=session, parent__isnull=True)
    ]
    turns = session_turn_tokens(session=session)
    return planning.plan_next(turns=turns, active=active, settings=fold_settings(session)) is None


def fold_mid_way_killed(acme, bob, tmp_path) -> tuple[AgentSession, dict[str, str], ChatServer]:
    """A 200-turn session (ten notes to write), its fold killed after the third."""
    session = make_session(acme, bob, 200)
    server = ChatServer(replies=[Reply(chunks=(NOTE,), delay=0.8)]).__enter__()
    env = env_for(tmp_path / "data", database_url=database_url_for_tests())
    env.update(MEMFLOW_LLM_URL=server.url, MEMFLOW_LLM_MODEL="qwen-test", MEMFLOW_TASK_TIMEOUT="10")
    # django-q2 signs each task with SECRET_KEY: the enqueuer (this process)
    # and the worker must share it, as every process of a deployment must.
    env["MEMFLOW_SECRET_KEY"] = settings.SECRET_KEY
    summaries_enqueue(session=session)
    with worker(env, tmp_path / "worker.log") as process:
        wait_for(
            "three notes",
            lambda: SummaryNode.objects.filter(session=session).count() >= 3,
            seconds=600,  # a guard against a hang, not a speed check: a loaded CI machine is slow
            step=0.05,
        )
        kill_9(process)
    return session, env, server


def test_a_worker_killed_mid_fold_leaves_whole_notes_and_the_next_request_finishes(
    acme, bob, tmp_path
):
    session, env, server = fold_mid_way_killed(acme, bob, tmp_path)
    try:
        written = fold_is_sound(session)
        print(f"killed with {len(written)} of 10 notes written")
        assert 3 <= len(written) < 10
        assert not fold_done(session)
        # The next turn end asks for a fold again; a fresh worker finishes it.
        summaries_enqueue(session=session)
        with worker(env, tmp_path / "worker.log"):
            wait_for("the fold to finish", lambda: fold_done(session), seconds=180, step=0.2)
        nodes = fold_is_sound(session)
        assert len(nodes) == 10
        assert {n.node_id for n in written} <= {n.node_id for n in nodes}
    finally:
        server.__exit__(None, None, None)


@pytest.mark.slow
def test_a_worker_killed_mid_fold_gets_the_task_again_and_resumes(acme, bob, tmp_path):
    """No new request: django-q2 hands the killed task out again once its lease
    (`retry`, timeout + 60 s) runs out, and the fold resumes where it stopped."""
    session, env, server = fold_mid_way_killed(acme, bob, tmp_path)
    try:
        before = {n.node_id for n in fold_is_sound(session)}
        with worker(env, tmp_path / "worker.log"):
            wait_for("the task handed out again", lambda: fold_done(session), seconds=240, step=1)
        nodes = fold_is_sound(session)
        assert len(nodes) == 10 and before <= {n.node_id for n in nodes}
    finally:
        server.__exit__(None, None, None)


# --- the server and its database killed under write traffic ---------------------------------


def first_run_key(data_dir: Path) -> str:
    text = (data_dir / "first-run-credentials.txt").read_text()
    return next(line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("api key:"))


def postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "pg" / "postmaster.pid").read_text().splitlines()[0])


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


class Writers:
    """Four clients writing facts, bulk batches and state changes until stopped or
    the server is gone; each keeps what the server answered as written."""

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        self.base, self.headers = base, headers
        self.acknowledged: list[tuple[str, int]] = []  # (text, id) of every 201
        self.bulks: list[str] = []  # tags of bulk writes that were answered
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.write, args=(n,)) for n in range(4)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def write(self, n: int) -> None:
        rng = random.Random(n)
        base = self.base
        with httpx.Client(headers=self.headers, timeout=30) as client:
            i = 0
            while not self.stop.is_set():
                i += 1
                words = " ".join(rng.choice(WORDS) for _ in range(10))
                try:
                    if i % 4 == 0:
                        tag = f"bulk-{n}-{i}"
                        items = [{"text": f"{tag} item {j}: {words}"} for j in range(8)]
                        answer = client.post(f"{base}/memories/bulk/", json={"items": items})
                        if answer.status_code in (200, 201):
                            with self.lock:
                                self.bulks.append(tag)
                    elif i % 4 == 1:
                        state = {
                            "text": f"The on-call engineer is now {words}",
                            "state_key": "oncall",
                            "state_value": f"w{n}-{i}",
                        }
                        client.post(f"{base}/memories/", json=state)
                    else:
                        text = f"Writer {n} fact {i}: {words}"
                        answer = client.post(f"{base}/memories/", json={"text": text})
                        if answer.status_code == 201:
                            with self.lock:
                                self.acknowledged.append((text, answer.json()["id"]))
                except httpx.HTTPError:
                    return  # the server is gone


def kill_everything(served: Any, data_dir: Path) -> None:
    """Everything at once, mid-traffic: memflow serve, uvicorn, and Postgres."""
    pg = postmaster_pid(data_dir)
    backends = [child.pid for child in psutil.Process(pg).children()]
    os.killpg(served.process.pid, signal.SIGKILL)
    os.kill(pg, signal.SIGKILL)
    served.process.wait()
    # The postmaster is not our child: wait until it and its orphaned
    # backends are gone, or the restart finds them still dying (a live
    # pid in postmaster.pid, shared memory still attached).
    wait_for(
        "the killed Postgres to exit",
        lambda: all(_gone(pid) for pid in [pg, *backends]),
        seconds=60,
    )


def test_the_server_and_its_database_killed_under_writes_lose_nothing_answered(tmp_path):
    data_dir = tmp_path / "data"
    env = env_for(data_dir)
    with serving(env, "--no-worker", "--web-workers", "2", timeout=180) as served:
        key = first_run_key(data_dir)
        headers = {"Authorization": f"Bearer {key}"}
        wait_for(
            "the embedding model",
            lambda: httpx.get(f"{served.url}/api/v1/health").json()["embeddings"] == "ready",
            seconds=120,
            step=0.5,
        )
        writers = Writers(f"{served.url}/api/v1/workspaces/default", headers)
        writers.start()
        wait_for("forty answered writes", lambda: len(writers.acknowledged) >= 40, seconds=180)
        kill_everything(served, data_dir)
        writers.join()
    acknowledged, bulks = writers.acknowledged, writers.bulks
    print(f"killed after {len(acknowledged)} answered writes and {len(bulks)} bulk writes")

    # A restart recovers the database (its WAL) and serves what was committed.
    with serving(env, "--no-worker", timeout=180) as again:
        assert_every_answered_write_kept(data_dir, acknowledged, bulks)
        # Recall (the HNSW index, the lexical index) answers from what survived.
        text, _ = acknowledged[0]
        recall = httpx.post(
            f"{again.url}/api/v1/workspaces/default/recall/",
            json={"query": text},
            headers=headers,
            timeout=60,
        )
        assert recall.status_code == 200, recall.text
        assert text in recall.text
    recovered = (data_dir / "pg" / "log").read_text()
    assert "database system was interrupted" in recovered or "not properly shut down" in recovered


def assert_every_answered_write_kept(
    data_dir: Path, acknowledged: list[tuple[str, int]], bulks: list[str]
) -> None:
    """Every answered write is in the database with its vector; a bulk write is all
    there or not at all; one current state row survives for the state key."""
    socket_dir = (data_dir / "pg" / "postmaster.pid").read_text().splitlines()[4]
    with psycopg.connect(dbname="memflow", user="postgres", host=socket_dir) as conn:
        rows = {
            pk: (text, has_vector)
            for pk, text, has_vector in conn.execute(
                "SELECT id, text, embedding IS NOT NULL FROM memories_memory"
            ).fetchall()
        }
        current_states = conn.execute(
            "SELECT count(*) FROM memories_memory WHERE state_key = 'oncall' AND valid_to IS NULL"
        ).fetchone()
    for text, pk in acknowledged:
        assert rows.get(pk) == (text, True), (pk, text)
    assert all(has_vector for _, has_vector in rows.values())
    # A bulk write is all there or not at all (and the answered ones are there).
    by_tag: dict[str, int] = {}
    for text, _ in rows.values():
        if text.startswith("bulk-"):
            tag = text.split(" item ")[0]
            by_tag[tag] = by_tag.get(tag, 0) + 1
    assert all(n == 8 for n in by_tag.values()), by_tag
    assert set(bulks) <= set(by_tag)
    assert current_states == (1,)
