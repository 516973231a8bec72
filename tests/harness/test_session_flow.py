"""A Claude Code session over time: resumed, compacted, and told how to reach memflow.

What the fake model received across `--continue`, `--resume` and `/compact`
(each memflow block and memory once; the session's opening context byte for
byte), what memflow kept (the compaction summary as a checkpoint), and that
the instructions memflow injects name only what the model can call — memflow's
MCP tools when they are installed, else a `memflow` command its shell runs —
with the session id those calls record a use under.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any

import pytest

from contexts.models import AgentSession, SessionEvent
from memories.models import InjectionEvent, Memory
from tests.harness.conftest import Account, HarnessMaker, Run, memflow_env
from tests.harness.fake_model import Logged, Reply, Text, ToolUse, strings, tool_results
from tests.harness.test_claude_code import rows_command
from tests.memflow_site.helpers import Served

pytestmark = pytest.mark.django_db(transaction=True)

FACT = "The billing worker retries failed charges 3 times, then pages on-call."
CORE = "Deploys need approval from #release"
START = "SessionStart hook additional context:"


def memory_ids(request: Logged) -> Counter[str]:
    """How often each memory id (`#12`) appears in what the model was sent."""
    return Counter(re.findall(r"#(\d+)\b", request.text()))


def assert_each_once(request: Logged) -> None:
    said = request.text()
    assert said.count("<memflow-protocol>") == 1, said
    assert said.count("<memflow-session ") == 1
    assert said.count(CORE) == 1
    ids = memory_ids(request)
    assert ids and max(ids.values()) == 1, ids


def succeeded(*runs: Run) -> None:
    for run in runs:
        assert run.result["subtype"] == "success", run.stderr


def seed(account: Account) -> dict[str, Any]:
    account.api.post("/core/memory/", json={"action": "add", "content": CORE}).raise_for_status()
    fact: dict[str, Any] = account.api.post("/memories/", json={"text": FACT}).json()
    return fact


def test_a_resumed_session_is_given_only_what_is_new(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    seed(account)
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()

    first = h.run("how does the billing worker handle failed charges?", [Text("3 retries.")])
    session_id = first.result["session_id"]
    again = h.run(
        "and whom does the billing worker page?", [Text("On-call.")], resume=("--continue",)
    )
    later = account.api.post(
        "/memories/", json={"text": "The billing worker pages the payments rotation in PagerDuty."}
    ).json()
    last = h.run(
        "the billing worker pages whom?", [Text("PagerDuty.")], resume=("--resume", session_id)
    )

    succeeded(first, again, last)
    assert {first.result["session_id"], again.result["session_id"]} == {session_id}
    requests = h.model.main_requests()
    # Twice resumed, the conversation holds memflow's protocol, session id and
    # core once, and no memory twice (the restore pack and the recall block
    # no longer repeat each other) ...
    assert_each_once(requests[-1])
    # ... and still gets what changed since: the fact written in between.
    assert f"#{later['id']}" in requests[-1].text()
    # The opening context is the same bytes in the last request as in the
    # first: the prompt cache's prefix survives the resumes.
    opening = [s for s in strings(requests[0].body) if START in s]
    assert opening and all(s in list(strings(requests[-1].body)) for s in opening)
    # memflow's log says why: each session start after the first had nothing new.
    session = AgentSession.objects.get(workspace=account.workspace, external_id=session_id)
    starts = SessionEvent.objects.filter(session=session, kind="session-start").count()
    answered = [
        e.payload["event"] for e in SessionEvent.objects.filter(session=session, kind="injection")
    ]
    assert starts == 3 and answered.count("session-start") >= 1
    given = SessionEvent.objects.filter(session=session, kind="injection").order_by("pk")
    resumed = [e for e in given if e.payload["event"] == "session-start"][1:]
    # A resume got, at most, the restore pack's new entries.
    assert all([b["name"] for b in e.payload["blocks"]] == ["memflow:restore"] for e in resumed)


def test_a_compaction_keeps_claude_codes_summary_as_a_checkpoint(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    seed(account)
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()
    summary = "The user asked how billing retries failed charges; the answer was three times."

    first = h.run("how does the billing worker handle failed charges?", [Text("3 retries.")])
    compacted = h.run(
        "/compact", [Text(f"<summary>{summary}</summary>")] * 8, resume=("--continue",)
    )
    after = h.run("so what did we conclude about billing?", [Text("3.")], resume=("--continue",))

    succeeded(first, compacted, after)
    assert compacted.of("system", "compact_boundary"), "Claude Code did not compact"
    session_id = first.result["session_id"]
    # memflow read Claude Code's summary from the transcript and kept it as
    # the session's `context` checkpoint.
    memories = account.api.get("/memories/?status=all&limit=50").json()["results"]
    checkpoints = [m for m in memories if m["compartment"] == "context"]
    assert [(m["text"], m["session"]) for m in checkpoints] == [(summary, session_id)]
    stored = Memory.objects.get(pk=checkpoints[0]["id"])
    assert stored.metadata["checkpoint"] == "compaction"
    # The compaction replaced the conversation, and with it memflow's blocks:
    # after it they are there once, with the summary once (the checkpoint is
    # not recalled back on top of it), and no memory twice.
    final = h.model.main_requests()[-1]
    assert final.text().count(summary) == 1
    assert_each_once(final)


def command_named(request: dict[str, Any], verb: str) -> str:
    """The `memflow <verb> …` command memflow's blocks told the model to run."""
    said = "\n".join(strings(request))
    found = re.search(rf"`([^`]*memflow {verb} [^`]*)`", said)
    assert found, f"no `memflow {verb}` command in what the model was sent"
    return found.group(1)


def test_without_mcp_the_model_is_told_a_command_its_shell_can_run(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    fact = seed(account)
    command, expected = rows_command(rows=100, width=190)  # projected, not cut by Claude Code
    shown = expected.rstrip(b"\n")  # as Claude Code showed it, and memflow kept it
    sha = hashlib.sha256(shown).hexdigest()
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()

    def get_fact(body: dict[str, Any]) -> ToolUse:
        return ToolUse(
            "Bash", {"command": command_named(body, "get").replace("'<id>'", str(fact["id"]))}
        )

    run = h.run(
        "list the rows",
        [
            ToolUse("Bash", {"command": command}),
            Reply(lambda body: ToolUse("Bash", {"command": command_named(body, "retrieve")})),
            Reply(get_fact),
            Text("Listed."),
        ],
    )

    succeeded(run)
    requests = h.model.main_requests()
    session_id = run.result["session_id"]
    said = requests[-1].text()
    # No REST path the model has no key for, no tool it does not have.
    assert "GET /api/v1" not in said and "mcp__memflow" not in said
    assert f"Your memflow session id is {session_id}." in said
    # The note's command, run by the model, printed the original byte for byte.
    assert f"retrieve {sha}` in your shell" in requests[1].text()
    retrieved = tool_results(requests[2].body)[-1]
    assert not retrieved.get("is_error"), retrieved
    assert result_text(retrieved) == shown.decode()
    # The protocol's `get`, run with the session id it names, reads the fact
    # and lands in the ledger under this session.
    got = result_text(tool_results(requests[3].body)[-1])
    assert FACT in got
    assert InjectionEvent.objects.filter(
        memory_id=fact["id"], kind="expanded", session__external_id=session_id
    ).exists()


def result_text(result: dict[str, Any]) -> str:
    content = result["content"]
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def test_with_mcp_the_model_is_told_memflows_tools_by_the_names_it_sees(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    fact = seed(account)
    command, expected = rows_command(rows=100, width=190)
    sha = hashlib.sha256(expected.rstrip(b"\n")).hexdigest()
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()
    h.add_mcp(f"{live.url}/mcp/?workspace={account.workspace.slug}&app=claude-code", account.key)

    def get_fact(body: dict[str, Any]) -> ToolUse:
        # The session id exactly as the session-start block says it.
        said = "\n".join(strings(body))
        session_id = re.search(r"Your memflow session id is (\S+)\.", said)
        assert session_id
        return ToolUse(
            "mcp__memflow__flymemory_get_memory",
            {"memory_id": fact["id"], "session_id": session_id.group(1)},
        )

    run = h.run(
        "list the rows",
        [ToolUse("Bash", {"command": command}), Reply(get_fact), Text("Listed.")],
        tools="Bash mcp__memflow",
    )

    succeeded(run)
    requests = h.model.main_requests()
    session_id = run.result["session_id"]
    said = requests[-1].text()
    assert "GET /api/v1" not in said and "memflow retrieve" not in said
    assert f'mcp__memflow__flowctx_retrieve(hash="{sha}")' in said
    # Every memflow tool memflow's blocks name is one Claude Code offers the model.
    blocks = MEMFLOW_BLOCK.findall(said)
    named = set(re.findall(r"mcp__memflow__\w+", "\n".join(m[0] for m in blocks)))
    offered = set(re.findall(r"mcp__memflow__\w+", MEMFLOW_BLOCK.sub("", said)))
    assert (
        {
            "mcp__memflow__flowctx_retrieve",
            "mcp__memflow__flymemory_recall_index",
            "mcp__memflow__flymemory_get_memory",
        }
        <= named
        <= offered
    )
    assert FACT in result_text(tool_results(requests[2].body)[-1])
    assert InjectionEvent.objects.filter(
        memory_id=fact["id"], kind="expanded", session__external_id=session_id
    ).exists()


# One of memflow's framed blocks in the request's text.
MEMFLOW_BLOCK = re.compile(r"(<(memflow-[\w-]+|working-context)\b.*?</\2>)", re.S)
