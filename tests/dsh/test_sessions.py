"""A dsh session's life as memflow records it."""

from __future__ import annotations

import time

from contexts.models import AgentSession, SessionEvent
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
