"""`memflow remember` (private, ttl) and `memflow forget --filter` against a running server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from contexts.models import AuditEvent
from memories.models import Memory
from tests.memflow_site.helpers import Served, client_env, make_account, memflow

pytestmark = pytest.mark.django_db(transaction=True)


def test_remember_private_with_a_ttl_then_forget_by_filter(memflow_server: Served, tmp_path: Path):
    erin = make_account("erin")
    user, workspace = erin.user, erin.workspace
    env = client_env(tmp_path, memflow_server.url, erin.key, MEMFLOW_WORKSPACE="erin")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return memflow(*args, env=env, check=False)

    done = run(
        "remember", "The demo box is up until Friday.", "--private",
        "--ttl", "7d", "--compartment", "demo",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    memory = Memory.objects.get(workspace=workspace)
    assert done.stdout.startswith(f"#{memory.pk} (created, private, expires ")
    assert memory.private and memory.expires_at is not None and memory.user == user

    bad = run("remember", "Another fact.", "--ttl", "someday")
    assert bad.returncode == 1 and "ttl" in bad.stderr

    empty = run("forget")
    assert empty.returncode == 1 and "--filter" in empty.stderr

    dry = run("forget", "--filter", "compartment=demo", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("Would forget 1 memories.") and f"#{memory.pk}" in dry.stdout
    memory.refresh_from_db()
    assert memory.forgotten_at is None

    real = run("forget", "--filter", "compartment=demo", "--reason", "demo over")
    assert real.returncode == 0, real.stderr
    assert real.stdout.startswith("Forgot 1 memories")
    memory.refresh_from_db()
    assert memory.forgotten_at is not None and memory.forgotten_reason == "demo over"
    row = AuditEvent.objects.get(action="memory.forget", target=f"memory:{memory.pk}")
    assert row.origin == "rest" and row.detail["filter"] == {"compartment": "demo"}
