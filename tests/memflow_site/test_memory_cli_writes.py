"""`memflow remember` (private, ttl) and `memflow forget --filter` against a running server."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from contexts import services as contexts_services
from contexts.models import AuditEvent
from memories.models import Memory
from tests.memflow_site.helpers import MEMFLOW, Served, env_for, serving, wait_for_embeddings
from tests.reliability.conftest import database_url_for_tests

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def live(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with django_db_blocker.unblock():
        url = database_url_for_tests()
        User.objects.get_or_create(username="cli-placeholder")  # flushed by the first test
    env = env_for(tmp_path_factory.mktemp("memory-cli") / "data", database_url=url)
    with serving(env, "--no-worker") as server:
        wait_for_embeddings(server)
        yield server


def memflow(tmp_path: Path, live: Served, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        **env_for(tmp_path / "data"),
        "HOME": str(home),
        "MEMFLOW_URL": live.url,
        "MEMFLOW_API_KEY": key,
        "MEMFLOW_WORKSPACE": "erin",
    }
    env.pop("XDG_CONFIG_HOME", None)
    return subprocess.run([MEMFLOW, *args], env=env, capture_output=True, text=True, timeout=120)


def test_remember_private_with_a_ttl_then_forget_by_filter(live, tmp_path):
    user = User.objects.create_user("erin", password="x")
    workspace = contexts_services.workspace_create(user=user, slug="erin", name="Erin")
    key = contexts_services.apikey_create(user=user, workspace=workspace, scope="write").raw

    done = memflow(
        tmp_path, live, key, "remember", "The demo box is up until Friday.", "--private",
        "--ttl", "7d", "--compartment", "demo",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    memory = Memory.objects.get(workspace=workspace)
    assert done.stdout.startswith(f"#{memory.pk} (created, private, expires ")
    assert memory.private and memory.expires_at is not None and memory.user == user

    bad = memflow(tmp_path, live, key, "remember", "Another fact.", "--ttl", "someday")
    assert bad.returncode == 1 and "ttl" in bad.stderr

    empty = memflow(tmp_path, live, key, "forget")
    assert empty.returncode == 1 and "--filter" in empty.stderr

    dry = memflow(tmp_path, live, key, "forget", "--filter", "compartment=demo", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("Would forget 1 memories.") and f"#{memory.pk}" in dry.stdout
    memory.refresh_from_db()
    assert memory.forgotten_at is None

    real = memflow(
        tmp_path, live, key, "forget", "--filter", "compartment=demo", "--reason", "demo over"
    )
    assert real.returncode == 0, real.stderr
    assert real.stdout.startswith("Forgot 1 memories")
    memory.refresh_from_db()
    assert memory.forgotten_at is not None and memory.forgotten_reason == "demo over"
    row = AuditEvent.objects.get(action="memory.forget", target=f"memory:{memory.pk}")
    assert row.origin == "rest" and row.detail["filter"] == {"compartment": "demo"}
