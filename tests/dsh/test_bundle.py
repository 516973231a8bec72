"""The dsh bundle (integrations/dsh) against a real `memflow serve`.

Its Node tests (`node --test integrations/dsh/test/`) drive the bundle in a
fake harness shaped like dsh's plugin API and call the server this test
starts, with a user, a workspace and a key made here; they assert what the
model would see. This test asserts they all ran and passed, and what memflow
recorded of the sessions they drove.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from contexts.models import AgentSession, SessionEvent
from contexts.tenancy import services
from tests.dsh.conftest import BUNDLE
from tests.memflow_site.helpers import MEMFLOW, Served

# Only turns a hang into a failure; the run takes seconds.
RUN_GUARD_SECONDS = 300


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("Node.js (20.3 or newer) is not on PATH: the dsh bundle's tests need it")
    return found


def test_bundle_node_suite(live: Served, transactional_db: None, tmp_path: Path) -> None:
    user = User.objects.create_user("dsh-user", password="x")
    workspace = services.workspace_create(user=user, slug="dsh", name="dsh")
    key = services.apikey_create(user=user, scope="write", workspace=workspace).raw
    report = tmp_path / "sessions.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMFLOW_", "DSH_"))}
    env.update(
        MEMFLOW_URL=live.url,
        MEMFLOW_API_KEY=key,
        MEMFLOW_WORKSPACE=workspace.slug,
        MEMFLOW_COMMAND=MEMFLOW,
        # Roomy: on a busy machine a slow answer must not get the server skipped.
        MEMFLOW_HOOK_TIMEOUT="30",
        MEMFLOW_DSH_REPORT=str(report),
        HOME=str(tmp_path),
    )
    done = subprocess.run(
        [node(), "--test", "--test-reporter=tap", str(BUNDLE / "test")],
        cwd=BUNDLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_GUARD_SECONDS,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out + "\n--- server log ---\n" + live.log()[-4000:]
    counts = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail|skipped) (\d+)$", out, re.M)}
    assert counts["fail"] == 0 and counts["skipped"] == 0, out
    assert counts["pass"] == counts["tests"] >= 8, out

    # What the bundle's turn end and compaction reported, in the session log.
    reported = [line.split() for line in report.read_text().splitlines()]
    assert reported, out
    for kind, session_id in reported:
        session = AgentSession.objects.get(workspace=workspace, external_id=session_id)
        assert session.app == "dsh"
        assert SessionEvent.objects.filter(session=session, kind=kind).exists(), (kind, out)
    # The other sessions the suite drove are dsh's too, each with its start.
    sessions = AgentSession.objects.filter(workspace=workspace)
    assert sessions.count() >= 5
    assert not sessions.exclude(app="dsh").exists()
    assert all(
        SessionEvent.objects.filter(session=s, kind="session-start").exists() for s in sessions
    )
