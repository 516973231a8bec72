"""A project's declared identity over a Claude Code session, and a declaration that is broken.

AGENT.md edited between two prompts of one session reaches the model once,
in the next request; a prompt after it, with nothing changed, does not
repeat it. A `.dsh/context.yaml` that does not parse is said to the person
(Claude Code's `systemMessage`), line-numbered, once per session, kept in
memflow's session log, and never shown to the model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contexts.models import AgentSession, SessionEvent
from tests.harness.conftest import Account, Harness, HarnessMaker, Run, memflow_env
from tests.harness.fake_model import Text
from tests.memflow_site.helpers import Served

pytestmark = pytest.mark.django_db(transaction=True)

FIRST = "You are the billing team's release engineer."
EDITED = "You are the billing team's release engineer. Never deploy on a Friday."


def declare(h: Harness, declaration: str) -> Path:
    (h.project / ".dsh").mkdir(exist_ok=True)
    path = h.project / ".dsh" / "context.yaml"
    path.write_text(declaration)
    (h.project / "AGENT.md").write_text(FIRST + "\n")
    return path


def succeeded(*runs: Run) -> None:
    for run in runs:
        assert run.result["subtype"] == "success", run.stderr


def test_an_edited_agent_md_reaches_the_next_prompt_once(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    declare(h, "systemPrompt: [AGENT.md]\n")
    h.install_hooks()
    installed = json.loads((h.project / ".claude" / "settings.local.json").read_text())
    prompt_hook = installed["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert prompt_hook["type"] == "command"  # it reads the declared files before each prompt

    first = h.run("when do we deploy billing?", [Text("Tuesdays.")])
    (h.project / "AGENT.md").write_text(EDITED + "\n")
    second = h.run("and this week?", [Text("Thursday.")], resume=("--continue",))
    third = h.run("and the week after?", [Text("Tuesday.")], resume=("--continue",))

    succeeded(first, second, third)
    requests = h.model.main_requests()
    assert FIRST in requests[0].text() and "Never deploy on a Friday." not in requests[0].text()
    # The second prompt's request carries the new text, once, as the version
    # that replaces the first; the third, with nothing changed, adds no copy.
    assert requests[1].text().count("Never deploy on a Friday.") == 1
    assert "replaces the version you were given earlier" in requests[1].text()
    assert requests[-1].text().count("Never deploy on a Friday.") == 1
    session = AgentSession.objects.get(external_id=first.result["session_id"])
    given = [
        b["name"]
        for e in SessionEvent.objects.filter(session=session, kind="injection")
        for b in e.payload["blocks"]
    ]
    assert given.count("context:identity:0") == 2  # the first text, then the edit


def test_an_edit_between_two_prompts_of_one_running_session_reaches_the_next_one_once(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    """One Claude Code process: no session start between the prompts, only their hooks."""
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    declare(h, "systemPrompt: [AGENT.md]\n")
    h.install_hooks()

    def edit() -> None:
        (h.project / "AGENT.md").write_text(EDITED + "\n")

    run = h.converse(
        [
            ("when do we deploy billing?", lambda: None),
            ("and this week?", edit),
            ("and the week after?", lambda: None),
        ],
        [Text("Tuesdays."), Text("Thursday."), Text("Tuesday.")],
    )

    assert [r["subtype"] for r in run.of("result")] == ["success"] * 3, run.stderr
    assert len(run.of("system", "hook_response")) >= 4
    starts = [e for e in run.hooks() if e.get("hook_event") == "SessionStart"]
    assert len(starts) == 1  # one session start: the edit came through the prompt's hook
    requests = h.model.main_requests()
    assert len(requests) == 3
    assert "Never deploy on a Friday." not in requests[0].text()
    assert requests[1].text().count("Never deploy on a Friday.") == 1
    assert requests[2].text().count("Never deploy on a Friday.") == 1
    session = AgentSession.objects.get(external_id=run.of("result")[0]["session_id"])
    updates = [
        e.payload["event"]
        for e in SessionEvent.objects.filter(session=session, kind="injection").order_by("pk")
        if "context:identity:0" in [b["name"] for b in e.payload["blocks"]]
    ]
    assert updates == ["session-start", "user-prompt"]


def shown_to_the_person(h: Harness) -> list[str]:
    """The messages Claude Code showed the person from hooks, as its transcripts keep them
    (`hook_system_message` attachments: shown, not sent to the model)."""
    shown = []
    for transcript in sorted((h.home / ".claude" / "projects").rglob("*.jsonl")):
        for line in transcript.read_text().splitlines():
            entry = json.loads(line)
            attachment = entry.get("attachment") if isinstance(entry, dict) else None
            if isinstance(attachment, dict) and attachment.get("type") == "hook_system_message":
                shown.append(str(attachment.get("content")))
    return shown


def test_a_declaration_that_does_not_parse_is_said_to_the_person_once(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    path = declare(h, "systemPrompt: [AGENT.md\n")
    h.install_hooks()

    first = h.run("when do we deploy billing?", [Text("Tuesdays.")])
    second = h.run("and this week?", [Text("Thursday.")], resume=("--continue",))

    succeeded(first, second)
    error = f"{path}:1: a flow list"
    # Claude Code accepted the hook's output and showed its message, once in
    # the session: the resumed run's session start did not say it again.
    assert [m for m in shown_to_the_person(h) if error in m] == [
        f"memflow: {error} ([...]) must close on the line it opens; ignored, as if there were "
        "no declaration. `memflow context` shows what this directory declares."
    ]
    for request in h.model.main_requests():
        assert error not in request.text()  # for the person, not the model
    session = AgentSession.objects.get(external_id=first.result["session_id"])
    logged = SessionEvent.objects.filter(session=session, kind="context.error")
    assert [e.payload["error"][: len(error)] for e in logged] == [error]
