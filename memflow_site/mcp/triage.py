"""Settling a conflict found by `flymemory_find_conflicts`: the call REST's
`conflicts/{cluster}/settle/` and the dashboard's queue make, so a settled
cluster is gone from all three."""

from __future__ import annotations

from mcp.server.fastmcp import Context
from mcp.types import CallToolResult

from contexts.errors import NotFound
from contexts.tenancy.audit import Actor, Origin
from contexts.tenancy.selectors import Access
from memflow_site.mcp.runner import Answer, Call, run_tool, validated
from memories import rendering, services
from memories.api.memories import memory_json
from memories.api.triage import MAX_ID, SettleInput, cluster_id


async def conflict_settle(
    ctx: Context, memory_ids: list[int], decision: str, conclusion: str = "", keep: int = 0
) -> CallToolResult:
    """Settle conflicting memories: consolidate (with conclusion), supersede
    (keep: the id that stays), keep_both or dismiss. They stop being reported.
    """

    def body(call: Call) -> Answer:
        values = validated(
            SettleInput, {"decision": decision, "conclusion": conclusion, "keep": keep or None}
        ).validated_data
        ids = sorted(set(memory_ids))
        if any(not 1 <= i <= MAX_ID for i in ids):
            raise NotFound("No such memory in this workspace.", code="memory_not_found")
        held = services.memory_conflict_resolve(
            workspace=call.workspace,
            ids=ids,
            decision=values["decision"],
            conclusion=values["conclusion"],
            keep=values["keep"],
            actor=Actor(origin=Origin.MCP, user=call.user, key=call.caller.key),
        )
        text = f"[SETTLED {', '.join(f'#{i}' for i in ids)}: {values['decision']}]"
        if held is not None:
            text += f" #{held.pk} holds: {rendering.one_line(held.text, 80)}"
        data = {
            "cluster": cluster_id(ids),
            "ids": ids,
            "decision": values["decision"],
            "holds": memory_json(held) if held is not None else None,
        }
        return Answer(text, data)

    return await run_tool(ctx, body, access=Access.WRITE)


TOOLS = (conflict_settle,)
