"""Memory as a new user meets it in the real Claude Code (issue #35, items 5-8).

Each scenario is a common situation in which memory used to go away or
mislead without a word: a sub-agent that got no memory and whose report was
stored as the user's prompt, a decision that changed, two projects in one
workspace, and a recall block filled with entries the question has nothing
to do with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memories import services
from memories.services import RememberInput
from tests.harness.conftest import Account, Harness, HarnessMaker, memflow_env
from tests.harness.fake_model import Reply, Text, ToolUse, strings
from tests.memflow_site.helpers import Served

pytestmark = pytest.mark.django_db(transaction=True)

# A command hook that exits 0, or an http hook answered 200.
SUCCESS = {("success", 0), ("success", 200)}


def first_user_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    return "\n".join(strings(messages[0])) if messages else ""


def assistant_turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")


# --- 7. sub-agents --------------------------------------------------------------------------

TASK = "Find out how releases of this repository get approved."
FACT = "Releases need two approvals from the #release channel before the tag is pushed."


def delegating(body: dict[str, Any]) -> Text | ToolUse:
    """The main thread delegates once; the sub-agent runs one command and reports."""
    if TASK in first_user_text(body):
        if assistant_turns(body) == 0:
            return ToolUse("Bash", {"command": "echo looking"})
        return Text("Releases need two approvals (#release).")
    if assistant_turns(body) == 0:
        return ToolUse(
            "Agent",
            {
                "description": "release approvals",
                "prompt": TASK,
                "subagent_type": "general-purpose",
            },
        )
    return Text("I asked a sub-agent; its report follows.")


def test_a_sub_agent_gets_memory_for_its_task_and_its_report_is_not_a_prompt(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    fact = account.api.post("/memories/", json={"text": FACT}).json()
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()

    prompt = "delegate: how do releases get approved here?"
    run = h.run(prompt, [Reply(delegating)] * 6, tools="Bash,Agent")

    assert run.result["subtype"] == "success", run.stderr
    for hook in run.hooks():
        assert (hook["outcome"], hook.get("exit_code")) in SUCCESS, hook
    # The sub-agent's first request: memflow's protocol and one recall for its task,
    # given as the sub-agent started (it sends no prompt of its own).
    sub = [r for r in h.model.main_requests() if TASK in first_user_text(r.body)]
    assert sub, "the sub-agent never called the model"
    said = "\n".join(strings(sub[0].body["messages"]))
    assert "SubagentStart hook additional context: <memflow-protocol>" in said
    assert FACT in said and f"#{fact['id']}" in said
    # Its tool call is logged as the sub-agent's, with its id and type.
    session_id = run.result["session_id"]
    log = account.api.get(f"/sessions/{session_id}/").json()
    tools = [e for e in log["events"] if e["kind"] == "post-tool-use" and e.get("tool") == "Bash"]
    assert tools and tools[0].get("agent", {}).get("type") == "general-purpose", [
        (e.get("agent"), e["payload"]) for e in tools
    ]
    assert tools[0]["agent"]["id"]
    # The background agent's report came back as a user turn: it is not kept as
    # something the user asked, and so is never recalled as one.
    kinds = [e["kind"] for e in log["events"]]
    assert "subagent-start" in kinds and "subagent-stop" in kinds, kinds
    reports = [
        e for e in log["events"] if e["kind"] == "user-prompt" and "<task-notification" in e["text"]
    ]
    assert reports, "Claude Code sent no task notification"
    memories = account.api.get("/memories/?status=all&limit=50").json()["results"]
    assert [m["text"] for m in memories if m["source"] == "hook"] == [prompt]


# --- 8. filler ------------------------------------------------------------------------------

BILLING = "The billing worker retries failed charges 3 times, then pages on-call."
EARLIER_QUESTIONS = [
    "how do I rotate the staging TLS certificate?",
    "can you rename the flaky test in test_auth.py?",
    "why is the docker build so slow on CI?",
    "add a --verbose flag to the export script",
    "what does the cron job in ops/ do at midnight?",
    "bump the linter to the latest version",
    "where are the feature flags defined?",
    "write a migration for the new invoices table",
    "fix the typo in the onboarding email",
]


def hook_context(said: str, event: str) -> str:
    """What memflow's hook added on `event`, from the model's request text."""
    marker = f"{event} hook additional context: "
    return said[said.index(marker) :] if marker in said else ""


def test_the_blocks_hold_what_the_question_is_about_not_filler(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    account.api.post("/memories/", json={"text": BILLING}).raise_for_status()
    # Later activity: notes about something else, then questions the user asked before.
    account.api.post(
        "/memories/bulk/",
        json={"items": [{"text": f"Unrelated note {n}: sprint {n} planning"} for n in range(24)]},
    ).raise_for_status()
    for question in EARLIER_QUESTIONS:
        services.memory_remember(
            workspace=account.workspace, item=RememberInput(text=question, source="hook")
        )
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()

    run = h.run("how does the billing worker handle failed charges?", [Text("Three retries.")])

    assert run.result["subtype"] == "success", run.stderr
    said = "\n".join(strings(h.model.main_requests()[0].body["messages"]))
    # The new session's trail: mostly what happened, at most a third earlier questions.
    restore = said[said.index("<memflow-restore") : said.index("</memflow-restore>")]
    trail = [line for line in restore.splitlines() if line.startswith("- #")]
    asked = [line for line in trail if any(q in line for q in EARLIER_QUESTIONS)]
    assert trail and 3 * len(asked) <= len(trail), trail
    # The prompt's recall: the answer, and none of the notes the question is not about,
    # neither in the block nor in the index of pointers.
    prompt_context = hook_context(said, "UserPromptSubmit")
    assert BILLING in prompt_context
    assert "Unrelated note" not in prompt_context, prompt_context


# --- 5. a decision that changes -------------------------------------------------------------

OLD_DECISION = "we use npm for this repo's packages"
NEW_DECISION = "we switched to pnpm for this repo's packages, npm is gone"
OLD_FACT = "This repo's packages are installed with npm."
NEW_FACT = "This repo's packages are installed with pnpm; npm is no longer used."


def line_of(text: str, needle: str) -> str:
    """The line of `text` that holds `needle` (an index line, a restore line), or ""."""
    return next((line for line in text.splitlines() if needle in line), "")


def test_a_changed_decision_is_shown_as_current_and_the_old_one_as_stale(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    account.api.post(
        "/memories/bulk/",
        json={"items": [{"text": f"Release note {n}: shipped sprint {n}"} for n in range(4)]},
    ).raise_for_status()
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()
    # The user says it, and the model remembers it; later the model supersedes its
    # own entry, and the user types the change.
    h.run(OLD_DECISION, [Text("Noted.")])
    old = account.api.post("/memories/", json={"text": OLD_FACT}).json()
    account.api.post(
        f"/memories/{old['id']}/supersede/", json={"text": NEW_FACT}
    ).raise_for_status()
    h.run(NEW_DECISION, [Text("Noted.")])
    memories = account.api.get("/memories/?limit=50").json()["results"]
    typed_old = next(m["id"] for m in memories if m["text"] == OLD_DECISION)
    typed_new = next(m["id"] for m in memories if m["text"] == NEW_DECISION)

    # A new session's restore pack: what the user typed before the change is marked stale.
    h.run("hello again", [Text("Hi.")])
    said = "\n".join(strings(h.model.main_requests()[-1].body["messages"]))
    restore = said[said.index("<memflow-restore") : said.index("</memflow-restore>")]
    assert "stale" in line_of(restore, OLD_DECISION), restore

    # Without the trail, the question: the change is given and marked current, the
    # superseded entry is not given, and the old decision (if given at all) comes
    # after the change, marked stale.
    account.workspace.settings = {**(account.workspace.settings or {}), "restore_minutes": 0}
    account.workspace.save(update_fields=["settings"])
    h.run("which package manager do we use for this repo's packages?", [Text("pnpm.")])
    said = "\n".join(strings(h.model.main_requests()[-1].body["messages"]))
    assert NEW_FACT in said and OLD_FACT not in said, said
    recalled = hook_context(said, "UserPromptSubmit")
    assert "current: replaces" in line_of(recalled, f"#{typed_new} "), recalled
    if OLD_DECISION in recalled:
        assert recalled.index(NEW_DECISION) < recalled.index(OLD_DECISION), recalled
        assert "stale: #" in line_of(recalled, f"#{typed_old} "), recalled


# --- 6. two projects in one workspace -------------------------------------------------------

TESTS_A = "The tests of this project run with `make check-api`."
TESTS_B = "The tests of this project run with `npm run test:web`."
EVERYWHERE = "Every project in this workspace deploys on Fridays only."


def test_each_project_is_answered_from_its_own_memories_first(
    harness: HarnessMaker, live: Served, account: Account, tmp_path: Path
) -> None:
    env = memflow_env(live.url, account.key, account.workspace.slug)
    a = harness(env)
    (tmp_path / "b").mkdir()
    b = Harness(claude=a.claude, root=tmp_path / "b", model=a.model, memflow_env=env)
    for h in (a, b):
        h.install_hooks()
    # In each project the model remembers how its tests run (with its session, as
    # memflow's tools do); one fact holds for the whole workspace.
    for h, fact in ((a, TESTS_A), (b, TESTS_B)):
        session = h.run("hello", [Text("Hi.")]).result["session_id"]
        account.api.post("/memories/", json={"text": fact, "session": session}).raise_for_status()
    account.api.post("/memories/", json={"text": EVERYWHERE}).raise_for_status()

    run = a.run("how do I run the tests?", [Text("make check-api")])

    assert run.result["subtype"] == "success", run.stderr
    said = "\n".join(strings(a.model.main_requests()[-1].body["messages"]))
    # Project A's session is given A's way first; B's (if at all) after it, marked as B's.
    assert TESTS_A in said, said
    if TESTS_B in said:
        assert said.index(TESTS_A) < said.index(TESTS_B), said
        assert (
            "project " in line_of(said, "npm run test:web")
            or "project " in said[said.rindex("[#", 0, said.index(TESTS_B)) : said.index(TESTS_B)]
        ), said
    # recall/ takes the project, and the workspace's own memories stay findable in it.
    asked = account.api.post(
        "/recall/", json={"query": "how do I run the tests?", "project": str(b.project)}
    ).json()
    texts = [r["text"] for r in asked["results"]]
    assert TESTS_B in texts and TESTS_A not in texts, texts
    asked = account.api.post(
        "/recall/", json={"query": "when do we deploy?", "directory": str(a.project)}
    ).json()
    assert EVERYWHERE in [r["text"] for r in asked["results"]]
