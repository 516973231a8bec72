"""Data the dashboard pages are tested against, built through the real services."""

from __future__ import annotations

from dataclasses import dataclass

from contexts.flowctx import services as flowctx_services
from contexts.models import AgentSession, CompressionRef, SessionEvent, SummaryNode, Workspace
from memories import services
from memories.models import Memory
from memories.services import RememberInput

SCRIPT = '<script>alert("pwned")</script>'
ESCAPED_SCRIPT = "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;"


def remember(workspace: Workspace, text: str, **kw: object) -> Memory:
    return services.memory_remember(
        workspace=workspace,
        item=RememberInput(text=text, **kw),  # type: ignore[arg-type]
    ).memory


@dataclass
class Story:
    session: AgentSession
    used: Memory
    unused: Memory
    ref: CompressionRef
    original: str


def session_story(workspace: Workspace, *, external_id: str = "sess-1") -> Story:
    """One session of every kind of event: a prompt, an injection of two memories
    (one then recalled), a shortened tool result, folded notes and a scratchpad.

    Agent-controlled text everywhere carries a `<script>`, which must come out inert.
    """
    used = remember(workspace, "The deploy script lives in ops/deploy.sh")
    unused = remember(workspace, f"Staging is flaky on Mondays {SCRIPT}")
    session = AgentSession.objects.create(
        workspace=workspace, external_id=external_id, app="claude-code", cwd="/src/app", turns=2
    )

    def event(kind: str, turn: int = 1, **payload: object) -> None:
        SessionEvent.objects.create(session=session, kind=kind, payload=payload, turn=turn)

    event("session-start", source="startup")
    event("user-prompt", prompt=f"Deploy it please {SCRIPT}")
    event(
        "injection",
        event="user-prompt",
        blocks=[
            {
                "name": "memflow:recall",
                "order": 100,
                "text": f"#{used.pk} | 1h | model | The deploy script lives in ops/deploy.sh\n"
                f"#{unused.pk} | 1h | model | Staging is flaky {SCRIPT}",
                "memory_ids": [used.pk, unused.pk],
                "sha256": "ab" * 32,
            },
            {"name": "context:identity", "order": 10, "text": "You are terse.", "memory_ids": []},
        ],
    )
    for memory in (used, unused):
        services.ledger_record(
            workspace=workspace, session=session, memory_ids=[memory.pk], kind="injected"
        )
    services.ledger_record(
        workspace=workspace, session=session, memory_ids=[used.pk], kind="recalled"
    )
    original = "\n".join(f"line {i}: PASSED test_{i} {SCRIPT}" for i in range(400))
    ref = flowctx_services.compression_store(
        workspace=workspace,
        content=original.encode(),
        tool_name="Bash",
        exit_code=0,
        session=session,
        budget_tokens=100,
    ).ref
    event("post-tool-use", tool_name="Bash", tool_input={"command": "pytest"}, turn=1)
    event("stop", last_assistant_message="Deployed.", turn=1)
    event("user-prompt", turn=2, prompt="Thanks")
    event("pre-compact", turn=2)
    event("session-end", turn=2)
    leaf1 = SummaryNode.objects.create(
        session=session, node_id="d0-1-1", depth=0, start_turn=1, end_turn=1,
        text=f"## Goal\nDeploy {SCRIPT}", builder="extractive", tokens=900,
    )  # fmt: skip
    leaf2 = SummaryNode.objects.create(
        session=session, node_id="d0-2-2", depth=0, start_turn=2, end_turn=2,
        text="## Goal\nSay thanks", builder="extractive", tokens=100,
    )  # fmt: skip
    top = SummaryNode.objects.create(
        session=session, node_id="d1-1-2", depth=1, start_turn=1, end_turn=2,
        text="## Goal\nDeployed and thanked", builder="llm", tokens=1000,
    )  # fmt: skip
    SummaryNode.objects.filter(pk__in=[leaf1.pk, leaf2.pk]).update(parent=top)
    flowctx_services.scratchpad_edit(session=session, op="rethink", text=f"todo: verify {SCRIPT}")
    return Story(session=session, used=used, unused=unused, ref=ref, original=original)
