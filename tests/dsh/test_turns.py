"""What the model is sent at each step of a real dsh session with memflow's bundle."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memories.models import Memory
from tests.dsh.conftest import Account, Dsh, DshMaker, memflow_env
from tests.dsh.fake_deepseek import Text, ToolCall
from tests.memflow_site.helpers import Served

PROMPT = "Which host and port does the Heron staging database use?"


def declared(h: Dsh) -> None:
    """A project that declares an identity file and a preload (the MEMFLOW design)."""
    (h.project / ".dsh").mkdir()
    (h.project / ".dsh" / "context.yaml").write_text(
        "systemPrompt:\n  - AGENT.md\npreload:\n  - memory/status.md\n"
    )
    (h.project / "AGENT.md").write_text("You are the release captain of project Heron.\n")
    (h.project / "memory").mkdir()
    (h.project / "memory" / "status.md").write_text("Status: the 2.0 branch is frozen.\n")


def remembered_last_month(account: Account, text: str) -> None:
    """A memory older than the restore pack's window: only recall can bring it."""
    account.api.post("memories/", json={"text": text}).raise_for_status()
    Memory.objects.filter(workspace=account.workspace, text=text).update(
        created_at=timezone.now() - timedelta(days=30)
    )


def installed(live: Served, account: Account, dsh: DshMaker) -> Dsh:
    h = dsh(memflow_env(live.url, account.key, account.workspace.slug))
    declared(h)
    h.install_bundle()
    return h


def test_the_first_request_carries_identity_protocol_core_and_recall(
    live: Served, account: Account, dsh: DshMaker
) -> None:
    account.api.post(
        "core/user/", json={"action": "add", "content": "Prefers squash merges"}
    ).raise_for_status()
    remembered_last_month(
        account, "The Heron staging database runs on db-staging-7.internal, port 6543."
    )
    h = installed(live, account, dsh)

    # The model answers at once, without a tool call: one request is all there is.
    run = h.run(PROMPT, [Text("db-staging-7.internal:6543")])

    assert run.returncode == 0, run.stderr
    first = h.model.main_requests()[0]
    assert "You are the release captain of project Heron." in first.system
    assert "<memflow-protocol>" in first.system
    assert "Prefers squash merges" in first.system
    users = first.user_texts()
    # The preload is the session's first message, once; the prompt follows.
    assert "=== memory/status.md ===\nStatus: the 2.0 branch is frozen." in users[0], users
    assert sum("the 2.0 branch is frozen" in u for u in users) == 1, users
    assert PROMPT in users
    # The recall for the typed prompt is in the request the prompt produced.
    assert any("db-staging-7.internal, port 6543" in u for u in users), users


def test_an_edited_agent_md_reaches_the_next_step(
    live: Served, account: Account, dsh: DshMaker
) -> None:
    h = installed(live, account, dsh)
    edit = "printf 'You are the documentation editor of project Heron.\\n' > AGENT.md"

    run = h.run(
        "Switch roles, then go on",
        [ToolCall("bash", {"command": edit, "description": "edit AGENT.md"}), Text("Done.")],
    )

    assert run.returncode == 0, run.stderr
    before, after = h.model.main_requests()[:2]
    assert "release captain" in before.system
    assert "You are the documentation editor of project Heron." in after.system
    assert "release captain" not in after.system


def test_each_turns_recall_is_in_its_own_first_request(
    live: Served, account: Account, dsh: DshMaker
) -> None:
    """A tool-calling turn: the recall is not held back to the step after the call."""
    remembered_last_month(account, "Heron's release branch is cut from main every second Tuesday.")
    h = installed(live, account, dsh)

    run = h.run(
        "When is Heron's release branch cut?",
        [ToolCall("bash", {"command": "git status", "description": "look"}), Text("Tuesdays.")],
    )

    assert run.returncode == 0, run.stderr
    first = h.model.main_requests()[0]
    assert any("every second Tuesday" in u for u in first.user_texts()), first.user_texts()
