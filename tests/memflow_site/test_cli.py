"""The `memflow` command and `memflow serve`, run for real in their own data
directories: the embedded Postgres path and the DATABASE_URL path."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import httpx
import pytest

from tests.memflow_site.helpers import env_for, memflow, serving

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _postgres_running(data_dir: Path) -> bool:
    return (data_dir / "pg" / "postmaster.pid").exists()


def _wait_until_stopped(data_dir: Path, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _postgres_running(data_dir):
            return True
        time.sleep(0.2)
    return False


def test_first_run_creates_an_admin_and_a_working_key_then_stops_cleanly(tmp_path):
    env = env_for(tmp_path / "data")
    with serving(env, "--no-worker") as served:
        health = httpx.get(f"{served.url}/api/v1/health").json()
        assert health["database"] == "ok"
        credentials = tmp_path / "data" / "first-run-credentials.txt"
        assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
        raw_key = next(
            line.split(": ", 1)[1]
            for line in credentials.read_text().splitlines()
            if line.startswith("api key:")
        )
        assert raw_key in served.log()  # printed once to the terminal too
        workspaces = httpx.get(
            f"{served.url}/api/v1/workspaces/", headers={"Authorization": f"Bearer {raw_key}"}
        ).json()["results"]
        assert [w["slug"] for w in workspaces] == ["default"]
        login_page = httpx.get(f"{served.url}/login/")
        assert login_page.status_code == 200
        assert httpx.get(f"{served.url}/static/vendor/htmx-2.0.11.min.js").status_code == 200
    assert served.process.returncode == 0, served.log()
    assert "memflow stopped." in served.log()
    assert _wait_until_stopped(tmp_path / "data"), "the embedded Postgres should stop with memflow"

    # A second run reuses the data and prints no new credentials.
    with serving(env, "--no-worker") as again:
        status = httpx.get(
            f"{again.url}/api/v1/workspaces/", headers={"Authorization": f"Bearer {raw_key}"}
        ).status_code
        assert status == 200
    assert "first run" not in again.log()


def test_createuser_createkey_and_doctor(tmp_path):
    env = env_for(tmp_path / "data")
    memflow("migrate", env=env)
    memflow("createuser", "carol", "--password", "s3cret-pass", "--email", "c@example.com", env=env)
    duplicate = memflow("createuser", "carol", "--password", "x", env=env, check=False)
    assert duplicate.returncode == 1
    assert "already exists" in duplicate.stderr

    created = memflow("createkey", "--user", "carol", "--scope", "read", "--name", "cli", env=env)
    raw_key = created.stdout.strip()
    assert raw_key.startswith("mf_") and "\n" not in raw_key  # KEY=$(memflow createkey …) works
    unknown = memflow("createkey", "--user", "nobody", env=env, check=False)
    assert unknown.returncode == 1 and "no user 'nobody'" in unknown.stderr

    doctor = memflow("doctor", env=env)
    assert "pgvector           0.8" in doctor.stdout
    assert "pg_trgm" in doctor.stdout
    assert "dimension 384" in doctor.stdout
    assert "embedded" in doctor.stdout
    strict = memflow("doctor", "--require-worker", env=env, check=False)
    assert strict.returncode == 1
    assert "No background worker is running" in strict.stderr

    with serving(env) as served:
        response = httpx.get(
            f"{served.url}/api/v1/workspaces/", headers={"Authorization": f"Bearer {raw_key}"}
        )
        assert response.status_code == 200 and response.json()["results"] == []
        deadline = time.monotonic() + 30
        while True:  # the worker announces itself through the shared cache
            doctor = memflow("doctor", "--require-worker", env=env, check=False)
            if doctor.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert "worker             alive" in doctor.stdout, doctor.stderr


def test_doctor_names_an_unreachable_database(tmp_path):
    env = env_for(
        tmp_path / "data", database_url="postgresql://postgres@/memflow?host=/nonexistent"
    )
    result = memflow("doctor", env=env, check=False)
    assert result.returncode == 1
    assert "cannot be reached" in result.stderr
    assert not (tmp_path / "data" / "pg").exists()


def test_with_database_url_no_embedded_server_is_started(tmp_path):
    import pgserver
    import psycopg

    external = pgserver.get_server(tmp_path / "external-pg", cleanup_mode="delete")
    try:
        with psycopg.connect(external.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE memflow_external")
        url = external.get_uri("memflow_external")
        data_dir = tmp_path / "data"
        env = env_for(data_dir, database_url=url)
        memflow("migrate", env=env)
        doctor = memflow("doctor", env=env)
        assert "(DATABASE_URL)" in doctor.stdout
        with serving(env, "--no-worker") as served:
            assert httpx.get(f"{served.url}/api/v1/health").json()["database"] == "ok"
            assert "no embedded server started" in served.log()
        assert not (data_dir / "pg").exists()
        with psycopg.connect(url) as conn:
            users = conn.execute("SELECT username FROM auth_user").fetchall()
        assert users == [("admin",)]  # the first run landed in the external database
    finally:
        external.cleanup()


def test_core_memory_files_import_and_export_unchanged(tmp_path):
    env = env_for(tmp_path / "data")
    with serving(env, "--no-worker"):  # the first run makes the "default" workspace
        pass
    memflow("createuser", "dana", "--password", "pw-123456", env=env)
    text = "Runs Debian 12 on all build hosts §\nCI cache lives in /var/cache/ci §\n"
    source = tmp_path / "MEMORY.md"
    source.write_text(text)
    memflow("import", "core", str(source), "--workspace", "default", env=env)
    exported = memflow("export", "core", "--workspace", "default", env=env)
    assert exported.stdout == text
    user_file = tmp_path / "USER.md"
    user_file.write_text("Prefers short answers §\n")
    memflow(
        "import",
        "core",
        str(user_file),
        "--workspace",
        "default",
        "--target",
        "user",
        "--user",
        "dana",
        env=env,
    )
    out = tmp_path / "out.md"
    memflow(
        "export",
        "core",
        "--workspace",
        "default",
        "--target",
        "user",
        "--user",
        "dana",
        "--out",
        str(out),
        env=env,
    )
    assert out.read_text() == "Prefers short answers §\n"
    missing = memflow(
        "import",
        "core",
        str(user_file),
        "--workspace",
        "default",
        "--target",
        "user",
        env=env,
        check=False,
    )
    assert missing.returncode == 1 and "--user" in missing.stderr
