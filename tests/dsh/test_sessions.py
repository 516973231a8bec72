"""A dsh session's life as memflow records it."""

from __future__ import annotations

import time

from django.contrib.auth.models import User

from contexts.models import AgentSession, SessionEvent
from memories.models import Memory
from tests.dsh.conftest import Account, DshMaker, memflow_env
from tests.dsh.fake_deepseek import Text
from tests.memflow_site.helpers import Served

# Only turns a hang into a failure.
GUARD_SECONDS = 30


def test_a_session_ends_with_its_device(live: Served, account: Account, dsh: DshMaker) -> None:
    h = dsh(memflow_env(live.url, account.key, account.workspace.slug))
    (h.project / ".device").write_text("heron-laptop\n")
    (h.project / ".dsh").mkdir()
    (h.project / ".dsh" / "context.yaml").write_text(
        "systemPrompt:\n  - AGENT.md\n  - 'devices/${device}.md'\n"
    )
    (h.project / "AGENT.md").write_text("You are the release captain of project Heron.\n")
    (h.project / "devices").mkdir()
    (h.project / "devices" / "heron-laptop.md").write_text("This laptop builds arm64 only.\n")
    h.install_bundle()

    run = h.run("Build the release", [Text("Built.")])

    assert run.returncode == 0, run.stderr
    assert "This laptop builds arm64 only." in h.model.main_requests()[0].system
    deadline = time.monotonic() + GUARD_SECONDS
    while True:
        session = AgentSession.objects.get(workspace=account.workspace, app="dsh")
        if session.ended_at is not None or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert session.ended_at is not None, "the session was never ended"
    assert SessionEvent.objects.filter(session=session, kind="session-end").exists()
    assert session.device == "heron-laptop"


def test_the_restore_trail_is_the_projects_own_first(
    live: Served, account: Account, dsh: DshMaker
) -> None:
    h = dsh(memflow_env(live.url, account.key, account.workspace.slug))
    user = User.objects.get(username="dsh-user")
    # Kept with their projects, as the pipeline keeps what a session remembers.
    here = AgentSession.objects.create(
        workspace=account.workspace,
        user=user,
        external_id="earlier-here",
        cwd=str(h.project),
        project=str(h.project),
    )
    Memory.objects.create(
        workspace=account.workspace,
        user=user,
        session=here,
        project=str(h.project),
        text="Heron's docs build with mkdocs 1.6, not sphinx.",
    )
    # A busier project elsewhere: more recent activity than a trail holds.
    there = AgentSession.objects.create(
        workspace=account.workspace,
        user=user,
        external_id="busy-elsewhere",
        cwd="/src/osprey",
        project="/src/osprey",
    )
    for n in range(30):
        Memory.objects.create(
            workspace=account.workspace,
            user=user,
            session=there,
            project="/src/osprey",
            text=f"Osprey step {n} done.",
        )
    h.install_bundle()

    run = h.run("Build the docs", [Text("Built.")])

    assert run.returncode == 0, run.stderr
    first = h.model.main_requests()[0]
    assert any("mkdocs 1.6, not sphinx" in u for u in first.user_texts()), first.user_texts()
