"""`memflow backup` and `memflow restore`, run for real: a workspace with
memories (embeddings included), core memory and hook sessions is dumped, then
restored into a fresh database and into a fresh embedded data directory, and
everything comes back byte for byte."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import psycopg
import pytest
from django.db import connection

from tests.memflow_site.helpers import env_for, memflow
from tests.reliability.conftest import database_url_for_tests

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

# The same questions asked of the original and of the restored database.
FINGERPRINT = {
    "memories": "SELECT id, text, embedding::text, state_key, valid_to IS NULL "
    "FROM memories_memory ORDER BY id",
    "core": "SELECT scope, content, version FROM memories_corememory ORDER BY id",
    "revisions": "SELECT core_id, version FROM memories_corerevision ORDER BY id",
    "sessions": "SELECT external_id, app, cwd, core_snapshot::text FROM contexts_agentsession ORDER BY id",
    "events": "SELECT session_id, kind, payload::text FROM contexts_sessionevent ORDER BY id",
    "keys": "SELECT prefix, key_hash FROM contexts_apikey ORDER BY id",
}


def fingerprint(cursor: Any) -> dict[str, list[tuple[Any, ...]]]:
    found = {}
    for name, query in FINGERPRINT.items():
        cursor.execute(query)
        found[name] = [tuple(row) for row in cursor.fetchall()]
    return found


@pytest.fixture
def workspace_with_history(acme, bob, make_key, api) -> dict[str, Any]:
    """Written through the API, as an agent would: memories, a state, core memory, a session."""
    client = api(make_key(bob))
    base = "/api/v1/workspaces/acme"
    for text in (
        "The staging database is rebuilt every Sunday night from the production snapshot",
        "Use ruff format, not black: the CI lint job runs ruff format --check",
        "日本語のメモ: deploys freeze on the last Friday of the quarter",
    ):
        assert client.post(f"{base}/memories/", {"text": text}, format="json").status_code == 201
    state = {"text": "The release captain is Dana", "state_key": "release.captain"}
    assert client.post(f"{base}/memories/", state, format="json").status_code == 201
    core = {"action": "add", "content": "Alice prefers short commit subjects"}
    assert client.post(f"{base}/core/memory/", core, format="json").status_code == 200
    hook = {"session_id": "backup-s1", "workspace": "acme", "cwd": "/srv/app"}
    assert client.post("/api/v1/hooks/session-start", hook, format="json").status_code == 200
    prompt = dict(hook, prompt="Why did the nightly staging rebuild fail last Sunday?")
    assert client.post("/api/v1/hooks/user-prompt", prompt, format="json").status_code == 200
    with connection.cursor() as cursor:
        original = fingerprint(cursor)
    assert len(original["memories"]) >= 4 and original["sessions"] and original["events"]
    assert all(row[2] and row[2].startswith("[") for row in original["memories"])
    return original


@pytest.fixture
def fresh_database() -> Iterator[str]:
    """A new, empty database on the test server, and its DATABASE_URL."""
    name = f"memflow_restore_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(database_url_for_tests())
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def connect(url: str) -> psycopg.Connection[Any]:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    return psycopg.connect(
        dbname=parts.path.lstrip("/"), user=parts.username or "postgres", host=query["host"]
    )


def test_a_backup_restored_into_a_fresh_database_brings_everything_back(
    workspace_with_history, fresh_database, tmp_path
):
    source = env_for(tmp_path / "source", database_url=database_url_for_tests())
    file = tmp_path / "memflow.dump"
    started = time.monotonic()
    made = memflow("backup", str(file), env=source)
    backed_up = time.monotonic() - started
    assert file.is_file() and not Path(f"{file}.partial").exists()
    assert file.stat().st_mode & 0o777 == 0o600  # every memory and key hash: owner only
    assert "memories_memory" in made.stderr  # progress, table by table
    assert "Backup complete" in made.stderr

    target = env_for(tmp_path / "target", database_url=fresh_database)
    started = time.monotonic()
    restored = memflow("restore", str(file), env=target)
    print(f"backup {backed_up:.1f}s, restore {time.monotonic() - started:.1f}s (with migrate)")
    assert "Restore complete" in restored.stderr

    with connect(fresh_database) as conn, conn.cursor() as cursor:
        assert fingerprint(cursor) == workspace_with_history

    # The restored database is a working memflow: it recalls through the API.
    again = memflow("restore", str(file), env=target, check=False)
    assert again.returncode == 1 and "already holds" in again.stderr
    replaced = memflow("restore", str(file), "--replace", env=target)
    assert "replacing what is there" in replaced.stderr
    with connect(fresh_database) as conn, conn.cursor() as cursor:
        assert fingerprint(cursor) == workspace_with_history

    # Something still using the database (a server mid-transaction): refused, not hung.
    with connect(fresh_database) as holder:
        holder.execute("SELECT count(*) FROM memories_memory").fetchone()  # holds a lock
        busy = memflow("restore", str(file), "--replace", env=target, check=False)
    assert (
        busy.returncode == 1 and "is in use" in busy.stderr and "Nothing was changed" in busy.stderr
    )
    with connect(fresh_database) as conn, conn.cursor() as cursor:
        assert fingerprint(cursor) == workspace_with_history


def test_a_backup_restores_into_a_fresh_embedded_data_directory(workspace_with_history, tmp_path):
    import pgserver

    file = tmp_path / "memflow.dump"
    memflow("backup", str(file), env=env_for(tmp_path / "a", database_url=database_url_for_tests()))
    data_dir = tmp_path / "fresh"
    restored = memflow("restore", str(file), env=env_for(data_dir))
    assert "the embedded Postgres in" in restored.stderr

    server = pgserver.get_server(data_dir / "pg", cleanup_mode="stop")
    try:
        socket_dir = str(server.get_postmaster_info().socket_dir)
        with (
            psycopg.connect(dbname="memflow", user="postgres", host=socket_dir) as conn,
            conn.cursor() as cursor,
        ):
            assert fingerprint(cursor) == workspace_with_history
    finally:
        server.cleanup()


def test_restore_refuses_what_is_not_a_backup_and_changes_nothing(
    workspace_with_history, fresh_database, tmp_path
):
    target = env_for(tmp_path / "target", database_url=fresh_database)
    missing = memflow("restore", str(tmp_path / "nope.dump"), env=target, check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr

    junk = tmp_path / "junk.dump"
    junk.write_bytes(b"PGDMP this is not really an archive" * 10)
    refused = memflow("restore", str(junk), env=target, check=False)
    assert refused.returncode == 1
    assert "is not a memflow backup" in refused.stderr
    assert "Traceback" not in refused.stderr

    # A backup cut short (a full disk, a kill) is refused and nothing is half-restored.
    file = tmp_path / "memflow.dump"
    memflow("backup", str(file), env=env_for(tmp_path / "s", database_url=database_url_for_tests()))
    cut = tmp_path / "cut.dump"
    cut.write_bytes(file.read_bytes()[: file.stat().st_size * 2 // 3])
    failed = memflow("restore", str(cut), env=target, check=False)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    with connect(fresh_database) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert cursor.fetchone() == (0,)


def test_backup_says_clearly_when_the_database_is_unreachable(tmp_path):
    url = "postgresql://postgres@127.0.0.1:1/memflow?connect_timeout=2"
    failed = memflow(
        "backup", str(tmp_path / "x.dump"), env=env_for(tmp_path, database_url=url), check=False
    )
    assert failed.returncode == 1
    assert "Cannot connect to database 'memflow' on 127.0.0.1:1" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert not (tmp_path / "x.dump").exists()
